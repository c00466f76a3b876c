/**
 * StoreUnavailable end to end on the local services: what the AWS SDK reports as throttled or
 * unreachable leaves the adapters (DynamoDB run store, S3 blobs, SQS queue) as StoreUnavailable
 * (retryable, the SDK's error as its cause), a commit throttled on every attempt is retried by
 * the store and then StoreUnavailable, and the HTTP API answers it 503 store_unavailable with
 * Retry-After. Faults are injected by a middleware on the real SDK client (DynamoDB Local cannot
 * be made to throttle); everything else runs for real.
 */
import { createServer } from 'node:net';
import {
  DynamoDBClient,
  ProvisionedThroughputExceededException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { type AwsClients, createAwsClients, lazyClient } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import { StoreUnavailable } from '../../lib/engine/errors.ts';
import { EngineModuleError } from '../../lib/engine/module-error.ts';
import { bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { createSqsStepQueue } from '../../lib/queue/step-queue.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';
import { createDynamoRunStore } from '../../lib/store/dynamo-run-store.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  makeTestEngine,
  scriptedModel,
  uniqueSubject,
} from '../support/engine.ts';

const local = inject('localServices');
const opened: AwsClients[] = [];
afterAll(() => {
  for (const c of opened) c.destroy();
});

/** Fresh clients on the local services whose DynamoDB requests named by `fault` fail with what it returns. */
function faultyClients(fault: (command: string) => Error | null): AwsClients & { injected: string[] } {
  const clients = createAwsClients(local);
  opened.push(clients);
  const injected: string[] = [];
  // The document client shares this stack: the fault sits where the SDK's own retries end.
  clients.dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const err = fault(context.commandName ?? '');
      if (err === null) return next(args);
      injected.push(context.commandName ?? '');
      throw err;
    },
    { step: 'initialize', name: 'injectFault' },
  );
  return Object.assign(clients, { injected });
}

const throttled = (message = 'injected') =>
  new ProvisionedThroughputExceededException({ $metadata: { httpStatusCode: 400 }, message });

function storeOver(clients: AwsClients, maxAttempts = 3) {
  return createDynamoRunStore({
    doc: clients.doc,
    tableName: local.tableName,
    blobs: createS3BlobStore(clients.s3, local.bucketName),
    maxAttempts,
    sleep: async () => {},
  });
}

/** A TCP port on 127.0.0.1 that nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
const loop = { '/r/one': () => ({ effects: [{ kind: 'complete', output: 'done' }] }) };

describe('the DynamoDB store raises StoreUnavailable for what the SDK reports as unavailable', () => {
  it('maps a throttled read to StoreUnavailable, retryable, with the SDK error as its cause', async () => {
    const clients = faultyClients((command) => (command === 'GetItemCommand' ? throttled() : null));
    const err = await storeOver(clients)
      .getRun('run-throttled')
      .catch((e: unknown) => e);

    expect(clients.injected).toEqual(['GetItemCommand']);
    expect(err).toBeInstanceOf(StoreUnavailable);
    expect(err).toBeInstanceOf(EngineModuleError);
    expect(err).toMatchObject({ code: 'store_unavailable', retryable: true });
    expect((err as Error).cause).toBeInstanceOf(ProvisionedThroughputExceededException);
  });

  it('retries a commit throttled on every attempt, then throws StoreUnavailable', async () => {
    // A create that claims only its subject is two plain puts, the subject first.
    const clients = faultyClients((command) =>
      command === 'PutItemCommand' ? new ThrottlingException({ $metadata: {}, message: 'slow' }) : null,
    );
    const t = await makeTestEngine({
      reducers: inProcessReducers(loop),
      tools: inProcessTools({}),
      models: noModel,
      store: storeOver(clients, 3),
    });
    const err = await t.engine
      .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/one' }, input: 'go' }, alice)
      .catch((e: unknown) => e);

    expect(clients.injected).toEqual(Array(3).fill('PutItemCommand'));
    expect(err).toBeInstanceOf(StoreUnavailable);
    expect(err).toMatchObject({ code: 'store_unavailable', retryable: true });
  });

  it('passes an error that is not unavailability through as it is', async () => {
    const invalid = Object.assign(new Error('bad key'), { name: 'ValidationException', $fault: 'client' });
    const clients = faultyClients((command) => (command === 'GetItemCommand' ? invalid : null));
    const err = await storeOver(clients)
      .getRun('run-invalid')
      .catch((e: unknown) => e);
    expect(clients.injected).toEqual(['GetItemCommand']);
    expect(err).toBe(invalid);
  });

  it('maps an unreachable DynamoDB, S3 and SQS to StoreUnavailable (connection refused)', async () => {
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const common = { region: 'us-east-1', credentials: local.credentials, endpoint, maxAttempts: 1 };
    const dynamo = new DynamoDBClient(common);
    const s3 = new S3Client({ ...common, forcePathStyle: true });
    const sqs = new SQSClient(common);
    try {
      const blobs = createS3BlobStore(
        lazyClient(async () => s3),
        local.bucketName,
      );
      const store = createDynamoRunStore({
        doc: DynamoDBDocumentClient.from(dynamo),
        tableName: local.tableName,
        blobs,
      });
      const queue = createSqsStepQueue(sqs, `${endpoint}/000000000000/steps`);
      const failures = await Promise.all([
        store.getRun('run-unreachable').catch((e: unknown) => e),
        blobs.put('payload', 'text/plain').catch((e: unknown) => e),
        queue.send({ run_id: 'run-unreachable' }).catch((e: unknown) => e),
      ]);
      for (const err of failures) {
        expect(err).toBeInstanceOf(StoreUnavailable);
        expect(err).toMatchObject({ code: 'store_unavailable', retryable: true });
      }
    } finally {
      dynamo.destroy();
      s3.destroy();
      sqs.destroy();
    }
  });
});

describe('the HTTP API answers StoreUnavailable by its code', () => {
  it('answers 503 store_unavailable with Retry-After when DynamoDB throttles the read', async () => {
    const clients = faultyClients((command) => (command === 'GetItemCommand' ? throttled() : null));
    const t = await makeTestEngine({
      reducers: inProcessReducers(loop),
      tools: inProcessTools({}),
      models: noModel,
      store: storeOver(clients),
    });
    const app = createHttpApp({
      engine: t.engine,
      functions: new InMemoryFunctionRegistry(),
      tools: { list: () => [] },
      auth: bearerTokenAuth('admin-token'),
      log: () => {},
    });

    const response = await app.request('/runs/run-throttled', {
      headers: { authorization: 'Bearer admin-token' },
    });

    expect(clients.injected.length).toBeGreaterThan(0);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toMatchObject({ code: 'store_unavailable', details: {} });
  });
});
