/**
 * What the run header says about the lease: who holds it, at which epoch, until when, and, when
 * the holder has stopped renewing it, about when the sweeper will take the run over. Pure: the
 * clock and what was observed are parameters. docs/contracts/run-lifecycle.md, "Leases, recovery
 * and the sweeper".
 */
import type { PublicRunRecord } from '../../../lib/contracts/index.ts';
import { DEFAULT_TIMINGS, type Timings, takeoverEstimate } from '../../../lib/contracts/timings.ts';

export type LeaseView =
  | { kind: 'none'; epoch: number }
  | { kind: 'held'; owner: string; epoch: number; expiresInS: number }
  /**
   * The holder is presumed dead: its lease expired (or has not been renewed for longer than
   * two heartbeats). The sweeper takes it over between `takeoverFromS` (the time left on the
   * lease plus the skew allowance) and `takeoverInS` (one sweeper period later): the same
   * estimate the CLI's `waiting:` hints give (lib/contracts/timings.ts takeoverEstimate).
   */
  | {
      kind: 'stale';
      owner: string;
      epoch: number;
      expiresInS: number;
      takeoverFromS: number;
      takeoverInS: number;
      why: 'expired' | 'not_renewed';
    };

/** The deployment's timings, each defaulting to lib/contracts/timings.ts's when the deployment does not say. */
export type LeaseTimers = {
  [K in 'heartbeat_ms' | 'clock_skew_ms' | 'sweep_interval_ms']?: Timings[K] | undefined;
};

/** When the console first saw the lease's current `expires_at` (ms epoch), to notice a lease that stopped moving. */
export interface LeaseObservation {
  owner: string;
  expiresAt: number;
  firstSeenAt: number;
}

/** The observation after seeing `run` at `now`: kept while the lease has not moved, renewed when it has. */
export function observeLease(
  previous: LeaseObservation | null,
  run: Pick<PublicRunRecord, 'lease'>,
  now: number,
): LeaseObservation | null {
  if (run.lease === null) return null;
  if (
    previous !== null &&
    previous.owner === run.lease.owner &&
    previous.expiresAt === run.lease.expires_at
  ) {
    return previous;
  }
  return { owner: run.lease.owner, expiresAt: run.lease.expires_at, firstSeenAt: now };
}

export function leaseView(
  run: Pick<PublicRunRecord, 'lease' | 'epoch'>,
  now: number,
  observed: LeaseObservation | null,
  timers: LeaseTimers = {},
): LeaseView {
  const lease = run.lease;
  if (lease === null) return { kind: 'none', epoch: run.epoch };
  const heartbeat = timers.heartbeat_ms ?? DEFAULT_TIMINGS.heartbeat_ms;
  const takeover = takeoverEstimate(lease.expires_at, now, {
    clock_skew_ms: timers.clock_skew_ms ?? DEFAULT_TIMINGS.clock_skew_ms,
    sweep_interval_ms: timers.sweep_interval_ms ?? DEFAULT_TIMINGS.sweep_interval_ms,
  });
  const leftMs = lease.expires_at - now;
  const expiresInS = Math.round(leftMs / 1000);
  const unmovedMs =
    observed !== null && observed.owner === lease.owner && observed.expiresAt === lease.expires_at
      ? now - observed.firstSeenAt
      : 0;
  const why = leftMs <= 0 ? 'expired' : unmovedMs > 2 * heartbeat ? 'not_renewed' : null;
  if (why === null) return { kind: 'held', owner: lease.owner, epoch: run.epoch, expiresInS };
  return {
    kind: 'stale',
    owner: lease.owner,
    epoch: run.epoch,
    expiresInS,
    takeoverFromS: Math.ceil(takeover.fromMs / 1000),
    takeoverInS: Math.ceil(takeover.byMs / 1000),
    why,
  };
}
