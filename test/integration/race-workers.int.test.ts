/**
 * Race tests between workers that need DynamoDB Local and fauxqs themselves: a batch of ten SQS
 * messages with one failing, and commits whose TransactWriteItems DynamoDB cancels
 * (TransactionConflict, throttling) on every retry or only on some, checked down to the run item's
 * sweep attributes. A worker paused past its lease, a step message delivered twice and the
 * ambiguous commit run on the memory store: test/engine/race-workers.test.ts.
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper"; docs/architecture.md, "The
 * commit", "The step", "The sweeper".
 */
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import { StoreUnavailable } from '../../lib/engine/errors.ts';
import { CommitRejected } from '../../lib/engine/ports.ts';
import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createStepBatchHandler } from '../../lib/handlers/step-batch.ts';
import { recordOf } from '../../lib/store/item-codec.ts';
import { sweepShardKey } from '../../lib/store/table.ts';
import { eventKindsOf, faultyDoc, localStore } from '../support/dynamo-faults.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  makeTestEngine,
  scriptedModel,
  uniqueSubject,
} from '../support/engine.ts';
import { expectConvergedLog, readAll, scopedStore, shardOfRun } from '../support/faults.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

describe('race 3: ten step messages in one SQS batch', () => {
  it('reports only the message whose step threw; the nine others commit once; redelivering all ten adds nothing', async () => {
    let poisoned = '';
    const tools = inProcessTools({
      lookup: async (r) => {
        if (r.run_id === poisoned) throw new Error('the tool host broke its contract and threw');
        return { i: r.args.i };
      },
    });
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(1) }),
      tools,
      models: noModel,
    });
    const store = scopedStore(t.store);
    const engine = t.another({ store });
    const runIds: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const { run } = await engine.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: i },
        alice,
      );
      runIds.push(run.run_id);
    }
    poisoned = runIds[3] as string;
    const records = await receiveBatch(t.clients.sqs, t.queue.queueUrl, 10);
    expect(records.map((r) => (JSON.parse(r.body) as { run_id: string }).run_id).sort()).toEqual(
      [...runIds].sort(),
    );
    const handler = createStepBatchHandler({ engine, logger: SILENT_LOG, metrics: createCountingMetrics() });
    const batch: SQSEvent = { Records: records };

    const response = await handler(batch);
    const poisonedMessage = records.find((r) => r.body.includes(poisoned))?.messageId;
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: poisonedMessage }]);
    for (const id of runIds.filter((r) => r !== poisoned)) {
      const record = await store.getRun(id);
      expect(record?.status).toBe('completed');
      const outcomes = expectConvergedLog(await readAll(store, id));
      expect([...outcomes.keys()]).toEqual([`${id}/op/1`]);
      expect(tools.executions.get(`${id}/op/1`)).toBe(1);
    }
    // The failed step left its lease behind, with the sweeper owing the run a look at its expiry.
    const stuck = (await rawRunItem(poisoned)) as { sweep_due?: number; record: RunRecord } | undefined;
    expect(stuck?.record.lease).not.toBeNull();
    expect(stuck?.sweep_due).toBe(stuck?.record.lease?.expires_at);
    // The event source mapping deletes the acknowledged messages; the failed one stays.
    for (const r of records.filter((x) => x.messageId !== poisonedMessage)) {
      await t.clients.sqs.send(
        new DeleteMessageCommand({ QueueUrl: t.queue.queueUrl, ReceiptHandle: r.receiptHandle }),
      );
    }
    const snapshot = await Promise.all(runIds.map((id) => store.getRun(id)));
    const executions = new Map(tools.executions);

    const again = await handler(batch);
    expect(again.batchItemFailures).toEqual([]);
    const later = await Promise.all(runIds.map((id) => store.getRun(id)));
    expect(later.map((r) => r?.version)).toEqual(snapshot.map((r) => r?.version));
    expect(later.map((r) => r?.last_seq)).toEqual(snapshot.map((r) => r?.last_seq));
    expect(tools.executions).toEqual(executions);
  });
});

describe('race 4: a commit that fails after the operation ran', () => {
  for (const code of ['TransactionConflict', 'ThrottlingError'] as const) {
    it(`(${code} on every retry) leaves a lease with a sweep deadline, and the run progresses within the lease TTL plus one sweep`, async () => {
      let failing = true;
      const doc = { injected: () => 0 };
      const base = localStore((d) => {
        const faulty = faultyDoc(d, (items) =>
          failing && eventKindsOf(items).includes('tool_result') ? code : null,
        );
        doc.injected = () => faulty.injected;
        return faulty;
      });
      const tools = inProcessTools({ lookup: async (r) => ({ i: r.args.i }) });
      const t = await makeTestEngine({
        reducers: inProcessReducers({ '/r/loop': toolLoop(2) }),
        tools,
        models: noModel,
        store: base,
      });
      const store = scopedStore(base);
      const worker = t.another({ store });
      const { run } = await worker.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
        alice,
      );
      await t.drainMessages();

      const err = await worker.stepRun(run.run_id).then(
        () => null,
        (e: unknown) => e,
      );
      // Exhausted: a conflict stays a refusal, throttling is the store being unavailable.
      expect(err).toBeInstanceOf(code === 'TransactionConflict' ? CommitRejected : StoreUnavailable);
      expect(err).toMatchObject({
        code: code === 'TransactionConflict' ? 'transaction_conflict' : 'store_unavailable',
        retryable: true,
      });
      expect(doc.injected()).toBe(5); // the store's own attempts, with backoff
      failing = false;
      const stuck = await store.getRun(run.run_id);
      expect(stuck).toMatchObject({ status: 'running', operation: { op_id: `${run.run_id}/op/1` } });
      const lease = stuck?.lease;
      if (lease === null || lease === undefined) throw new Error('the failed step left no lease');
      const item = await rawRunItem(run.run_id);
      expect(item?.sweep_due).toBe(lease.expires_at);
      expect(item?.sweep_shard).toBe(sweepShardKey(run.run_id));
      // The message is redelivered while the lease is live: busy, nothing touched.
      expect(await t.another({ store }).stepRun(run.run_id)).toEqual({ kind: 'busy' });

      // One sweep just before expiry plus the skew allowance does nothing; one just after takes
      // over, and a worker finishes.
      t.clock.advance(lease.expires_at + defaultClockSkewMs(LEASE_TTL_MS) - t.clock.now() - 1_000);
      expect((await worker.sweep(shardOfRun(run.run_id))).taken_over).toBe(0);
      t.clock.advance(2_000);
      expect((await worker.sweep(shardOfRun(run.run_id))).taken_over).toBe(1);
      expect(await t.drainMessages()).toEqual([run.run_id]);
      expect(await t.another({ store }).stepRun(run.run_id)).toMatchObject({ status: 'completed' });

      const outcomes = expectConvergedLog(await readAll(store, run.run_id));
      expect([...outcomes.values()].map((o) => o[0]?.kind)).toEqual(['tool_result', 'tool_result']);
      expect(tools.executions.get(`${run.run_id}/op/1`)).toBe(2); // replay-safe: dispatched again
      expect(tools.executions.get(`${run.run_id}/op/2`)).toBe(1);
    });
  }

  it('a TransactionConflict that clears within the store retries commits once, with no duplicate event', async () => {
    let conflicts = 0;
    const base = localStore((d) =>
      faultyDoc(d, (items) => {
        if (!eventKindsOf(items).includes('tool_result') || conflicts >= 2) return null;
        conflicts += 1;
        return 'TransactionConflict';
      }),
    );
    const tools = inProcessTools({ lookup: async (r) => ({ i: r.args.i }) });
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(2) }),
      tools,
      models: noModel,
      store: base,
    });
    const store = scopedStore(base);
    const { run } = await t
      .another({ store })
      .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' }, alice);
    const retries = base.metrics.transactionRetries;
    expect(await t.another({ store }).stepRun(run.run_id)).toMatchObject({ status: 'completed' });
    expect(base.metrics.transactionRetries - retries).toBe(2);
    expectConvergedLog(await readAll(store, run.run_id));
    expect([...tools.executions.values()]).toEqual([1, 1]);
  });
});

// ---------------------------------------------------------------- helpers

/** The run record item as stored (with its index attributes, the record parsed), strongly consistent. */
async function rawRunItem(runId: string): Promise<Record<string, unknown> | undefined> {
  const local = inject('localServices');
  const clients = createAwsClients(local);
  try {
    const out = await clients.doc.send(
      new GetCommand({
        TableName: local.tableName,
        Key: { pk: `RUN#${runId}`, sk: 'R' },
        ConsistentRead: true,
      }),
    );
    // The record itself is stored as compressed JSON text (DynamoDB limits maps to 32 levels of nesting).
    const item = out.Item;
    return item === undefined ? undefined : { ...item, record: recordOf(item) };
  } finally {
    clients.destroy();
  }
}

/** Receives `n` messages from the queue (several ReceiveMessage calls if needed) as Lambda SQS records. */
async function receiveBatch(sqs: SQSClient, queueUrl: string, n: number): Promise<SQSRecord[]> {
  const out: SQSRecord[] = [];
  for (let tries = 0; out.length < n && tries < 20; tries += 1) {
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: Math.min(10, n - out.length),
        WaitTimeSeconds: 1,
      }),
    );
    for (const m of res.Messages ?? []) {
      out.push({
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
        attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: String(Date.now()),
          SenderId: 'local',
          ApproximateFirstReceiveTimestamp: String(Date.now()),
        },
        messageAttributes: {},
        md5OfBody: m.MD5OfBody ?? '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:step',
        awsRegion: 'us-east-1',
      });
    }
  }
  return out;
}
