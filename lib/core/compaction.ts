/**
 * Compaction's rules, pure: when the runtime compacts on its own, which events a compacted
 * transcript keeps verbatim (the window of recent model turns), which tool results are too large
 * to repeat (referenced by event instead), and how a model turn's transcript is compiled from a
 * compaction checkpoint: the instructions, the run's input, one user message carrying the
 * structured state (the reducer's state, the open requests, the references to the large tool
 * results left out), then the window of recent events compiled as usual. The engine reads the events and
 * the state and executes the compaction operation (lib/engine/compaction.ts).
 *
 * docs/contracts/run-lifecycle.md ("Checkpoints": "Compaction writes one too, so a long
 * conversation can be rebuilt from structured state rather than from a prose summary";
 * "Operations": compactions are replay-safe); docs/architecture.md, "The seams of a step" (the
 * context compiler and its manifest).
 */
import {
  type Checkpoint,
  type CompactionPolicy,
  CompactionPolicy as CompactionPolicySchema,
  type CompiledContext,
  type ContextMessage,
  DEFAULT_KEEP_TURNS,
  LARGE_RESULT_CHARS,
  LARGE_RESULT_WINDOW,
  type LargeResultRef,
  type RunEvent,
  ToolResultData,
} from '../contracts/index.ts';
import { canonicalJson } from './canonical.ts';
import { type CompileContextOptions, compileContext, toolResultContent } from './context-compiler.ts';

/**
 * The run's compaction policy from its executor_config (`compaction`), or null when it sets none
 * or an invalid one (create refuses an invalid one, so null then means "never on its own").
 */
export function compactionPolicyOf(executorConfig: Record<string, unknown>): CompactionPolicy | null {
  const raw = executorConfig.compaction;
  if (raw === undefined || raw === null) return null;
  const parsed = CompactionPolicySchema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}

/** The model turns a compacted transcript keeps verbatim under `policy`. */
export function keepTurnsOf(policy: CompactionPolicy | null): number {
  return policy?.keep_turns ?? DEFAULT_KEEP_TURNS;
}

/**
 * Estimated tokens of a model input: one token per 4 characters of the messages' text (content,
 * tool names, tool call arguments as JSON), rounded up. An estimate for deciding, not billing:
 * the provider's usage.input_tokens is what a run is charged.
 */
export function estimateTokens(messages: readonly ContextMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += m.role === 'assistant' ? (m.content ?? '').length : m.content.length;
    if (m.role === 'tool') chars += m.name.length;
    if (m.role === 'assistant')
      for (const call of m.tool_calls) chars += call.name.length + JSON.stringify(call.args).length;
  }
  return Math.ceil(chars / 4);
}

/** A compaction's plan: the window kept and what is left out. */
export interface CompactionPlan {
  /** First seq kept verbatim: the k-th last model turn before `to_seq`. */
  window_from_seq: number;
  /** Events 2 .. window_from_seq - 1 (run_started, seq 1, is always kept) and the messages they were. */
  omitted: { from_seq: number; to_seq: number; messages: number };
}

/**
 * What a compaction keeps of `events` for a model turn whose transcript ends at `toSeq`: the
 * last `keepTurns` model turns (from the seq of the first of them) verbatim. Null when the
 * transcript has no more than `keepTurns` turns (there is nothing to leave out).
 */
export function planCompaction(
  events: readonly RunEvent[],
  keepTurns: number,
  toSeq: number = Number.POSITIVE_INFINITY,
): CompactionPlan | null {
  const inRange = events.filter((e) => e.seq <= toSeq).sort((a, b) => a.seq - b.seq);
  const turns = inRange.filter((e) => e.kind === 'model_turn_completed').map((e) => e.seq);
  if (turns.length <= keepTurns) return null;
  const windowFrom = turns[turns.length - keepTurns] as number;
  const omittedEvents = inRange.filter((e) => e.seq >= 2 && e.seq < windowFrom);
  const messages = compileContext(omittedEvents, { from_seq: 2 }).messages.length;
  return { window_from_seq: windowFrom, omitted: { from_seq: 2, to_seq: windowFrom - 1, messages } };
}

/** The reference to `event` when it is a tool result whose model-visible text is large, else null. */
export function largeResultOf(event: RunEvent): LargeResultRef | null {
  if (event.kind !== 'tool_result') return null;
  const parsed = ToolResultData.safeParse(event.data);
  if (!parsed.success || parsed.data.envelope.status === 'waiting') return null;
  const chars = toolResultContent(parsed.data.envelope).length;
  if (chars < LARGE_RESULT_CHARS) return null;
  return {
    seq: event.seq,
    ...(parsed.data.call_id !== undefined ? { call_id: parsed.data.call_id } : {}),
    tool: parsed.data.tool,
    chars,
  };
}

/** `window` with the large tool results among `events` appended, keeping the last LARGE_RESULT_WINDOW. */
export function noteLargeResults(
  window: readonly LargeResultRef[] | undefined,
  events: readonly RunEvent[],
): LargeResultRef[] | undefined {
  const found = events.flatMap((e) => {
    const ref = largeResultOf(e);
    return ref === null ? [] : [ref];
  });
  if (found.length === 0) return window === undefined ? undefined : [...window];
  return [...(window ?? []), ...found].slice(-LARGE_RESULT_WINDOW);
}

/** What a transcript compiled from a compaction checkpoint is made of (read by the engine). */
export interface CompactedParts {
  /** The run holding the checkpoint (the run itself, or a fork's origin). */
  run_id: string;
  checkpoint: Pick<Checkpoint, 'n' | 'core' | 'compaction' | 'large_results'>;
  /** The domain state the checkpoint references. */
  state: unknown;
  /** The run's run_started event (seq 1), kept first; undefined when the window starts later. */
  run_started: RunEvent | undefined;
  /** The events from the checkpoint's window_from_seq on. */
  window: readonly RunEvent[];
}

/**
 * The user message that stands for the omitted events: a line saying what was compacted, then
 * canonical JSON of `{checkpoint, state, open_requests, large_tool_results, omitted}`. Open
 * requests are shown as `{kind, request_id, question?, summary?}`.
 */
export function structuredStateMessage(parts: CompactedParts): ContextMessage {
  const section = parts.checkpoint.compaction;
  const openRequests = Array.isArray(parts.checkpoint.core.open_requests)
    ? (parts.checkpoint.core.open_requests as Record<string, unknown>[]).map((r) => ({
        kind: r.kind,
        request_id: r.request_id,
        ...(typeof r.question === 'string' ? { question: r.question } : {}),
        ...(typeof (r.subject as { summary?: unknown } | undefined)?.summary === 'string'
          ? { summary: (r.subject as { summary: string }).summary }
          : {}),
      }))
    : [];
  const omitted = section?.omitted ?? { from_seq: 2, to_seq: 1, messages: 0 };
  const body = {
    checkpoint: parts.checkpoint.n,
    state: parts.state ?? null,
    open_requests: openRequests,
    // Only those left out: a large result inside the window is in the transcript itself.
    large_tool_results: (parts.checkpoint.large_results ?? []).filter((r) => r.seq <= omitted.to_seq),
    omitted,
  };
  const head =
    `[compacted] Events ${omitted.from_seq} to ${omitted.to_seq} of this run (${omitted.messages} messages) ` +
    `are not repeated. The run's structured state when they were compacted (checkpoint ${parts.checkpoint.n}):`;
  return { role: 'user', content: `${head}\n${canonicalJson(body)}` };
}

/**
 * Compiles a model turn's transcript from a compaction checkpoint: the system instructions,
 * the run's input (run_started), the structured state message, then the window of events
 * compiled by the context compiler with the turn's `to_seq` and answers. The manifest lists the
 * included events and `compacted: {run_id, checkpoint_no, window_from_seq}`. Throws
 * ContextCompileError on a malformed relevant event, like compileContext.
 */
export function compileCompacted(
  parts: CompactedParts,
  opts: Pick<CompileContextOptions, 'instructions' | 'to_seq' | 'answers'>,
): CompiledContext {
  const windowFrom = parts.checkpoint.compaction?.window_from_seq ?? 1;
  const events = [...(parts.run_started !== undefined ? [parts.run_started] : []), ...parts.window];
  const compiled = compileContext(events, { ...opts, from_seq: 1 });
  const messages = [...compiled.messages];
  // After the system message and the run's input (when they are there).
  let at = opts.instructions !== undefined ? 1 : 0;
  if (compiled.manifest.included[0]?.seq === 1) at += 1;
  messages.splice(at, 0, structuredStateMessage(parts));
  return {
    messages,
    manifest: {
      ...compiled.manifest,
      compacted: { run_id: parts.run_id, checkpoint_no: parts.checkpoint.n, window_from_seq: windowFrom },
    },
  };
}

/**
 * Whether the runtime compacts on its own before a model turn: the policy sets
 * `max_input_tokens`, the turn's input as it would be compiled is estimated above it, and a
 * model turn completed since the run's latest compaction (`lastTurnSeq` > its cutoff), so that a
 * compaction that could not shrink the input enough is not repeated before every turn.
 */
export function compactionDue(
  policy: CompactionPolicy | null,
  estimatedTokens: number,
  latestCutoffSeq: number | undefined,
  lastTurnSeq: number,
): boolean {
  if (policy?.max_input_tokens === undefined) return false;
  if (estimatedTokens <= policy.max_input_tokens) return false;
  return latestCutoffSeq === undefined || lastTurnSeq > latestCutoffSeq;
}
