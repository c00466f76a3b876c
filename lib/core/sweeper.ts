/**
 * The sweeper's rules: when a run next needs the sweeper. docs/contracts/run-lifecycle.md, "Leases,
 * recovery and the sweeper"; docs/architecture.md, "The sweeper".
 */
import type { RunRecord } from '../contracts/index.ts';

/**
 * When the sweeper should next look at the run (ms since the epoch), or null when it owes
 * nothing: the lease's expiry while one is held; a queued run's wake deadline (a client-driven
 * run has none: its next request expiry, if any); a waiting run's
 * next request expiry (its wake_at); an ended run with undelivered events or owed duties at once.
 */
export function sweepDue(record: RunRecord): number | null {
  if (record.lease !== null) return record.lease.expires_at;
  // A client-driven run is never woken: only its requests' expiry concerns the sweeper.
  if (record.reducer === null && record.status === 'queued') return nextExpiry(record);
  if (record.status === 'queued') return record.wake_at ?? record.updated_at;
  if (record.status === 'waiting') return record.wake_at;
  if (
    (record.status === 'completed' || record.status === 'failed' || record.status === 'stopped') &&
    (record.inbox.length > 0 || record.owed.length > 0)
  ) {
    return record.updated_at;
  }
  return null;
}

/**
 * What the sweeper does with a run it found due, re-read: nothing (not due any more); take over
 * an expired lease; finish an ended run (deliver its undelivered events to the reducer, then its
 * owed duties: hand-back, stop children); close requests past their expiry; or wake a queued run
 * nobody drives (never a client-driven one: its client decides; its expired lease is let go by
 * expireClientLease). One action per visit, in that order. docs/contracts/run-lifecycle.md,
 * "Leases, recovery and the sweeper"; docs/architecture.md, "The sweeper".
 */
export type SweepAction = 'none' | 'take_over' | 'finish_ended' | 'expire_requests' | 'wake';

/** The clock-skew allowance by default: a third of the lease (lib/contracts/timings.ts). */
export { defaultClockSkewMs } from '../contracts/timings.ts';

/**
 * `skewMs` is the clock-skew allowance (ms, ≥ 0): a lease is taken over only once the sweeper's
 * clock reads at least `expires_at + skewMs`.
 */
export function sweepAction(record: RunRecord, now: number, skewMs = 0): SweepAction {
  if (record.lease !== null) return record.lease.expires_at + skewMs <= now ? 'take_over' : 'none';
  if (record.status === 'completed' || record.status === 'failed' || record.status === 'stopped') {
    return record.inbox.length > 0 || record.owed.length > 0 ? 'finish_ended' : 'none';
  }
  if (record.open_requests.some((r) => r.expires_at !== null && r.expires_at <= now))
    return 'expire_requests';
  if (
    record.status === 'queued' &&
    record.reducer !== null &&
    record.wake_at !== null &&
    record.wake_at <= now
  )
    return 'wake';
  return 'none';
}

/** The earliest expiry of the run's open requests (ms), or null. */
function nextExpiry(record: RunRecord): number | null {
  const expiries = record.open_requests.flatMap((r) => (r.expires_at === null ? [] : [r.expires_at]));
  return expiries.length === 0 ? null : Math.min(...expiries);
}
