/**
 * The sweeper: for every due run of the given shards, re-read it and do what core's
 * `sweepAction` says: take over an expired lease, finish an ended run (its last events to the
 * reducer, then its owed duties), close expired requests, or wake a queued run nobody drives.
 * Every action is a conditional commit, so two sweepers at once are safe: the loser's commit is
 * stale and it moves on. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper";
 * docs/architecture.md, "The sweeper".
 */
import type { RunRecord } from '../contracts/index.ts';
import {
  expireClientLease,
  expireRequests,
  hasWork,
  isClientDriven,
  postponeWake,
  takeOver,
} from '../core/run-machine.ts';
import { sweepAction } from '../core/sweeper.ts';
import { deliverAfterEnd } from './after-end.ts';
import { afterEnd, commitOf, commitRun, type EngineContext, type OwedReport, wake } from './deps.ts';
import { CommitRejected, SWEEP_SHARDS } from './ports.ts';

export interface SweepReport {
  examined: number;
  taken_over: number;
  woken: number;
  expired: number;
  finalized: number;
  /** Hand-backs of ended children delivered to their parents. */
  handed_back: number;
  /** Children stopped because their parent ended. */
  children_stopped: number;
}

/** A report of a sweep that did nothing (every count 0). */
export function emptySweepReport(): SweepReport {
  return {
    examined: 0,
    taken_over: 0,
    woken: 0,
    expired: 0,
    finalized: 0,
    handed_back: 0,
    children_stopped: 0,
  };
}

/**
 * One sweeper pass over `shards` (default all). Never throws for one run's failure: it is
 * logged and the pass goes on. Throws when the sweep index cannot be queried.
 */
export async function sweep(ctx: EngineContext, shards?: number[]): Promise<SweepReport> {
  const report = emptySweepReport();
  const list = shards ?? Array.from({ length: SWEEP_SHARDS }, (_, i) => i);
  for (const shard of list) {
    const ids = await ctx.store.sweepCandidates(shard, ctx.clock.now(), 200);
    for (const id of ids) {
      report.examined += 1;
      try {
        await sweepRun(ctx, id, report);
      } catch (err) {
        if (err instanceof CommitRejected && (err.code === 'stale_version' || err.code === 'fenced_out'))
          continue;
        ctx.log({ level: 'error', message: 'sweep of a run failed', run_id: id, error: String(err) });
      }
    }
  }
  return report;
}

async function sweepRun(ctx: EngineContext, runId: string, report: SweepReport): Promise<void> {
  const record = await ctx.store.getRun(runId);
  if (record === null) return;
  const now = ctx.clock.now();
  switch (sweepAction(record, now, ctx.clockSkewMs)) {
    case 'none':
      return;
    case 'take_over': {
      // A client-driven run's expired lease is let go; the run waits for a client, never woken.
      const taken = isClientDriven(record)
        ? expireClientLease(record, now)
        : takeOver(record, now, ctx.wakeGraceMs);
      if (!taken.ok) return;
      const stored = await commitRun(ctx, commitOf(taken, record.version));
      report.taken_over += 1;
      ctx.log({
        level: 'info',
        message: 'lease taken over',
        run_id: runId,
        previous_owner: record.lease?.owner,
        epoch: stored.epoch,
      });
      if (!isClientDriven(stored) && hasWork(stored)) await wake(ctx, runId);
      countOwed(report, await afterEnd(ctx, stored));
      return;
    }
    case 'finish_ended': {
      let ended: RunRecord = record;
      if (record.inbox.length > 0) {
        ended = await deliverAfterEnd(ctx, record);
        report.finalized += 1;
      }
      countOwed(report, await afterEnd(ctx, ended));
      return;
    }
    case 'expire_requests': {
      const expired = expireRequests(record, now);
      if (!expired.ok) return;
      const stored = await commitRun(ctx, commitOf(expired, record.version));
      report.expired += 1;
      if (stored.status === 'queued' && !isClientDriven(stored) && hasWork(stored)) await wake(ctx, runId);
      return;
    }
    case 'wake': {
      // Push the wake deadline out first (so a second sweeper does not also wake it), then wake.
      const postponed = postponeWake(record, now, ctx.wakeGraceMs);
      if (!postponed.ok) return;
      await commitRun(ctx, commitOf(postponed, record.version));
      report.woken += 1;
      await wake(ctx, runId);
      return;
    }
  }
}

function countOwed(report: SweepReport, owed: OwedReport | null): void {
  if (owed === null) return;
  report.handed_back += owed.handed_back;
  report.children_stopped += owed.children_stopped;
}
