/**
 * Builds an engine on the real local services (DynamoDB Local, fauxqs SQS and S3) with
 * in-process reducers, tools and models, for integration tests. Each call gets its own step
 * queue so that tests never share state. The same engine on the memory store and a memory
 * step queue, for unit-speed engine tests: memory-engine.ts. The in-process hosts live in
 * hosts.ts (re-exported here).
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { type AwsClients, createAwsClients } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import { type CrashPoint, createEngine, type Engine, type EngineOptions } from '../../lib/engine/engine.ts';
import type { RunStore, StepQueue } from '../../lib/engine/ports.ts';
import { createSqsStepQueue } from '../../lib/queue/step-queue.ts';
import { createDynamoRunStore } from '../../lib/store/dynamo-run-store.ts';
import { testClock } from './hosts.ts';

export * from './hosts.ts';

export interface TestEngine {
  engine: Engine;
  store: RunStore;
  queue: StepQueue & { queueUrl: string };
  clients: AwsClients;
  clock: ReturnType<typeof testClock>;
  /** Builds a second engine (another worker) on the same store, queue and clock. */
  another(overrides?: Partial<EngineOptions>): Engine;
  /** Receives and deletes every step message currently queued; returns their run ids. */
  drainMessages(): Promise<string[]>;
}

export async function makeTestEngine(
  parts: Pick<EngineOptions, 'reducers' | 'tools' | 'models'> &
    Partial<EngineOptions> & { crash?: (p: CrashPoint, runId: string) => void | Promise<void> },
): Promise<TestEngine> {
  const local = inject('localServices');
  const clients = createAwsClients(local);
  const blobs = createS3BlobStore(clients.s3, local.bucketName);
  const store = parts.store ?? createDynamoRunStore({ doc: clients.doc, tableName: local.tableName, blobs });
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `step-${randomUUID().slice(0, 12)}` }),
  );
  const queueUrl = QueueUrl ?? '';
  const queue = Object.assign(createSqsStepQueue(clients.sqs, queueUrl), { queueUrl });
  const clock = testClock();
  const options: EngineOptions = {
    store,
    queue,
    clock,
    heartbeatMs: 1_000,
    wakeGraceMs: 1_000,
    ...parts,
    ...(parts.crash ? { faults: parts.crash } : {}),
  };
  return {
    engine: createEngine(options),
    store,
    queue,
    clients,
    clock,
    another: (overrides = {}) => createEngine({ ...options, faults: () => {}, ...overrides }),
    async drainMessages() {
      const ids: string[] = [];
      for (;;) {
        const out = await clients.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
        );
        const messages = out.Messages ?? [];
        if (messages.length === 0) return ids;
        for (const m of messages) {
          ids.push((JSON.parse(m.Body ?? '{}') as { run_id: string }).run_id);
          await clients.sqs.send(
            new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }),
          );
        }
      }
    },
  };
}
