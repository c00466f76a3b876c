/**
 * The no-progress guard (context.no_progress_turns = N; off unless set). Progress is a new
 * succeeded tool result (one whose tool and payload differ from the last 32 seen), a plan item
 * newly completed, or an answer from the user (an answered question, a decided approval, a
 * steer). Each completed model turn counts as idle when no progress came since the turn before
 * (the run's start counts as progress). When the idle count reaches N on a turn that asks for
 * tools, its calls are answered not_executed and the run ends: capability_gap, then
 * complete{blocked}. docs/contracts/reducer.md ("capability_gap ... must be followed by
 * complete{blocked} or ask_user").
 */
import { canonical, clip } from './json.ts';
import { fingerprint } from './loop-detection.ts';
import { complete } from './operations.ts';
import { emit, type Reduction } from './response.ts';
import type { AgentLoopProgress, AgentLoopState } from './state.ts';
import { MAX_NOTE_CHARS, skipRemaining } from './turn.ts';

const MAX_SEEN = 32;

export function progressOf(limit: number | undefined): AgentLoopProgress | undefined {
  return limit === undefined ? undefined : { limit, idle_turns: 0, progressed: true, seen: [] };
}

/** Something new from the user (an answer, a decision, a steer) counts as progress. */
export function noteUserProgress(state: AgentLoopState): void {
  if (state.progress !== undefined) state.progress.progressed = true;
}

/** A succeeded tool result is progress when its tool and payload were not seen lately. */
export function noteToolResult(state: AgentLoopState, tool: string, status: string, payload: unknown): void {
  const progress = state.progress;
  if (progress === undefined || status !== 'succeeded') return;
  const key = fingerprint(tool, canonical(payload === undefined ? null : payload));
  if (progress.seen.includes(key)) return;
  progress.seen.push(key);
  if (progress.seen.length > MAX_SEEN) progress.seen.shift();
  progress.progressed = true;
}

/**
 * Counts a completed model turn (its calls already in state.turn). Returns true when the guard
 * ended the run: the turn asked for tools after N idle turns.
 */
export function countTurn(ctx: Reduction, asksForTools: boolean): boolean {
  const state = ctx.state;
  const progress = state.progress;
  if (progress === undefined) return false;
  progress.idle_turns = progress.progressed ? 0 : progress.idle_turns + 1;
  progress.progressed = false;
  if (!asksForTools || progress.idle_turns < progress.limit) return false;
  skipRemaining(state, 'Not executed: the run was stopped for lack of progress.');
  const why = `${progress.idle_turns} model turn(s) in a row brought no new tool result, no plan item done and no answer from the user (the limit is ${progress.limit})`;
  const plan = state.plan;
  emit(ctx, {
    kind: 'capability_gap',
    gap: {
      requested_outcome:
        state.objective !== undefined ? clip(state.objective, MAX_NOTE_CHARS) : 'the task of this run',
      missing: 'progress: the agent keeps working without new results',
      inspected: {
        model_turns: state.counters.model_turns,
        tool_calls: state.counters.tool_calls,
        idle_turns: progress.idle_turns,
        ...(plan !== undefined && {
          plan_done: plan.items.filter((i) => i.status === 'completed').length,
          plan_items: plan.items.length,
        }),
      },
      why_insufficient: why,
      proposed: {
        layer: 'instructions',
        description:
          'Give the agent the missing information, a tool that can make progress, or a smaller task, then run it again.',
      },
    },
  });
  complete(ctx, 'blocked', `Stopped: ${why}.`);
  return true;
}
