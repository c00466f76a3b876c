/**
 * What the run header says about the lease: who holds it, at which epoch, until when, and, when
 * the holder has stopped renewing it, about when the sweeper will take the run over. Pure: the
 * clock and what was observed are parameters. Seed: agent-runs, "Leases, recovery and the
 * sweeper".
 */
import type { RunRecord } from '../../../lib/contracts/index.ts';

/** The engine's default heartbeat (ms) when the deployment does not say. */
export const DEFAULT_HEARTBEAT_MS = 30_000;
/** The AWS sweeper's schedule (ms) when the deployment does not say. */
export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

export type LeaseView =
  | { kind: 'none'; epoch: number }
  | { kind: 'held'; owner: string; epoch: number; expiresInS: number }
  /**
   * The holder is presumed dead: its lease expired (or has not been renewed for longer than
   * two heartbeats). `takeoverInS` is the time left on the lease plus one sweeper period: an
   * upper estimate, since the sweeper's next pass may come sooner.
   */
  | {
      kind: 'stale';
      owner: string;
      epoch: number;
      expiresInS: number;
      takeoverInS: number;
      why: 'expired' | 'not_renewed';
    };

export interface LeaseTimers {
  heartbeatMs?: number | undefined;
  sweepIntervalMs?: number | undefined;
}

/** When the console first saw the lease's current `expires_at` (ms epoch), to notice a lease that stopped moving. */
export interface LeaseObservation {
  owner: string;
  expiresAt: number;
  firstSeenAt: number;
}

/** The observation after seeing `run` at `now`: kept while the lease has not moved, renewed when it has. */
export function observeLease(
  previous: LeaseObservation | null,
  run: Pick<RunRecord, 'lease'>,
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
  run: Pick<RunRecord, 'lease' | 'epoch'>,
  now: number,
  observed: LeaseObservation | null,
  timers: LeaseTimers = {},
): LeaseView {
  const lease = run.lease;
  if (lease === null) return { kind: 'none', epoch: run.epoch };
  const heartbeat = timers.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const sweep = timers.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
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
    takeoverInS: Math.max(0, Math.ceil((Math.max(0, leftMs) + sweep) / 1000)),
    why,
  };
}
