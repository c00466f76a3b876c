/**
 * The compaction operation in the run machine: a pending model turn preceded by a compaction
 * (asked for by the reducer's checkpoint effect of reason `compaction`, or decided by the
 * runtime), and the compaction's end: a checkpoint of reason `compaction` that the next model
 * turns are compiled from, and the model turn pending again under a new op id. The reducer sees
 * nothing of it: no reducer-visible event is written. docs/contracts/run-lifecycle.md, "Operations"
 * (a compaction is one of the operations; replay-safe), "Checkpoints".
 */
import type { Operation, RunRecord } from '../../contracts/index.ts';
import type { CompactionPlan } from '../compaction.ts';
import { append, type Draft, ev, finish, prepend, reject, seal, type TransitionResult } from './draft.ts';
import { type Fence, holdsLease } from './lease.ts';
import { pauseRun } from './lifecycle.ts';

/** What executing a compaction produced (the engine's result for the operation). */
export interface CompactionResult {
  kind: 'compaction_completed';
  plan: CompactionPlan;
  /** Estimated input tokens of the turn's transcript compiled in full, and from the checkpoint. */
  tokens_before: number;
  tokens_after: number;
}

/** The compaction operation that precedes the pending model turn `op` (same op id and effect). */
function compactionOf(op: Operation): Operation {
  return { ...op, kind: 'compaction', replay_safe: true, interruptible: true };
}

/**
 * `draft` with a requested compaction placed before its pending model turn, when there is one
 * (the request stays on the draft otherwise, for the next model turn).
 */
export function placeRequestedCompaction(draft: Draft): Draft {
  const op = draft.operation;
  if (draft.compaction_requested !== true || op === null || op.started_at !== null) return draft;
  if (op.kind !== 'model_turn') return draft;
  return { ...draft, operation: compactionOf(op), compaction_requested: undefined } as Draft;
}

/**
 * The runtime decided to compact: the pending model turn of `record` is preceded by a
 * compaction. Rejected (`no_model_turn`) unless a model turn is pending.
 */
export function beginCompaction(record: RunRecord): TransitionResult {
  const op = record.operation;
  if (op === null || op.started_at !== null || op.kind !== 'model_turn') {
    return reject('no_model_turn', 'no pending model turn to compact before');
  }
  return finish({ ...record, operation: compactionOf(op), compaction_requested: undefined } as Draft, []);
}

/**
 * Records the end of the started compaction: usage counts one operation, a checkpoint of
 * reason `compaction` is written (checkpoint_written carrying the compaction section), the
 * record references it (`compaction`: the next model turns are compiled from it), and the model
 * turn the compaction preceded is pending again as op `next_op + 1`. A pause asked for meanwhile
 * is applied now. Rejected lease_lost / no_operation like finishOperation; a cancelling run is
 * finishOperation's (it stops).
 */
export function finishCompaction(
  record: RunRecord,
  fence: Fence,
  result: CompactionResult,
  now: number,
): TransitionResult {
  const op = record.operation;
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  if (op === null || op.started_at === null || op.kind !== 'compaction') {
    return reject('no_operation', 'no compaction in flight');
  }
  const n = record.counters.checkpoints + 1;
  const nextOp = record.counters.next_op + 1;
  const modelTurn: Operation = {
    ...op,
    kind: 'model_turn',
    op_id: `${record.run_id}/op/${nextOp}`,
    attempt: 1,
    started_at: null,
  };
  const draft = {
    ...record,
    operation: modelTurn,
    usage: { ...record.usage, operations: record.usage.operations + 1 },
    counters: { ...record.counters, checkpoints: n, next_op: nextOp, consecutive_op_failures: 0 },
    compaction_requested: undefined,
  } as Draft;
  const written = ev(
    'checkpoint_written',
    now,
    {
      checkpoint_no: n,
      reason: 'compaction',
      state_rev: record.state_rev,
      compaction: {
        window_from_seq: result.plan.window_from_seq,
        omitted: result.plan.omitted,
        tokens_before: result.tokens_before,
        tokens_after: result.tokens_after,
      },
    },
    { operation_id: op.op_id, effect_id: op.effect_id },
  );
  const appended = append(draft, [written], now);
  const cutoff = appended.events[0]?.seq ?? record.last_seq + 1;
  const referenced = {
    ...appended.draft,
    compaction: {
      run_id: record.run_id,
      checkpoint_no: n,
      window_from_seq: result.plan.window_from_seq,
      transcript_cutoff_seq: cutoff,
    },
  } as Draft;
  if (record.pause_requested !== undefined) {
    return prepend(appended.events, pauseRun(seal(referenced), record.pause_requested, now));
  }
  return finish(referenced, appended.events);
}
