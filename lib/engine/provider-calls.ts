/**
 * Counting a model turn's retry (a provider request after its dispatch's first, which its start
 * commit stands for) before it is made: the worker that holds the lease
 * commits core's `noteProviderCall` (usage.model_calls + 1, the operation's provider_calls + 1)
 * with its fence, so that a takeover sees the request and continues the turn's retry budget.
 * One small commit per retry; a control that committed meanwhile is read and the
 * count decided again. docs/contracts/run-lifecycle.md, "Budgets".
 */
import type { RunRecord } from '../contracts/index.ts';
import {
  type Fence,
  leaseNamedBy,
  noteProviderCall,
  noteProviderFailure,
  type TransitionResult,
} from '../core/run-machine.ts';
import { readDecideCommit } from './commit-loop.ts';
import type { EngineContext } from './deps.ts';
import type { DispatchHooks } from './dispatch.ts';
import { LeaseLost } from './errors.ts';
import { CommitRejected } from './ports.ts';

/**
 * Commits one provider request of the in-flight model turn of `base`'s run, read again after a
 * stale version. Returns the stored record. Throws LeaseLost when the lease is no longer
 * `fence`'s (the request must not be made), EngineError store_unavailable when the run stays
 * contended (retryable), and what the store throws.
 */
export async function commitProviderCall(
  ctx: EngineContext,
  base: RunRecord,
  fence: Fence,
  note: (record: RunRecord, fence: Fence, now: number) => TransitionResult = noteProviderCall,
): Promise<RunRecord> {
  let first = true;
  const stored = await readDecideCommit<RunRecord | null, RunRecord>(ctx, {
    runId: base.run_id,
    // The worker's last commit first; after a stale version, the run as stored.
    read: async () => {
      if (!first) return ctx.store.getRun(base.run_id);
      first = false;
      return base;
    },
    decide: (record) => {
      if (record === null || !leaseNamedBy(record, fence)) throw new LeaseLost('fenced out');
      const noted = note(record, fence, ctx.clock.now());
      if (!noted.ok) throw new LeaseLost(`the provider call cannot be counted: ${noted.code}`);
      const commit = { record: noted.record, expectedVersion: record.version, fence, events: [] };
      return { commit, after: (s: RunRecord) => s };
    },
  }).catch((err: unknown) => {
    if (err instanceof CommitRejected && err.code === 'fenced_out') throw new LeaseLost('fenced out');
    throw err;
  });
  ctx.records.remember(stored);
  return stored;
}

/** The step worker's view for counting: its context, fence and last committed (= staged) record. */
export interface CountingWorker {
  readonly ctx: EngineContext;
  readonly fence: Fence;
  base: RunRecord;
  staged: RunRecord;
}

/**
 * Counts one provider request of `worker`'s in-flight model turn (commitProviderCall) and takes
 * the stored record as its base, as a heartbeat does. Should a heartbeat's commit interleave, the
 * loser re-reads (here) or skips a beat (the heartbeat); the worker's result commit rebases.
 */
export async function countProviderCall(worker: CountingWorker): Promise<void> {
  const stored = await commitProviderCall(worker.ctx, worker.base, worker.fence);
  worker.base = stored;
  worker.staged = stored;
}

/**
 * Notes a retryable failure answer of `worker`'s in-flight model turn (core noteProviderFailure)
 * in a fenced commit, as countProviderCall counts a request: the turn's retry budget, continued by
 * a takeover, is what failed.
 */
export async function noteFailedCall(worker: CountingWorker): Promise<void> {
  const stored = await commitProviderCall(worker.ctx, worker.base, worker.fence, noteProviderFailure);
  worker.base = stored;
  worker.staged = stored;
}

/**
 * The dispatch hooks of `worker`'s operation: each retry of a model turn counted
 * (countProviderCall) before it is made, each retryable failure noted (noteFailedCall) as it comes.
 */
export function providerCallHooks(worker: CountingWorker): DispatchHooks {
  return {
    beforeModelCall: () => countProviderCall(worker),
    afterModelFailure: () => noteFailedCall(worker),
  };
}
