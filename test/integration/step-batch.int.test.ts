/**
 * The step handler (lib/handlers/step-batch.ts, behind functions/step.ts) on real SQS events:
 * messages sent by the engine to a fauxqs queue, received with ReceiveMessage and turned into the
 * SQSEvent Lambda's event source mapping delivers; the engine runs on DynamoDB Local.
 * docs/architecture.md, "The step".
 */
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../lib/engine/engine.ts';
import {
  createCountingMetrics,
  engineLog,
  type LogSink,
  SILENT_LOG,
} from '../../lib/handlers/observability.ts';
import { createStepBatchHandler, MALFORMED_STEP_MESSAGE } from '../../lib/handlers/step-batch.ts';
import { toRecord } from '../../lib/local/poller.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  makeTestEngine,
  scriptedModel,
  type TestEngine,
  uniqueSubject,
} from '../support/engine.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

/** Receives exactly `n` messages from the engine's queue (as one SQS batch would carry them). */
async function receiveBatch(t: TestEngine, n: number): Promise<SQSEvent> {
  const records: SQSEvent['Records'] = [];
  for (let attempt = 0; records.length < n && attempt < 20; attempt += 1) {
    const out = await t.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: t.queue.queueUrl,
        MaxNumberOfMessages: Math.min(10, n - records.length),
        WaitTimeSeconds: 1,
        VisibilityTimeout: 60,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    for (const m of out.Messages ?? [])
      records.push(toRecord(m, 'arn:aws:sqs:us-east-1:000000000000:step', 'us-east-1'));
  }
  expect(records).toHaveLength(n);
  return { Records: records };
}

const runIdOf = (record: SQSEvent['Records'][number]) =>
  (JSON.parse(record.body) as { run_id: string }).run_id;

async function eventCounts(engine: Engine, runIds: string[]): Promise<number[]> {
  return Promise.all(runIds.map(async (id) => (await engine.readEvents(id, alice, 0, 1000)).length));
}

function errorLog(): LogSink & { errors: Record<string, unknown>[] } {
  const errors: Record<string, unknown>[] = [];
  return {
    ...SILENT_LOG,
    errors,
    error: (_m: string, ...a: Record<string, unknown>[]) => errors.push(Object.assign({}, ...a)),
  };
}

describe('step handler on SQS batches from fauxqs', () => {
  it('reports only the message of the run whose step threw, and a redelivery of all ten adds nothing', async () => {
    // Prepare: ten runs, each woken by one message; the step of one of them dies after taking its lease.
    let failing: string | null = null;
    const tools = inProcessTools({ lookup: async (r) => ({ echo: r.args.i }) });
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(1) }),
      tools,
      models: noModel,
      crash: (point, runId) => {
        if (point === 'after_lease_acquire' && runId === failing)
          throw new Error('worker lost its connection');
      },
    });
    const runIds: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const { run } = await t.engine.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: i },
        alice,
      );
      runIds.push(run.run_id);
    }
    failing = runIds[4] ?? null;
    const event = await receiveBatch(t, 10);
    const metrics = createCountingMetrics();
    const handler = createStepBatchHandler({
      engine: t.engine,
      logger: SILENT_LOG,
      metrics,
      storeMetrics: t.store.metrics,
    });

    // Act
    const response = await handler(event);

    // Assess: one failure, for the failing run's message; the nine others completed.
    const failedMessage = event.Records.find((r) => runIdOf(r) === failing)?.messageId;
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: failedMessage }]);
    const statuses = await Promise.all(runIds.map(async (id) => (await t.engine.getRun(id, alice)).status));
    expect(statuses.filter((s) => s === 'completed')).toHaveLength(9);
    expect(statuses[4]).toBe('running');
    expect(metrics.totals).toMatchObject({ Steps: 9, StepFailures: 1, Operations: 9 });

    // Act again: SQS redelivers all ten (the worker is healthy now).
    failing = null;
    const before = await eventCounts(t.engine, runIds);
    const executed = tools.executions.size;
    const again = await handler(event);

    // Assess: all acknowledged, no event and no tool execution added (the dead worker's lease still
    // holds its run until the sweeper takes it over).
    expect(again.batchItemFailures).toEqual([]);
    expect(await eventCounts(t.engine, runIds)).toEqual(before);
    expect(tools.executions.size).toBe(executed);
  });

  it('steps a run once for two of its messages in one batch and acknowledges both', async () => {
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(2) }),
      tools: inProcessTools({ lookup: async () => ({}) }),
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'x' },
      alice,
    );
    await t.queue.send({ run_id: run.run_id });
    const event = await receiveBatch(t, 2);
    const stepped: string[] = [];
    const handler = createStepBatchHandler({
      engine: {
        stepRun: (id) => {
          stepped.push(id);
          return t.engine.stepRun(id);
        },
      },
      logger: SILENT_LOG,
      metrics: createCountingMetrics(),
    });

    const response = await handler(event);

    expect(response.batchItemFailures).toEqual([]);
    expect(stepped).toEqual([run.run_id]);
    expect((await t.engine.getRun(run.run_id, alice)).status).toBe('completed');
  });

  it('acknowledges malformed messages and logs each with code malformed_step_message', async () => {
    const t = await makeTestEngine({
      reducers: inProcessReducers({}),
      tools: inProcessTools({}),
      models: noModel,
    });
    for (const body of ['hello', '{"runId":"r"}']) {
      await t.clients.sqs.send(new SendMessageCommand({ QueueUrl: t.queue.queueUrl, MessageBody: body }));
    }
    const event = await receiveBatch(t, 2);
    const logger = errorLog();

    const response = await createStepBatchHandler({
      engine: t.engine,
      logger,
      metrics: createCountingMetrics(),
    })(event);

    expect(response.batchItemFailures).toEqual([]);
    expect(logger.errors.map((e) => e.code)).toEqual([MALFORMED_STEP_MESSAGE, MALFORMED_STEP_MESSAGE]);
  });

  it('counts a reducer response the engine refuses as a ReducerRefusal', async () => {
    const metrics = createCountingMetrics();
    const twoOperations = (req: Record<string, unknown>) => ({
      contract: 'raisin.agent-run.reducer/1',
      state: { n: 1 },
      state_rev: (req.state_rev as number) + 1,
      effects: [
        {
          effect_id: `${(req.state_rev as number) + 1}:0`,
          kind: 'call_tool',
          tool: 'a',
          args: {},
          mutating: false,
          replay_safe: true,
        },
        {
          effect_id: `${(req.state_rev as number) + 1}:1`,
          kind: 'call_tool',
          tool: 'b',
          args: {},
          mutating: false,
          replay_safe: true,
        },
      ],
      projection: null,
      diagnostics: [],
      refused: null,
    });
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/two': twoOperations }),
      tools: inProcessTools({}),
      models: noModel,
      log: engineLog(SILENT_LOG, metrics),
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/two' }, input: 'x' },
      alice,
    );
    const event = await receiveBatch(t, 1);

    await createStepBatchHandler({ engine: t.engine, logger: SILENT_LOG, metrics })(event);

    const failed = await t.engine.getRun(run.run_id, alice);
    expect(failed).toMatchObject({
      status: 'failed',
      terminal_reason: 'reducer_refused:multiple_operations',
    });
    expect(metrics.totals).toMatchObject({ Steps: 1, ReducerRefusals: 1 });
  });
});
