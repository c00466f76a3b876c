/**
 * What integration tests repeat: a runtime from createRuntime on the local services the test
 * run started (its own fresh step queue, so tests never share messages), and `until`, the one
 * polling wait with a deadline.
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { createRuntime, type Runtime, type RuntimeConfig } from '../../lib/runtime.ts';

/**
 * A runtime over DynamoDB Local, fauxqs SQS and S3, with a step queue named `{prefix}-{random}`.
 * `config` adds to (and may override) the local coordinates.
 */
export async function localRuntime(
  prefix: string,
  config: Partial<RuntimeConfig> = {},
): Promise<{ runtime: Runtime; queueUrl: string }> {
  const local = inject('localServices');
  const clients = createAwsClients(local);
  try {
    const { QueueUrl } = await clients.sqs.send(
      new CreateQueueCommand({ QueueName: `${prefix}-${randomUUID().slice(0, 12)}` }),
    );
    const queueUrl = QueueUrl ?? '';
    const runtime = createRuntime({
      endpoints: local,
      tableName: local.tableName,
      bucketName: local.bucketName,
      queueUrl,
      ...config,
    });
    return { runtime, queueUrl };
  } finally {
    clients.destroy();
  }
}

/**
 * Calls `read` every `intervalMs` (default 100) until `done` holds for its value, and returns
 * that value. Throws, naming the last value, when `timeoutMs` passes first.
 */
export async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`not reached within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
