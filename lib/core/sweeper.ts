/**
 * The sweeper's rules: when a run next needs the sweeper. Seed: agent-runs, "Leases, recovery
 * and the sweeper"; DESIGN section 8.
 */
import type { RunRecord } from '../contracts/index.ts';

/**
 * When the sweeper should next look at the run (ms since the epoch), or null when it owes
 * nothing: the lease's expiry while one is held; a queued run's wake deadline; a waiting run's
 * next request expiry (its wake_at); an ended run with undelivered events or owed duties at once.
 */
export function sweepDue(record: RunRecord): number | null {
  if (record.lease !== null) return record.lease.expires_at;
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
