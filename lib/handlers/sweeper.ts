/**
 * The logic behind `functions/sweeper.ts`: an EventBridge Scheduler invocation (every minute)
 * makes two sweeper passes 30 s apart, so that the sweeper looks at every shard about every
 * 30 s. Each pass is `engine.sweep(shards)`; the reports are logged and summed into the metrics
 * Takeovers, Woken, Expired and Finalized. docs/architecture.md, "The sweeper";
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 *
 * The second pass is skipped (and the skip logged) when the invocation would run out of time
 * first: it starts only if the Lambda context leaves at least gap + `minPassMs` milliseconds.
 * A pass that throws fails the invocation (the schedule retries it); every sweeper action is a
 * conditional commit, so a repeated pass is harmless.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { configFromEnv } from '../config.ts';
import { SWEEP_PASS_GAP_MS } from '../contracts/timings.ts';
import { type Engine, emptySweepReport, type SweepReport } from '../engine/engine.ts';
import { SWEEP_SHARDS } from '../engine/ports.ts';
import { flushTraces } from '../telemetry/otel.ts';
import { count, flush, type LogSink, METRIC, type MetricSink } from './observability.ts';

/** The default gap between the two passes (ms). */
export { SWEEP_PASS_GAP_MS } from '../contracts/timings.ts';

/**
 * The scheduler's input (the target's Input JSON). Everything is optional: `{}` or an
 * EventBridge event sweeps every shard. `shards` limits a pass to some shards (0..SWEEP_SHARDS-1).
 */
export const SweeperInput = z
  .object({
    shards: z
      .array(
        z
          .number()
          .int()
          .min(0)
          .max(SWEEP_SHARDS - 1),
      )
      .min(1)
      .optional(),
  })
  .loose();

export interface SweeperDeps {
  engine: Pick<Engine, 'sweep'>;
  logger: LogSink;
  metrics: MetricSink;
  /** Gap between passes in ms (default 30 000; env SWEEP_PASS_GAP_MS in Lambda). */
  passGapMs?: number;
  /** Passes per invocation (default 2). The local stack's timer makes one per tick. */
  passes?: number;
  /** Time a pass needs at least, in ms, for the deadline check (default 10 000). */
  minPassMs?: number;
  /** Aborts the wait between passes (the local stack's shutdown); the invocation then ends. */
  signal?: AbortSignal;
}

/** What one invocation did: one report per pass made. */
export interface SweeperResult {
  passes: SweepReport[];
  totals: SweepReport;
}

export type SweeperHandler = (event: unknown, context?: Context) => Promise<SweeperResult>;

/** Reads SWEEP_PASS_GAP_MS (ms, a non-negative integer; lib/config.ts); default 30 000. Throws ConfigError on a bad value. */
export function passGapFromEnv(env: NodeJS.ProcessEnv): number {
  return configFromEnv(env).SWEEP_PASS_GAP_MS;
}

/** Creates the sweeper handler; `deps` may be a function (lazy, once per container). */
export function createSweeperHandler(deps: SweeperDeps | (() => SweeperDeps)): SweeperHandler {
  const resolve = typeof deps === 'function' ? deps : () => deps;
  return async (event, context) => {
    const d = resolve();
    const gapMs = d.passGapMs ?? SWEEP_PASS_GAP_MS;
    const passCount = d.passes ?? 2;
    const minPassMs = d.minPassMs ?? 10_000;
    const input = SweeperInput.safeParse(event ?? {});
    if (!input.success) {
      d.logger.warn('sweeper input ignored: sweeping every shard', {
        issues: input.error.issues.map((i) => i.message),
      });
    }
    const shards = input.success ? input.data.shards : undefined;
    const passes: SweepReport[] = [];
    try {
      for (let pass = 1; pass <= passCount; pass += 1) {
        if (pass > 1) {
          const left = context?.getRemainingTimeInMillis();
          if (left !== undefined && left < gapMs + minPassMs) {
            d.logger.warn('sweeper pass skipped: not enough time left in the invocation', {
              pass,
              remaining_ms: left,
              gap_ms: gapMs,
            });
            break;
          }
          if (!(await wait(gapMs, d.signal))) break;
        }
        const started = performance.now();
        const report = await d.engine.sweep(shards);
        passes.push(report);
        // A pass that did nothing is routine (every 30 s in AWS, every few seconds locally): debug.
        const acted =
          report.taken_over +
            report.woken +
            report.expired +
            report.finalized +
            report.handed_back +
            report.children_stopped >
          0;
        (acted ? d.logger.info : d.logger.debug).call(d.logger, 'sweeper pass', {
          pass,
          ...report,
          ...(shards !== undefined ? { shards } : {}),
          duration_ms: Math.round(performance.now() - started),
        });
      }
    } finally {
      const totals = sum(passes);
      count(d.metrics, METRIC.takeovers, totals.taken_over);
      count(d.metrics, METRIC.woken, totals.woken);
      count(d.metrics, METRIC.expired, totals.expired);
      count(d.metrics, METRIC.finalized, totals.finalized);
      count(d.metrics, METRIC.handedBack, totals.handed_back);
      count(d.metrics, METRIC.childrenStopped, totals.children_stopped);
      flush(d.metrics);
      await flushTraces(); // a run the sweeper ended: its run span, before Lambda freezes the container
    }
    return { passes, totals: sum(passes) };
  };
}

/** Waits `ms`; false if `signal` aborted first. */
async function wait(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return false;
  if (ms === 0) return true;
  try {
    await sleep(ms, undefined, signal === undefined ? {} : { signal });
    return true;
  } catch (err) {
    if (signal?.aborted) return false;
    throw err;
  }
}

function sum(reports: SweepReport[]): SweepReport {
  const total = emptySweepReport();
  for (const r of reports) {
    total.examined += r.examined;
    total.taken_over += r.taken_over;
    total.woken += r.woken;
    total.expired += r.expired;
    total.finalized += r.finalized;
    total.handed_back += r.handed_back;
    total.children_stopped += r.children_stopped;
  }
  return total;
}
