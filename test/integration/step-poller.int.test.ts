/**
 * The local event source mapping (lib/local/poller.ts) driving the step handler on fauxqs:
 * batches received with a visibility timeout, processed messages deleted, failed ones left to
 * reappear, and SQS's own redrive policy moving a message to the DLQ after 5 receives.
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createStepBatchHandler } from '../../lib/handlers/step-batch.ts';
import { type Poller, startPoller } from '../../lib/local/poller.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  makeTestEngine,
  scriptedModel,
  uniqueSubject,
} from '../support/engine.ts';
import { wrapStore } from '../support/faults.ts';
import { until } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
const _sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pollers: Poller[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});

/** A step queue with its DLQ (redrive after 5 receives) and the given visibility timeout. */
async function queueWithDlq(sqs: SQSClient, visibilitySeconds: number) {
  const name = `step-${randomUUID().slice(0, 8)}`;
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqUrl = dlq.QueueUrl ?? '';
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
  );
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(visibilitySeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: attrs.Attributes?.QueueArn,
          maxReceiveCount: 5,
        }),
      },
    }),
  );
  return { queueUrl: queue.QueueUrl ?? '', dlqUrl };
}

async function depth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

/** Waits until `check` holds. */
const untilTrue = (check: () => Promise<boolean>, timeoutMs: number) => until(check, (ok) => ok, timeoutMs);

describe('local SQS poller', () => {
  it('drives runs to completion and deletes the messages it processed', async () => {
    // Prepare: three runs whose step messages go to the engine's queue.
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(2) }),
      tools: inProcessTools({ lookup: async () => ({}) }),
      models: noModel,
    });
    const runIds: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const { run } = await t.engine.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: i },
        alice,
      );
      runIds.push(run.run_id);
    }
    const metrics = createCountingMetrics();

    // Act
    const poller = startPoller({
      sqs: t.clients.sqs,
      queueUrl: t.queue.queueUrl,
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:step',
      region: 'us-east-1',
      handler: createStepBatchHandler({ engine: t.engine, logger: SILENT_LOG, metrics }),
      concurrency: 2,
    });
    pollers.push(poller);

    // Assess: every run completes, each with its tool run twice, and the queue is empty.
    await untilTrue(async () => {
      const runs = await Promise.all(runIds.map((id) => t.engine.getRun(id, alice)));
      return runs.every((r) => r.status === 'completed');
    }, 20_000);
    await untilTrue(async () => (await depth(t.clients.sqs, t.queue.queueUrl)) === 0, 5_000);
    expect(poller.stats.received).toBeGreaterThanOrEqual(3);
    expect(poller.stats.deleted).toBe(poller.stats.received);
    expect(poller.stats.failed).toBe(0);
    expect(metrics.totals.Operations).toBe(6);
  });

  it('leaves a failing message on the queue until the redrive policy moves it to the DLQ after 5 receives', async () => {
    // Prepare: a run whose store reads always fail (DynamoDB unreachable for it), and its
    // message on a queue with a 1 s visibility timeout.
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(1) }),
      tools: inProcessTools({ lookup: async () => ({}) }),
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'x' },
      alice,
    );
    const unreachable = t.another({
      store: wrapStore(t.store, {
        getRun: async (id) => {
          if (id === run.run_id) throw new Error('connect ECONNREFUSED (simulated)');
          return t.store.getRun(id);
        },
      }),
    });
    const { queueUrl, dlqUrl } = await queueWithDlq(t.clients.sqs, 1);
    await t.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify({ run_id: run.run_id }) }),
    );
    const receiveCounts: number[] = [];
    const handler = createStepBatchHandler({
      engine: unreachable,
      logger: SILENT_LOG,
      metrics: createCountingMetrics(),
    });

    // Act
    const poller = startPoller({
      sqs: t.clients.sqs,
      queueUrl,
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:step',
      region: 'us-east-1',
      visibilityTimeoutSeconds: 1,
      concurrency: 1,
      handler: async (event, context) => {
        receiveCounts.push(Number(event.Records[0]?.attributes.ApproximateReceiveCount));
        return handler(event, context);
      },
    });
    pollers.push(poller);

    // Assess: five receives (each batch failed whole), then the message sits in the DLQ.
    let inDlq: string | undefined;
    await untilTrue(async () => {
      const out = await t.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 0 }),
      );
      inDlq = out.Messages?.[0]?.Body;
      return inDlq !== undefined;
    }, 20_000);
    expect(JSON.parse(inDlq ?? '{}')).toEqual({ run_id: run.run_id });
    expect(receiveCounts).toEqual([1, 2, 3, 4, 5]);
    expect(poller.stats).toMatchObject({ batches: 5, deleted: 0, failed: 5, errors: 5 });
    expect(await depth(t.clients.sqs, queueUrl)).toBe(0);
  });

  it('deletes the records a handler acknowledges and leaves the ones it reports failed', async () => {
    const t = await makeTestEngine({
      reducers: inProcessReducers({}),
      tools: inProcessTools({}),
      models: noModel,
    });
    const { queueUrl } = await queueWithDlq(t.clients.sqs, 1);
    for (const body of ['keep', 'done-1', 'done-2']) {
      await t.clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    }
    const seen: string[] = [];

    const poller = startPoller({
      sqs: t.clients.sqs,
      queueUrl,
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
      region: 'us-east-1',
      visibilityTimeoutSeconds: 1,
      concurrency: 1,
      handler: async (event) => {
        seen.push(...event.Records.map((r) => r.body));
        return {
          batchItemFailures: event.Records.filter((r) => r.body === 'keep').map((r) => ({
            itemIdentifier: r.messageId,
          })),
        };
      },
    });
    pollers.push(poller);

    // The failed record comes back after its visibility timeout; the acknowledged ones never do.
    await untilTrue(async () => seen.filter((b) => b === 'keep').length >= 2, 10_000);
    await poller.stop();
    expect(seen.filter((b) => b === 'done-1')).toHaveLength(1);
    expect(seen.filter((b) => b === 'done-2')).toHaveLength(1);
    expect(poller.stats.deleted).toBe(2);
  });
});
