/**
 * Our side of the peer bench, the process that can be killed: a step worker (the step handler of
 * functions/step.ts behind the local stack's SQS poller) over the services of a local stack that
 * runs in another process. It registers the workload's two tools, `lookup` (read-only,
 * replay-safe) and `charge` (mutating, not replay-safe), which append to the step log. Config
 * from the environment: OURS_CONFIG (JSON: endpoints, table, queue, bucket, queueArn, region),
 * STEP_LOG, LEASE_TTL_MS, HEARTBEAT_MS, WAKE_GRACE_MS. Prints `ready`; answers `metrics` over
 * IPC with the store's request counters. Issue 19.
 */

import { createCountingMetrics, SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createStepBatchHandler } from '../../lib/handlers/step-batch.ts';
import { startPoller } from '../../lib/local/poller.ts';
import { builtInFunctions, createRuntime, type RuntimeConfig } from '../../lib/runtime.ts';
import { createSandboxReducerHost } from '../../lib/sandbox/index.ts';
import { storedFunctionRegistryFor } from '../../lib/sandbox/stored-registry.ts';
import { executeStep } from './workload.ts';

export interface OursWorkerConfig {
  runtime: Pick<RuntimeConfig, 'endpoints' | 'tableName' | 'queueUrl' | 'bucketName'>;
  queueArn: string;
  region: string;
  visibilityTimeoutSeconds: number;
}

const config = JSON.parse(process.env.OURS_CONFIG ?? '{}') as OursWorkerConfig;
const log = process.env.STEP_LOG ?? '';
if (log === '') throw new Error('STEP_LOG is not set');
const optionalMs = (name: string) => (process.env[name] ? { [name]: Number(process.env[name]) } : {});
const timers = {
  ...optionalMs('LEASE_TTL_MS'),
  ...optionalMs('HEARTBEAT_MS'),
  ...optionalMs('WAKE_GRACE_MS'),
};

/** The reducer's function registry; its own counters (metrics) count the requests it sends. */
const functions = storedFunctionRegistryFor(config.runtime, builtInFunctions());
// The machine is shared and loaded: a generous reducer time limit (AWS: 200 ms), as the e2e tests set.
const reducers = createSandboxReducerHost({ registry: functions, limits: { timeoutMs: 5_000 } });
const runtime = createRuntime({
  ...config.runtime,
  // One step worker process at a time fills this slot (the bench restarts it after each kill):
  // a restarted worker takes over at once the runs its killed predecessor held.
  workerSlot: 'peer-bench-step-worker',
  functions,
  reducers,
  ...(timers.LEASE_TTL_MS !== undefined && { leaseTtlMs: timers.LEASE_TTL_MS }),
  ...(timers.HEARTBEAT_MS !== undefined && { heartbeatMs: timers.HEARTBEAT_MS }),
  ...(timers.WAKE_GRACE_MS !== undefined && { wakeGraceMs: timers.WAKE_GRACE_MS }),
  registerTools(registry) {
    for (const [name, replaySafe] of [
      ['lookup', true],
      ['charge', false],
    ] as const) {
      registry.register({
        name,
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: !replaySafe, replay_safe: replaySafe },
        handler: {
          kind: 'module',
          fn: async (args) => executeStep(log, String(args.run), Number(args.n)),
        },
      });
    }
  },
});

const metrics = createCountingMetrics();
const poller = startPoller({
  sqs: runtime.clients.sqs,
  queueUrl: config.runtime.queueUrl,
  queueArn: config.queueArn,
  region: config.region,
  handler: createStepBatchHandler({
    engine: runtime.engine,
    logger: SILENT_LOG,
    metrics,
    storeMetrics: runtime.store.metrics,
  }),
  visibilityTimeoutSeconds: config.visibilityTimeoutSeconds,
  functionTimeoutMs: config.visibilityTimeoutSeconds * 1_000,
  waitTimeSeconds: 1,
  concurrency: 4,
});

process.on('message', (message) => {
  if (message === 'metrics')
    process.send?.({
      store: { ...runtime.store.metrics },
      functionReads: functions.metrics.itemReads + functions.metrics.objectReads,
      poller: { ...poller.stats },
    });
});
process.once('SIGTERM', () => {
  void poller.stop().then(async () => {
    runtime.close();
    await reducers.close();
    process.exit(0);
  });
});
console.log('ready');
// After `ready` (the bench times kill to ready): the poller already runs beside it.
runtime.engine.recoverPredecessors().then(
  (report) => console.error(`recovered from the killed predecessor: ${JSON.stringify(report)}`),
  (err: unknown) => console.error(`predecessor recovery failed: ${String(err)}`),
);
