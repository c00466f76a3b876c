import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { StepOutcome } from '../../lib/engine/engine.ts';
import { createCountingMetrics, type LogSink } from '../../lib/handlers/observability.ts';
import {
  createStepBatchHandler,
  MALFORMED_STEP_MESSAGE,
  parseStepMessage,
} from '../../lib/handlers/step-batch.ts';
import { toRecord } from '../../lib/local/poller.ts';

type Entry = { level: string; message: string; attributes: Record<string, unknown> };

function recordingLogger(): LogSink & { entries: Entry[] } {
  const entries: Entry[] = [];
  const at =
    (level: string) =>
    (message: string, ...attributes: Record<string, unknown>[]) =>
      entries.push({ level, message, attributes: Object.assign({}, ...attributes) });
  return { entries, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function batch(bodies: string[]): SQSEvent {
  return {
    Records: bodies.map((body, i) =>
      toRecord({ MessageId: `m${i}`, ReceiptHandle: `h${i}`, Body: body }, 'arn:aws:sqs:local:0:q', 'local'),
    ),
  };
}

/** An engine whose stepRun answers from a table (or throws), counting calls per run. */
function engineOf(outcomes: Record<string, StepOutcome | Error>) {
  const calls: string[] = [];
  return {
    calls,
    async stepRun(runId: string): Promise<StepOutcome> {
      calls.push(runId);
      await new Promise((done) => setTimeout(done, 5));
      const outcome = outcomes[runId] ?? { kind: 'not_found' };
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  };
}

const progressed = (operations: number): StepOutcome => ({
  kind: 'progressed',
  status: 'completed',
  operations,
  rebases: 0,
});

describe('step batch handler', () => {
  it('reports only the record whose step threw as a batch item failure', async () => {
    const engine = engineOf({ a: progressed(2), b: new Error('DynamoDB unreachable'), c: progressed(1) });
    const metrics = createCountingMetrics();
    const logger = recordingLogger();
    const handler = createStepBatchHandler({ engine, logger, metrics });

    const response = await handler(batch(['{"run_id":"a"}', '{"run_id":"b"}', '{"run_id":"c"}']));

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm1' }]);
    expect(metrics.totals).toMatchObject({ Steps: 2, StepFailures: 1, Operations: 3 });
    expect(metrics.flushes()).toBe(1);
    const failed = logger.entries.find((e) => e.level === 'error');
    expect(failed?.attributes).toMatchObject({
      run_id: 'b',
      message_id: 'm1',
      error: 'DynamoDB unreachable',
    });
  });

  it('steps a run once for two messages in the same batch and acknowledges both', async () => {
    const engine = engineOf({ a: progressed(1), b: progressed(0) });
    const handler = createStepBatchHandler({
      engine,
      logger: recordingLogger(),
      metrics: createCountingMetrics(),
    });

    const response = await handler(batch(['{"run_id":"a"}', '{"run_id":"b"}', '{"run_id":"a"}']));

    expect(response.batchItemFailures).toEqual([]);
    expect(engine.calls.sort()).toEqual(['a', 'b']);
  });

  it('reports both duplicates failed when their shared step throws', async () => {
    const engine = engineOf({ a: new Error('boom'), b: progressed(0) });
    const handler = createStepBatchHandler({
      engine,
      logger: recordingLogger(),
      metrics: createCountingMetrics(),
    });

    const response = await handler(batch(['{"run_id":"a"}', '{"run_id":"b"}', '{"run_id":"a"}']));

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm0' }, { itemIdentifier: 'm2' }]);
    expect(engine.calls.filter((id) => id === 'a')).toHaveLength(1);
  });

  it('acknowledges a malformed message and logs it with code malformed_step_message', async () => {
    const engine = engineOf({ a: progressed(0) });
    const logger = recordingLogger();
    const metrics = createCountingMetrics();
    const handler = createStepBatchHandler({ engine, logger, metrics });

    const response = await handler(batch(['not json', '{"run":"x"}', '{"run_id":""}', '{"run_id":"a"}']));

    expect(response.batchItemFailures).toEqual([]);
    expect(engine.calls).toEqual(['a']);
    const malformed = logger.entries.filter((e) => e.attributes.code === MALFORMED_STEP_MESSAGE);
    expect(malformed.map((e) => [e.level, e.attributes.message_id])).toEqual([
      ['error', 'm0'],
      ['error', 'm1'],
      ['error', 'm2'],
    ]);
    expect(metrics.totals.MalformedStepMessages).toBe(3);
  });

  it('throws when every record of the batch fails, so the whole batch is retried', async () => {
    const handler = createStepBatchHandler({
      engine: engineOf({ a: new Error('down') }),
      logger: recordingLogger(),
      metrics: createCountingMetrics(),
    });

    await expect(handler(batch(['{"run_id":"a"}']))).rejects.toThrow(/All records failed/);
  });

  it('counts fenced steps and the store retries since the last invocation as commit conflicts', async () => {
    const storeMetrics = { transactionRetries: 4 };
    const engine = {
      async stepRun(runId: string): Promise<StepOutcome> {
        storeMetrics.transactionRetries += 2;
        return runId === 'f' ? { kind: 'fenced' } : progressed(0);
      },
    };
    const metrics = createCountingMetrics();
    const handler = createStepBatchHandler({ engine, logger: recordingLogger(), metrics, storeMetrics });

    await handler(batch(['{"run_id":"f"}']));
    await handler(batch(['{"run_id":"g"}']));

    // first: 2 retries + 1 fenced; second: 2 retries (the 4 seen before the first call are not counted).
    expect(metrics.totals.CommitConflicts).toBe(5);
  });

  it('resolves lazily supplied dependencies on each invocation', async () => {
    let built = 0;
    const deps = {
      engine: engineOf({ a: progressed(0) }),
      logger: recordingLogger(),
      metrics: createCountingMetrics(),
    };
    const handler = createStepBatchHandler(() => {
      built += 1;
      return deps;
    });
    expect(built).toBe(0);
    await handler(batch(['{"run_id":"a"}']));
    expect(built).toBe(1);
  });
});

describe('parseStepMessage', () => {
  it('accepts {run_id} and ignores unknown fields', () => {
    expect(parseStepMessage('{"run_id":"r1","extra":1}')).toEqual({ ok: true, message: { run_id: 'r1' } });
  });

  it('refuses a body that is not JSON or has no run_id', () => {
    expect(parseStepMessage('{').ok).toBe(false);
    expect(parseStepMessage('[]').ok).toBe(false);
    expect(parseStepMessage('{"run_id":7}').ok).toBe(false);
  });
});
