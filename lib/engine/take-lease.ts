/**
 * How a step takes the run's lease, with no read or write a step does not need: the lease is
 * staged here and committed with the step's first commit (step-worker.ts), so a step that ends
 * one operation and starts the next, or rests again, is one write from its first move.
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
import { randomUUID } from 'node:crypto';
import { isTerminalStatus, type RunRecord } from '../contracts/index.ts';
import { acquireLease, hasWork, heldByDeadPredecessor, takeOverPredecessor } from '../core/run-machine.ts';
import { deliverAfterEnd } from './after-end.ts';
import { commitOf, commitRun, type EngineContext, wake } from './deps.ts';
import { CommitRejected, SWEEP_SHARDS } from './ports.ts';

/** What a step ends with when it cannot take the lease. */
export type NoLease = { kind: 'not_found' } | { kind: 'nothing_to_do'; status: string } | { kind: 'busy' };

/**
 * A lease staged on a committed record, not written yet: `read` is the committed record (its
 * version is the first commit's expected version), `acquired` the record under the new lease.
 * `guessed`: `read` is the record this process committed last (ctx.records), not read now.
 */
export interface StagedLease {
  read: RunRecord;
  acquired: RunRecord;
  guessed: boolean;
}

/**
 * Stages the run's lease on `known` (a record a refused first commit carried), else on the
 * record this process committed last (ctx.records), else on the stored record. A guess on which
 * the lease cannot be taken is checked against the store before giving up; a guess that is out
 * of date costs nothing more: the step's first commit is refused `stale_version` with the
 * current record, and the step starts again from it (LeaseRace).
 */
export async function stageLease(
  ctx: EngineContext,
  runId: string,
  known?: RunRecord,
): Promise<StagedLease | NoLease> {
  const owner = `${ctx.workerId}/${randomUUID().slice(0, 8)}`;
  const cached = known ?? ctx.records.get(runId);
  let guessed = known === undefined && cached !== undefined && !isTerminalStatus(cached.status);
  let first = known ?? (guessed ? (cached as RunRecord) : await ctx.store.getRun(runId));
  for (;;) {
    if (first === null) return { kind: 'not_found' };
    if (isTerminalStatus(first.status)) {
      if (first.inbox.length > 0 && first.reducer !== null) await deliverAfterEnd(ctx, first);
      return { kind: 'nothing_to_do', status: first.status };
    }
    const acquired = acquireLease(first, owner, ctx.clock.now(), ctx.leaseTtlMs);
    if (acquired.ok) return { read: first, acquired: acquired.record, guessed };
    if (guessed) {
      guessed = false;
      first = await ctx.store.getRun(runId);
      continue;
    }
    if (acquired.code !== 'lease_held') return { kind: 'nothing_to_do', status: first.status };
    // Held by a dead earlier process of this worker's slot: taken over now, not waited out.
    const predecessor = await takeOverDeadPredecessor(ctx, first);
    if (predecessor === null) return { kind: 'busy' };
    first = predecessor;
  }
}

/**
 * The step's first commit, the one that writes its staged lease, was refused `stale_version`:
 * the run changed since it was read (a control, another worker, or an out-of-date guess).
 * Nothing was written and nothing was dispatched: the step starts again from `current`.
 */
export class LeaseRace extends Error {
  override name = 'LeaseRace';
  readonly current: RunRecord | null;
  constructor(current: RunRecord | null) {
    super('the run changed before the step could take its lease');
    this.current = current;
  }
}

/**
 * Takes over `record`'s lease when an earlier process of this worker's slot held it (core
 * takeOverPredecessor: epoch + 1, a started operation that is not replay-safe ends
 * outcome_unknown), committed on its own; the stored record, or null when the lease is anyone
 * else's or the commit lost a race (the lease is then someone's: busy).
 */
export async function takeOverDeadPredecessor(
  ctx: EngineContext,
  record: RunRecord,
): Promise<RunRecord | null> {
  const self = ctx.incarnation;
  if (self === null || !heldByDeadPredecessor(record, self)) return null;
  const taken = takeOverPredecessor(record, self, ctx.clock.now());
  if (!taken.ok) return null;
  try {
    const stored = await commitRun(ctx, commitOf(taken, record.version));
    ctx.log({
      level: 'info',
      message: "lease of this slot's dead predecessor taken over",
      run_id: record.run_id,
      previous_owner: record.lease?.owner,
      epoch: stored.epoch,
    });
    return stored;
  } catch (err) {
    if (err instanceof CommitRejected && (err.code === 'stale_version' || err.code === 'fenced_out'))
      return null;
    throw err;
  }
}

/** What a restarted slotted worker found of its dead predecessors' runs. */
export interface PredecessorReport {
  examined: number;
  taken_over: number;
}

/**
 * At a slotted worker's start: takes over every run an earlier process of its slot still holds
 * (lease unexpired, found through the sweep index up to one lease ahead, at most `limit` per
 * shard) and sends each one with work its step message, so that a killed and restarted worker
 * goes on with its runs at once instead of after the lease, the skew allowance and a sweep.
 * Does nothing without a slot. Never throws for one run's failure (logged; the sweeper still
 * recovers it); throws when the sweep index cannot be queried.
 */
export async function recoverPredecessors(ctx: EngineContext, limit = 200): Promise<PredecessorReport> {
  const report: PredecessorReport = { examined: 0, taken_over: 0 };
  if (ctx.incarnation === null) return report;
  const horizon = ctx.clock.now() + ctx.leaseTtlMs + ctx.clockSkewMs;
  for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
    for (const runId of await ctx.store.sweepCandidates(shard, horizon, limit)) {
      report.examined += 1;
      try {
        const record = await ctx.store.getRun(runId);
        const stored = record === null ? null : await takeOverDeadPredecessor(ctx, record);
        if (stored === null) continue;
        report.taken_over += 1;
        if (stored.status === 'queued' && hasWork(stored)) await wake(ctx, runId);
      } catch (err) {
        ctx.log({
          level: 'warn',
          message: "a dead predecessor's run left to the sweeper",
          run_id: runId,
          error: String(err),
        });
      }
    }
  }
  return report;
}
