/**
 * The sweeper: for every due run of the given shards, re-read it and do what core's
 * `sweepAction` says: take over an expired lease, finish an ended run (its last events to the
 * reducer, then its owed duties), close expired requests, or wake a queued run nobody drives.
 * Every action is a conditional commit, so two sweepers at once are safe: the loser's commit is
 * stale and it moves on. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper";
 * docs/architecture.md, "The sweeper".
 */
import type { RunRecord } from '../contracts/index.ts';
import { type RateLimitedLog, rateLimitedLog } from '../core/rate-limited-log.ts';
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

/** How many due runs a pass handles per shard by default (EngineOptions.sweepCandidates). */
export const SWEEP_CANDIDATES = 200;

/**
 * How many runs that failed to sweep a pass steps past per shard, in multiples of the
 * candidate count: a run the sweeper cannot process stays due at the head of its shard, and
 * without stepping past it a shard holding `sweepCandidates` of them would never reach the
 * runs behind them (other users' takeovers, expiries and wakes).
 */
const MAX_SKIPPED_CANDIDATES = 4;

/**
 * The failures a pass logs: one line per interval (60 s) per engine, however many runs fail
 * each pass, with the count left out; a run that always fails does not flood the log.
 */
const failureLogs = new WeakMap<EngineContext, RateLimitedLog>();
const SWEEP_FAILURE_LOG_INTERVAL_MS = 60_000;

function failureLog(ctx: EngineContext): RateLimitedLog {
  let log = failureLogs.get(ctx);
  if (log === undefined) {
    log = rateLimitedLog(
      (message, attributes) => ctx.log({ level: 'error', message, ...attributes }),
      'sweep of a run failed',
      { intervalMs: SWEEP_FAILURE_LOG_INTERVAL_MS, now: () => ctx.clock.now() },
    );
    failureLogs.set(ctx, log);
  }
  return log;
}

/**
 * One sweeper pass over `shards` (default all). Never throws for one run's failure: it is
 * logged (rate limited: "sweep of a run failed", with `suppressed`) and the pass goes on.
 * Handles up to `sweepCandidates` (default 200) due runs per shard, earliest due first; a run
 * that fails does not count against that, and the pass asks the shard again past the runs that
 * failed (at most 4 x `sweepCandidates` of them), so runs that cannot be swept do not hold up
 * the ones behind them. Throws when the sweep index cannot be queried.
 */
export async function sweep(ctx: EngineContext, shards?: number[]): Promise<SweepReport> {
  const report = emptySweepReport();
  const list = shards ?? Array.from({ length: SWEEP_SHARDS }, (_, i) => i);
  for (const shard of list) await sweepShard(ctx, shard, report);
  return report;
}

async function sweepShard(ctx: EngineContext, shard: number, report: SweepReport): Promise<void> {
  const budget = ctx.sweepCandidates;
  const seen = new Set<string>();
  let handled = 0;
  let failed = 0;
  while (handled < budget && failed <= budget * MAX_SKIPPED_CANDIDATES) {
    // The runs that failed stay due, earliest first: ask for them plus the budget left.
    const limit = failed + (budget - handled);
    const ids = await ctx.store.sweepCandidates(shard, ctx.clock.now(), limit);
    const fresh = ids.filter((id) => !seen.has(id));
    let failedNow = 0;
    for (const id of fresh) {
      seen.add(id);
      report.examined += 1;
      if (await sweepOne(ctx, id, report)) handled += 1;
      else failedNow += 1;
    }
    failed += failedNow;
    // Done when the shard has no more due runs, or nothing failed (the budget is spent).
    if (ids.length < limit || fresh.length === 0 || failedNow === 0) return;
  }
}

/** Sweeps one run; false when it failed (logged), true otherwise (a lost race included). */
async function sweepOne(ctx: EngineContext, id: string, report: SweepReport): Promise<boolean> {
  try {
    await sweepRun(ctx, id, report);
    return true;
  } catch (err) {
    if (err instanceof CommitRejected && (err.code === 'stale_version' || err.code === 'fenced_out'))
      return true;
    failureLog(ctx).note({ run_id: id, error: String(err) });
    return false;
  }
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
