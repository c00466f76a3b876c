import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { emptySweepReport, type SweepReport } from '../../lib/engine/engine.ts';
import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createSweeperHandler, passGapFromEnv, SWEEP_PASS_GAP_MS } from '../../lib/handlers/sweeper.ts';
import { lambdaContext } from '../../lib/local/poller.ts';

function report(partial: Partial<SweepReport>): SweepReport {
  return { ...emptySweepReport(), ...partial };
}

/** An engine whose sweep passes answer in turn, recording the shards and the time of each call. */
function sweeping(reports: SweepReport[]) {
  const calls: { shards: number[] | undefined; at: number }[] = [];
  return {
    calls,
    async sweep(shards?: number[]) {
      calls.push({ shards, at: performance.now() });
      return reports[calls.length - 1] ?? report({});
    },
  };
}

describe('sweeper handler', () => {
  it('makes two passes the configured gap apart and sums them into the metrics', async () => {
    const engine = sweeping([
      report({ examined: 3, taken_over: 1, woken: 1 }),
      report({ examined: 1, expired: 1, handed_back: 1, children_stopped: 2 }),
    ]);
    const metrics = createCountingMetrics();
    const handler = createSweeperHandler({ engine, logger: SILENT_LOG, metrics, passGapMs: 80 });

    const result = await handler({});

    expect(engine.calls).toHaveLength(2);
    const [first, second] = engine.calls;
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(75);
    expect(result.totals).toEqual({
      examined: 4,
      taken_over: 1,
      woken: 1,
      expired: 1,
      finalized: 0,
      handed_back: 1,
      children_stopped: 2,
    });
    expect(metrics.totals).toEqual({ Takeovers: 1, Woken: 1, Expired: 1, HandedBack: 1, ChildrenStopped: 2 });
    expect(metrics.flushes()).toBe(1);
  });

  it('skips the second pass when the invocation has too little time left', async () => {
    const engine = sweeping([report({ examined: 1 })]);
    const warnings: string[] = [];
    const handler = createSweeperHandler({
      engine,
      logger: { ...SILENT_LOG, warn: (m: string) => warnings.push(m) },
      metrics: createCountingMetrics(),
      passGapMs: 30_000,
    });

    const result = await handler({}, lambdaContext('sweeper', 20_000) as Context);

    expect(result.passes).toHaveLength(1);
    expect(warnings).toEqual(['sweeper pass skipped: not enough time left in the invocation']);
  });

  it('sweeps only the shards the schedule input names', async () => {
    const engine = sweeping([]);
    const handler = createSweeperHandler({
      engine,
      logger: SILENT_LOG,
      metrics: createCountingMetrics(),
      passGapMs: 0,
    });

    await handler({ shards: [3, 7] });

    expect(engine.calls.map((c) => c.shards)).toEqual([
      [3, 7],
      [3, 7],
    ]);
  });

  it('sweeps every shard when the input is not a sweeper input', async () => {
    const engine = sweeping([]);
    const handler = createSweeperHandler({
      engine,
      logger: SILENT_LOG,
      metrics: createCountingMetrics(),
      passGapMs: 0,
    });

    await handler({ shards: [99] });
    await handler({ 'detail-type': 'Scheduled Event', source: 'aws.scheduler' });

    expect(engine.calls.map((c) => c.shards)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('ends after the first pass when its signal aborts during the gap', async () => {
    const engine = sweeping([]);
    const abort = new AbortController();
    const handler = createSweeperHandler({
      engine,
      logger: SILENT_LOG,
      metrics: createCountingMetrics(),
      passGapMs: 60_000,
      signal: abort.signal,
    });

    const pending = handler({});
    setTimeout(() => abort.abort(), 20);
    const result = await pending;

    expect(result.passes).toHaveLength(1);
  });

  it('publishes the metrics of the passes made even when a pass throws', async () => {
    const metrics = createCountingMetrics();
    let calls = 0;
    const engine = {
      async sweep() {
        calls += 1;
        if (calls === 2) throw new Error('DynamoDB unreachable');
        return report({ taken_over: 2 });
      },
    };
    const handler = createSweeperHandler({ engine, logger: SILENT_LOG, metrics, passGapMs: 0 });

    await expect(handler({})).rejects.toThrow('DynamoDB unreachable');
    expect(metrics.totals).toEqual({ Takeovers: 2 });
    expect(metrics.flushes()).toBe(1);
  });
});

describe('passGapFromEnv', () => {
  it('reads SWEEP_PASS_GAP_MS, defaulting to 30 s', () => {
    expect(passGapFromEnv({})).toBe(SWEEP_PASS_GAP_MS);
    expect(passGapFromEnv({ SWEEP_PASS_GAP_MS: '250' })).toBe(250);
    expect(() => passGapFromEnv({ SWEEP_PASS_GAP_MS: '-1' })).toThrow(/non-negative integer/);
  });
});
