/**
 * The runtime's timing defaults in one place: the lease, its heartbeat, the sweeper's clock-skew
 * allowance, the sweeper's schedule and the stop poll of an interruptible operation. The engine
 * (lib/engine/deps.ts), the CLI's `waiting:` hints (lib/client/waiting.ts) and the web console
 * (console/src/model/lease.ts) all read them from here, and a deployment's own values travel as
 * a `Timings` object (`GET /config`, the console's config.json). Pure and browser-safe: zod only.
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
import { z } from 'zod';

/** Lease length (ms): 90 s. */
export const LEASE_TTL_MS = 90_000;
/** How often a worker renews its lease while an operation runs (ms): 30 s. */
export const HEARTBEAT_MS = 30_000;
/** How often an interruptible operation in flight reads its run's status to see a stop (ms): 2 s. */
export const STOP_POLL_MS = 2_000;
/** The AWS sweeper's schedule (ms): every minute (cdk/stack.ts). */
export const SWEEP_INTERVAL_MS = 60_000;
/** Gap between the two sweeper passes of one scheduled invocation (ms): 30 s. */
export const SWEEP_PASS_GAP_MS = 30_000;
/** Delay before the sweeper wakes a queued run whose step message was lost (ms): 60 s. */
export const WAKE_GRACE_MS = 60_000;

/**
 * The clock-skew allowance by default: a third of the lease (30 s of the default 90 s lease).
 * A lease is written with the holder's clock and judged expired with the sweeper's, so the two
 * clocks may differ by up to `lease − heartbeat + allowance − renewal latency` (90 s with the
 * defaults: 90 − 30 + 30) before a live worker can be taken over; a crashed worker's run is
 * recovered at most `lease + allowance` after its last renewal.
 */
export function defaultClockSkewMs(leaseTtlMs: number): number {
  return Math.floor(leaseTtlMs / 3);
}

const Ms = z.number().int().positive();

/** A deployment's timings (wire shape, ms each), as `GET /config` answers them. */
export const Timings = z.object({
  /** Lease length. */
  lease_ttl_ms: Ms,
  /** How often a live holder renews its lease. */
  heartbeat_ms: Ms,
  /** How long past `expires_at` the sweeper waits before it takes a lease over. */
  clock_skew_ms: z.number().int().nonnegative(),
  /** How often the sweeper passes (its schedule; an upper bound between two passes). */
  sweep_interval_ms: Ms,
  /** How often an interruptible operation reads its run's status to see a stop. */
  stop_poll_ms: Ms,
});
export type Timings = z.infer<typeof Timings>;

/** Timings given in part (camelCase, as EngineOptions and RuntimeConfig take them). */
export interface TimingOptions {
  leaseTtlMs?: number | undefined;
  heartbeatMs?: number | undefined;
  clockSkewMs?: number | undefined;
  sweepIntervalMs?: number | undefined;
  stopPollMs?: number | undefined;
}

/** The timings with every default applied; the skew allowance follows the lease when not given. */
export function resolveTimings(given: TimingOptions = {}): Timings {
  const lease = given.leaseTtlMs ?? LEASE_TTL_MS;
  return {
    lease_ttl_ms: lease,
    heartbeat_ms: given.heartbeatMs ?? HEARTBEAT_MS,
    clock_skew_ms: given.clockSkewMs ?? defaultClockSkewMs(lease),
    sweep_interval_ms: given.sweepIntervalMs ?? SWEEP_INTERVAL_MS,
    stop_poll_ms: given.stopPollMs ?? STOP_POLL_MS,
  };
}

/** The defaults: lease 90 s, heartbeat 30 s, skew allowance 30 s, sweep every 60 s, stop poll 2 s. */
export const DEFAULT_TIMINGS: Timings = resolveTimings();

/** When the sweeper takes a dead holder's lease over, from `now` (ms each, never negative). */
export interface TakeoverEstimate {
  /** Until the sweeper may take it over: the lease's expiry plus the skew allowance. */
  fromMs: number;
  /** Until it has at the latest: one sweeper period after that. */
  byMs: number;
}

/**
 * The one takeover estimate the CLI's hints and the console both show: a lease expiring at
 * `expiresAt` (ms epoch) may be taken over once the sweeper's clock passes it by the skew
 * allowance (core/sweeper.ts sweepAction), and is taken over at the sweeper's next pass after
 * that, at most one `sweep_interval_ms` later.
 */
export function takeoverEstimate(
  expiresAt: number,
  now: number,
  timings: Pick<Timings, 'clock_skew_ms' | 'sweep_interval_ms'>,
): TakeoverEstimate {
  const fromMs = Math.max(0, expiresAt + timings.clock_skew_ms - now);
  return { fromMs, byMs: fromMs + timings.sweep_interval_ms };
}
