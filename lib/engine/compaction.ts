/**
 * Compaction in the engine: compiling a model turn's transcript (from the run's latest
 * compaction checkpoint when it covers the turn's window, else from the log), executing a
 * compaction operation (reading the log and the state, letting core plan it), and the runtime's
 * own decision to compact before a model turn whose input would pass the run's
 * `executor_config.compaction.max_input_tokens`. The rules are core's (lib/core/compaction.ts).
 * docs/contracts/run-lifecycle.md, "Operations", "Checkpoints"; docs/architecture.md, "The seams of
 * a step" (the context compiler).
 */
import type {
  CompiledContext,
  Operation,
  RequestModelTurnEffect,
  RunEvent,
  RunRecord,
} from '../contracts/index.ts';
import {
  compactionDue,
  compactionPolicyOf,
  compileCompacted,
  estimateTokens,
  keepTurnsOf,
  planCompaction,
} from '../core/compaction.ts';
import { compileContext, type ToolCallAnswer } from '../core/context-compiler.ts';
import type { CompactionResult } from '../core/run-machine.ts';
import type { EngineDeps } from './deps.ts';

/** Where an operation reads the run's log and its domain state (a worker's caches, or the store). */
export interface OperationReads {
  /** The run's events from `fromSeq` to `toSeq` (default: its last seq), in order. */
  eventsFrom(fromSeq: number, toSeq?: number): Promise<RunEvent[]>;
  /** The run's domain state of revision `rev`. */
  state(rev: number): Promise<unknown>;
}

type ModelTurnEffect = Omit<RequestModelTurnEffect, 'interruptible'>;

/**
 * The transcript window a model-turn effect asks for (`context.transcript.{from_seq,to_seq}`):
 * events after to_seq (e.g. steers consumed since the reducer asked) wait for the next turn.
 */
export function transcriptWindow(effect: ModelTurnEffect): { fromSeq: number; toSeq?: number } {
  const context = (effect.context ?? {}) as { transcript?: { from_seq?: unknown; to_seq?: unknown } };
  const from = context.transcript?.from_seq;
  const to = context.transcript?.to_seq;
  return { fromSeq: typeof from === 'number' ? from : 1, ...(typeof to === 'number' ? { toSeq: to } : {}) };
}

/** Calls the reducer answered itself (no tool_result event): their model-visible `content`. */
export function answersOf(effect: ModelTurnEffect): ToolCallAnswer[] {
  return (effect.tool_results ?? []).flatMap((r) =>
    typeof r.content === 'string'
      ? [{ call_id: r.call_id, ...(typeof r.name === 'string' ? { name: r.name } : {}), content: r.content }]
      : [],
  );
}

/**
 * The transcript of the model turn `effect` asks for on `record`: compiled from the run's
 * latest compaction checkpoint (its structured state, then the window of recent events) when
 * the compaction cuts into the turn's window, else from the log. A compaction whose checkpoint
 * cannot be found is skipped (the log is complete). Throws ContextCompileError on a corrupt log.
 */
export async function compileTurnContext(
  deps: EngineDeps,
  record: RunRecord,
  effect: ModelTurnEffect,
  reads: OperationReads,
): Promise<CompiledContext> {
  const { fromSeq, toSeq } = transcriptWindow(effect);
  const opts = {
    instructions: effect.instructions,
    ...(toSeq !== undefined ? { to_seq: toSeq } : {}),
    answers: answersOf(effect),
  };
  const c = record.compaction;
  if (c !== undefined && c.window_from_seq > fromSeq) {
    const checkpoint = await deps.store.getCheckpoint(c.run_id, c.checkpoint_no);
    if (checkpoint !== null) {
      const state = await deps.store.getState(c.run_id, checkpoint.state_rev, checkpoint.state_at);
      const window = await reads.eventsFrom(c.window_from_seq);
      const runStarted = fromSeq <= 1 ? (await reads.eventsFrom(1, 1))[0] : undefined;
      return compileCompacted({ run_id: c.run_id, checkpoint, state, run_started: runStarted, window }, opts);
    }
  }
  return compileContext(await reads.eventsFrom(fromSeq), { ...opts, from_seq: fromSeq });
}

/**
 * Executes the compaction operation `op` of `record` (it precedes the model turn of its
 * effect): plans the window over the log up to the turn's cutoff (so a compaction dispatched
 * again after a takeover plans the same), and estimates the turn's input tokens compiled as it
 * stands and from the checkpoint the compaction will write. A transcript with no more model
 * turns than the window keeps is left whole (window_from_seq 1: nothing omitted).
 */
export async function executeCompaction(
  deps: EngineDeps,
  record: RunRecord,
  op: Operation,
  reads: OperationReads,
): Promise<CompactionResult> {
  const effect = op.effect;
  if (effect.kind !== 'request_model_turn') throw new Error('a compaction precedes a model turn');
  const { toSeq } = transcriptWindow(effect);
  const events = await reads.eventsFrom(1);
  const before = estimateTokens((await compileTurnContext(deps, record, effect, reads)).messages);
  const plan = planCompaction(events, keepTurnsOf(compactionPolicyOf(record.executor_config)), toSeq) ?? {
    window_from_seq: 1,
    omitted: { from_seq: 2, to_seq: 1, messages: 0 },
  };
  if (plan.window_from_seq <= 1)
    return { kind: 'compaction_completed', plan, tokens_before: before, tokens_after: before };
  const after = compileCompacted(
    {
      run_id: record.run_id,
      checkpoint: {
        n: record.counters.checkpoints + 1,
        core: { open_requests: record.open_requests },
        compaction: { ...plan, tokens_before: before, tokens_after: 0 },
        ...(record.large_results !== undefined ? { large_results: record.large_results } : {}),
      },
      state: await reads.state(record.state_rev),
      run_started: events.find((e) => e.seq === 1),
      window: events.filter((e) => e.seq >= plan.window_from_seq),
    },
    {
      instructions: effect.instructions,
      ...(toSeq !== undefined ? { to_seq: toSeq } : {}),
      answers: answersOf(effect),
    },
  );
  return {
    kind: 'compaction_completed',
    plan,
    tokens_before: before,
    tokens_after: estimateTokens(after.messages),
  };
}

/**
 * The runtime's own decision before starting the pending model turn of `record`: true when a
 * compaction should precede it (core's `beginCompaction`), that is when core's `compactionDue`
 * holds for the turn's input as it would be compiled and the log has more model turns than the
 * window keeps; false otherwise (no policy, below the limit, nothing to leave out, no pending
 * model turn).
 */
export async function compactionCheck(
  deps: EngineDeps,
  record: RunRecord,
  reads: OperationReads,
): Promise<boolean> {
  const op = record.operation;
  if (op === null || op.started_at !== null || op.kind !== 'model_turn') return false;
  if (op.effect.kind !== 'request_model_turn') return false;
  const policy = compactionPolicyOf(record.executor_config);
  if (policy?.max_input_tokens === undefined) return false;
  const compiled = await compileTurnContext(deps, record, op.effect, reads);
  const turns = compiled.manifest.included.filter((i) => i.kind === 'model_turn_completed');
  const lastTurnSeq = turns.at(-1)?.seq ?? 0;
  const tokens = estimateTokens(compiled.messages);
  if (!compactionDue(policy, tokens, record.compaction?.transcript_cutoff_seq, lastTurnSeq)) return false;
  const plan = planCompaction(
    await reads.eventsFrom(1),
    keepTurnsOf(policy),
    transcriptWindow(op.effect).toSeq,
  );
  return plan !== null && plan.window_from_seq > (record.compaction?.window_from_seq ?? 1);
}
