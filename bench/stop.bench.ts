/**
 * How long a stop takes to reach an interruptible operation in flight, and what watching for it
 * costs while nothing stops (issue 12, item 6). On the local services (DynamoDB Local + fauxqs,
 * started here), through createRuntime with the default lease heartbeat (30 s).
 * Run: `npx node bench/stop.bench.ts [runs] [stopPollMs]` (defaults 40, 2000).
 *
 * - Latency: `runs` runs, one at a time, each calling a tool that waits for its AbortSignal. At a
 *   random moment of the operation (so that stops fall uniformly over the poll period) a stop
 *   control is applied; measured: from the stop's ack to the tool's abort, and to the run's
 *   `stopped` commit. The floor it is compared with: `stopPollMs` (the worst case of the poll
 *   alone; its mean is half of it) and, before the watch, the heartbeat (up to 30 s).
 * - Steady cost: one operation left running for 10 poll periods, no stop: the store's reads and
 *   read capacity during it, per second.
 * Prints a table; asserts nothing.
 */
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { createAwsClients } from '../lib/aws-clients.ts';
import { ensureResources } from '../lib/local/resources.ts';
import { startLocalServices } from '../lib/local/services.ts';
import { createRuntime } from '../lib/runtime.ts';
import { inProcessReducers } from '../test/support/hosts.ts';
import { toolLoop } from '../test/support/reducers.ts';

const RUNS = Number(process.argv[2] ?? 40);
const POLL_MS = Number(process.argv[3] ?? 2_000);
const caller = { principal: { kind: 'user' as const, id: 'bench' } };

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const services = await startLocalServices();
try {
  const resources = await ensureResources(services);
  const clients = createAwsClients(services);
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `stop-bench-${randomUUID().slice(0, 8)}` }),
  );
  clients.destroy();
  const aborted = new Map<string, number>();
  const started = new Map<string, number>();
  const runtime = createRuntime({
    endpoints: services,
    tableName: resources.tableName,
    bucketName: resources.bucketName,
    queueUrl: QueueUrl ?? '',
    stopPollMs: POLL_MS,
    reducers: inProcessReducers({ '/bench/wait': toolLoop(1, 'wait') }),
    registerTools(registry) {
      registry.register({
        name: 'wait',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: (_args, ctx) =>
            new Promise((resolve) => {
              started.set(ctx.run_id, performance.now());
              ctx.signal.addEventListener('abort', () => {
                aborted.set(ctx.run_id, performance.now());
                resolve({ aborted: true });
              });
            }),
        },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 600_000 },
      });
    },
  });
  const create = async () => {
    const out = await runtime.engine.createRun(
      {
        subject: { workspace: 'user:bench', path: `/stop/${randomUUID()}` },
        reducer: { function_path: '/bench/wait' },
      },
      caller,
    );
    const step = runtime.engine.stepRun(out.run.run_id);
    while (!started.has(out.run.run_id)) await sleep(5);
    return { runId: out.run.run_id, step };
  };

  const toAbort: number[] = [];
  const toStopped: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const { runId, step } = await create();
    await sleep(Math.random() * POLL_MS);
    await runtime.engine.applyControl(runId, { control_id: 'stop', command: 'stop' }, caller);
    const acked = performance.now();
    await step;
    const record = await runtime.store.getRun(runId);
    const stoppedAt = performance.now();
    if (record?.status !== 'stopped') throw new Error(`run ${runId} is ${record?.status}`);
    toAbort.push((aborted.get(runId) ?? Number.NaN) - acked);
    toStopped.push(stoppedAt - acked);
  }

  const { runId, step } = await create();
  const before = { ...runtime.store.metrics };
  const watchMs = 10 * POLL_MS;
  await sleep(watchMs);
  const after = { ...runtime.store.metrics };
  await runtime.engine.applyControl(runId, { control_id: 'stop', command: 'stop' }, caller);
  await step;
  runtime.close();

  const row = (name: string, value: string) => console.log(`${name.padEnd(52)} ${value}`);
  const ms = (x: number) => `${Math.round(x)} ms`;
  console.log(`stop bench: ${RUNS} stops, stopPollMs ${POLL_MS} (node ${process.version})`);
  row('stop ack -> operation aborted, p50', ms(quantile(toAbort, 0.5)));
  row('stop ack -> operation aborted, p99', ms(quantile(toAbort, 0.99)));
  row('stop ack -> operation aborted, max', ms(Math.max(...toAbort)));
  row('stop ack -> run stopped (committed, read back), p50', ms(quantile(toStopped, 0.5)));
  row('stop ack -> run stopped (committed, read back), p99', ms(quantile(toStopped, 0.99)));
  row('floor: the poll period (worst case of the poll alone)', ms(POLL_MS));
  row('before the watch: the lease heartbeat (worst case)', ms(30_000));
  const seconds = watchMs / 1000;
  row(
    'steady state: store reads per second of a running op',
    ((after.reads - before.reads) / seconds).toFixed(2),
  );
  row(
    'steady state: read capacity units per second',
    ((after.readCapacity - before.readCapacity) / seconds).toFixed(2),
  );
} finally {
  await services.stop();
}
