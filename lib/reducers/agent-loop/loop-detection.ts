/**
 * Loop detection: the same call (name + canonical args) `loop_limit` times in a row is not
 * executed (user input resets the streak). In a conversation the user is asked how to go on; in
 * a task the reducer records a capability gap and completes blocked.
 */
import { canonical, clip } from './json.ts';
import { askUser, complete } from './operations.ts';
import { emit, type Reduction } from './response.ts';
import type { AgentLoopCall, AgentLoopState } from './state.ts';
import { answer, MAX_NOTE_CHARS, skipRemaining } from './turn.ts';

/** Counts `call` into the streak of identical calls; true when it reaches the loop limit. */
export function countRepeat(state: AgentLoopState, call: AgentLoopCall): boolean {
  const key = fingerprint(call.name, call.args);
  if (state.streak.key === key) state.streak.count += 1;
  else state.streak = { key, count: 1 };
  return state.streak.count >= state.loop_limit;
}

/** Answers the looping call and the rest of its turn not_executed, then asks or ends the run. */
export function loopDetected(ctx: Reduction, call: AgentLoopCall): void {
  const state = ctx.state;
  const times = state.streak.count;
  state.counters.loops += 1;
  answer(
    call,
    'not_executed',
    `Not executed: ${call.name} was requested with the same arguments ${times} times in a row, which looks like a loop. Do not repeat it; change the approach or ask the user.`,
  );
  if (state.turn !== null) state.turn.next += 1;
  skipRemaining(state, 'Not executed: an earlier call of this turn was stopped by loop detection.');
  state.streak = { key: '', count: 0 };
  const why = `the same call to ${call.name} (same arguments) was requested ${times} times in a row without progress`;
  if (state.mode === 'conversation') {
    askUser(ctx, `I seem to be going in circles: ${why}. How would you like me to continue?`);
    return;
  }
  emit(ctx, {
    kind: 'capability_gap',
    gap: {
      requested_outcome:
        state.objective !== undefined ? clip(state.objective, MAX_NOTE_CHARS) : 'the task of this run',
      missing: 'progress: repeating the same tool call returns nothing new',
      inspected: { tool: call.name, repeated: times, model_turns: state.counters.model_turns },
      why_insufficient: why,
      proposed: {
        layer: 'instructions',
        description:
          'Give the agent the missing information or a tool that can make progress, then run the task again.',
      },
    },
  });
  complete(ctx, 'blocked', `Stopped: ${why}.`);
}

/** A 64-bit fingerprint (two 32-bit FNV-1a/murmur-mixed lanes, hex) of a call's name and canonical args. */
export function fingerprint(name: string, args: unknown): string {
  const text = canonical({ args: args === undefined ? null : args, name });
  let h1 = 0x811c9dc5;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ code, 0x01000193);
    h2 = Math.imul(h2 ^ code, 0x5bd1e995);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b) ^ Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x85ebca6b) ^ Math.imul(h1 ^ (h1 >>> 13), 0xc2b2ae35);
  return hex32(h1) + hex32(h2);
}

function hex32(value: number): string {
  return `00000000${(value >>> 0).toString(16)}`.slice(-8);
}
