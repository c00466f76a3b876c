/**
 * Our control plane in the peer bench, in a process of its own so that its CPU counts as the
 * system's and not as the driver's: the local stack (`startLocalStack`: DynamoDB Local, fauxqs
 * with the SQS queue and the S3 bucket, the HTTP API) without its step poller (the step worker
 * is bench/peers/ours-worker.ts) and the sweeper loop at the interval the phase sets. Options
 * from OURS_STACK (JSON: dir, inMemory, wakeGraceMs, leaseTtlMs, visibilityTimeoutSeconds).
 * Prints `ready {json}` (url, token, the worker's config, DynamoDB Local's pid); answers over
 * IPC: `{sweepEveryMs}` (sets the sweep interval), `metrics` (the store's request counters),
 * `floor` (the storage floor, see dynamoFloor). SIGTERM stops it. Issue 24, item 4.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { startLocalStack } from '../../lib/local/stack.ts';
import type { OursWorkerConfig } from './ours-worker.ts';
import { type Series, summarize } from './workload.ts';

export interface OursStackOptions {
  dir: string;
  inMemory: boolean;
  wakeGraceMs?: number;
  leaseTtlMs?: number;
  visibilityTimeoutSeconds: number;
}

/** What the stack process prints after `ready`. */
export interface OursStackReady {
  url: string;
  token: string;
  config: OursWorkerConfig;
  dynamoPid: number;
}

/**
 * The storage floor: sequential raw requests, one at a time (ms each), and the AWS SDK's own CPU
 * per request in the process that sent them (ms: signing, marshalling, HTTP; user + system).
 */
export type StorageFloor = {
  get_item: Series;
  transact_write_one_put: Series;
  sdk_cpu_ms_per_request: number;
};

const options = JSON.parse(process.env.OURS_STACK ?? '{}') as OursStackOptions;
const stack = await startLocalStack({
  port: 0,
  ...(options.inMemory ? {} : { persistDir: join(options.dir, 'data') }),
  ...(options.wakeGraceMs !== undefined && { wakeGraceMs: options.wakeGraceMs }),
  ...(options.leaseTtlMs !== undefined && { leaseTtlMs: options.leaseTtlMs }),
  stateDir: false,
  logger: SILENT_LOG,
  pollerConcurrency: 0,
  sweepIntervalMs: 0,
  visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
  sandboxLimits: { timeoutMs: 5_000 },
});

let stopped = false;
let sweepEveryMs = 10_000;
// The sweeper, as the local stack's timer runs it, at the interval the phase sets.
const sweeping = (async () => {
  while (!stopped) {
    const started = Date.now();
    try {
      await stack.runtime.engine.sweep();
    } catch {
      // a pass that fails is retried at the next one, as the sweeper timer does
    }
    while (!stopped && Date.now() - started < sweepEveryMs) await sleep(100);
  }
})();

/**
 * The storage floor right after a phase, on the same DynamoDB Local: sequential raw requests
 * from this process, one at a time: a consistent GetItem of a 1 KB item and a TransactWriteItems
 * of one 1 KB Put, with this process's CPU over those 200 requests (the SDK's floor per request).
 */
async function dynamoFloor(): Promise<StorageFloor> {
  const doc = stack.runtime.clients.doc;
  const TableName = stack.resources.tableName;
  const pk = `FLOOR#${randomUUID()}`;
  const body = 'x'.repeat(1_000);
  const gets: number[] = [];
  const writes: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < 100; i += 1) {
    let t = performance.now();
    await doc.send(
      new TransactWriteCommand({
        TransactItems: [{ Put: { TableName, Item: { pk, sk: String(i), body } } }],
      }),
    );
    writes.push(performance.now() - t);
    t = performance.now();
    await doc.send(new GetCommand({ TableName, Key: { pk, sk: String(i) }, ConsistentRead: true }));
    gets.push(performance.now() - t);
  }
  const used = process.cpuUsage(cpu);
  const sdk = Math.round(((used.user + used.system) / 1000 / 200) * 1000) / 1000;
  return {
    get_item: summarize(gets),
    transact_write_one_put: summarize(writes),
    sdk_cpu_ms_per_request: sdk,
  };
}

process.on('message', (message: unknown) => {
  if (message === 'metrics') process.send?.({ ...stack.runtime.store.metrics });
  else if (message === 'floor') void dynamoFloor().then((floor) => process.send?.(floor));
  else if (typeof message === 'object' && message !== null && 'sweepEveryMs' in message) {
    sweepEveryMs = Number(message.sweepEveryMs);
    process.send?.({ sweepEveryMs });
  }
});
process.once('SIGTERM', () => {
  stopped = true;
  void sweeping.then(async () => {
    await stack.stop();
    process.exit(0);
  });
});

const s = stack.services;
const ready: OursStackReady = {
  url: stack.url,
  token: stack.token,
  dynamoPid: s.dynamoPid,
  config: {
    runtime: {
      endpoints: {
        region: s.region,
        credentials: s.credentials,
        dynamoEndpoint: s.dynamoEndpoint,
        sqsEndpoint: s.sqsEndpoint,
        s3Endpoint: s.s3Endpoint,
      },
      tableName: stack.resources.tableName,
      queueUrl: stack.resources.queueUrl,
      bucketName: stack.resources.bucketName,
    },
    queueArn: stack.resources.queueArn,
    region: s.region,
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
  },
};
console.log(`ready ${JSON.stringify(ready)}`);

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
