/**
 * The timing defaults in one place (lib/contracts/timings.ts): the engine applies them, and the CLI's
 * `waiting:` hint and the console's run header tell the same takeover time from them, for the
 * defaults and for a deployment's own timings.
 */
import { describe, expect, it } from 'vitest';
import { leaseView, observeLease } from '../../console/src/model/lease.ts';
import { waitingReasons } from '../../lib/client/waiting.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { DEFAULT_TIMINGS, resolveTimings, takeoverEstimate } from '../../lib/contracts/timings.ts';
import { resolveDeps } from '../../lib/engine/deps.ts';
import { newRun } from '../support/runs.ts';

const T = 1_700_000_000_000;
const stalled = (expiresAt: number) =>
  ({
    ...newRun({}, T),
    status: 'running',
    lease: { owner: 'worker-7', expires_at: expiresAt },
    operation: null,
    open_requests: [],
  }) as unknown as RunRecord;

describe('timings', () => {
  it('are the ones the engine applies when given none', () => {
    const deps = resolveDeps({} as Parameters<typeof resolveDeps>[0]);

    expect({
      lease_ttl_ms: deps.leaseTtlMs,
      heartbeat_ms: deps.heartbeatMs,
      clock_skew_ms: deps.clockSkewMs,
      stop_poll_ms: deps.stopPollMs,
    }).toEqual({
      lease_ttl_ms: DEFAULT_TIMINGS.lease_ttl_ms,
      heartbeat_ms: DEFAULT_TIMINGS.heartbeat_ms,
      clock_skew_ms: DEFAULT_TIMINGS.clock_skew_ms,
      stop_poll_ms: DEFAULT_TIMINGS.stop_poll_ms,
    });
  });

  it('let the skew allowance follow a given lease unless it is given too', () => {
    expect(resolveTimings({ leaseTtlMs: 9_000 }).clock_skew_ms).toBe(3_000);
    expect(resolveTimings({ leaseTtlMs: 9_000, clockSkewMs: 0 }).clock_skew_ms).toBe(0);
  });

  it('give the CLI hint and the console the same takeover window, skew allowance included', () => {
    const timings = resolveTimings({ leaseTtlMs: 60_000, heartbeatMs: 10_000, sweepIntervalMs: 15_000 });
    const run = stalled(T + 20_000); // renewed at T - 40 s: three heartbeats missed
    const estimate = takeoverEstimate(T + 20_000, T, timings);

    const [hint] = waitingReasons(run, T, timings);
    const view = leaseView(run, T, observeLease(null, run, T - 25_000), timings);

    expect(estimate).toEqual({ fromMs: 40_000, byMs: 55_000 });
    expect(hint?.text).toContain('the runtime takes the run over in 40 s to 55 s');
    expect(view).toMatchObject({ kind: 'stale', takeoverFromS: 40, takeoverInS: 55 });
  });
});
