/**
 * Our runtime in the peer bench, driven as a user drives it: the local stack (`startLocalStack`:
 * DynamoDB Local persisted to a temporary folder, fauxqs, the HTTP API) with its step poller
 * moved into a separate worker process (bench/peers/ours-worker.ts) that the crash phase kills
 * with SIGKILL, the sweeper run from here, and the workload submitted through the HTTP client
 * (lib/client): the reducer registered with `PUT /functions/...`, one `POST /runs` per run, each
 * run's completion read with `GET /runs/{id}`. Issue 19.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import { isTerminalStatus } from '../../lib/contracts/index.ts';
import type { StoreMetrics } from '../../lib/engine/ports.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { childWhoseCommandHas, cpuMeter } from './cpu.ts';
import type { OursWorkerConfig } from './ours-worker.ts';
import { aptGetInstall, type CrashPlan, killRepeatedly, WorkerProcess } from './processes.ts';
import {
  analyzeSteps,
  countSteps,
  cpuPerStep,
  load,
  type PhaseResult,
  perStep,
  preciseNow,
  readStepLog,
  recoveryBreakdown,
  recoveryGaps,
  runLabels,
  type Series,
  stepsPerSecond,
  summarize,
} from './workload.ts';

const REDUCER_PATH = '/bench/agent-steps';
/** The local stack's visibility timeout for the step queue here (s): above a step's deadline in both phases. */
const VISIBILITY_S = 60;

export interface Ours {
  stack: LocalStack;
  client: AgentRunsClient;
  config: OursWorkerConfig;
  /** Time between sweeper passes (ms); changed per phase. */
  sweepEveryMs: number;
  inMemory: boolean;
  version: string;
  stop(): Promise<void>;
}

export interface OursOptions {
  /** DynamoDB Local in memory instead of on disk (not durable: a reference row only). */
  inMemory?: boolean;
  /** The stack's wake grace (ms, default 60 000): how long a queued run's lost step message goes unnoticed. */
  wakeGraceMs?: number;
  /** The stack's lease (ms, default 90 000): its sweeper's clock-skew allowance is a third of it. */
  leaseTtlMs?: number;
}

/** Starts the local stack (no step poller in it) and the sweeper loop; registers the reducer over HTTP. */
export async function startOurs(dir: string, options: OursOptions = {}): Promise<Ours> {
  // DynamoDB Local needs a Java 17+ runtime.
  if (process.env.JAVA_HOME === undefined && spawnSync('java', ['-version']).error !== undefined) {
    aptGetInstall('openjdk-17-jre-headless', 'java not found (DynamoDB Local needs it)');
  }
  const stack = await startLocalStack({
    port: 0,
    ...(options.inMemory === true ? {} : { persistDir: join(dir, 'data') }),
    ...(options.wakeGraceMs !== undefined && { wakeGraceMs: options.wakeGraceMs }),
    ...(options.leaseTtlMs !== undefined && { leaseTtlMs: options.leaseTtlMs }),
    stateDir: false,
    logger: SILENT_LOG,
    pollerConcurrency: 0,
    sweepIntervalMs: 0,
    visibilityTimeoutSeconds: VISIBILITY_S,
    sandboxLimits: { timeoutMs: 5_000 },
  });
  const client = createClient({ baseUrl: stack.url, token: stack.token });
  await client.putFunction(
    REDUCER_PATH,
    new Uint8Array(readFileSync(new URL('./agent-steps.js', import.meta.url))),
    'js',
  );
  const s = stack.services;
  const config: OursWorkerConfig = {
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
    visibilityTimeoutSeconds: VISIBILITY_S,
  };
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  let stopped = false;
  const ours: Ours = {
    stack,
    client,
    config,
    sweepEveryMs: 10_000,
    inMemory: options.inMemory === true,
    version: pkg.version,
    async stop() {
      stopped = true;
      await sweeping;
      await stack.stop();
    },
  };
  // The sweeper, as the local stack's timer runs it, at the interval the phase sets.
  const sweeping = (async () => {
    while (!stopped) {
      const started = Date.now();
      try {
        await stack.runtime.engine.sweep();
      } catch {
        // a pass that fails is retried at the next one, as the sweeper timer does
      }
      while (!stopped && Date.now() - started < ours.sweepEveryMs) await sleep(100);
    }
  })();
  return ours;
}

export interface OursPhase {
  phase: 'steady' | 'crash';
  runs: number;
  steps: number;
  logPath: string;
  crash?: CrashPlan;
  /** Worker timers (ms); absent: the runtime's defaults (lease 90 s, heartbeat 30 s, wake grace 60 s). */
  leaseTtlMs?: number;
  heartbeatMs?: number;
  wakeGraceMs?: number;
  sweepEveryMs: number;
}

/** Runs one phase of the workload on our runtime. */
export async function runOurs(ours: Ours, p: OursPhase): Promise<PhaseResult> {
  ours.sweepEveryMs = p.sweepEveryMs;
  const timers: Record<string, string> = {};
  if (p.leaseTtlMs !== undefined) timers.LEASE_TTL_MS = String(p.leaseTtlMs);
  if (p.heartbeatMs !== undefined) timers.HEARTBEAT_MS = String(p.heartbeatMs);
  if (p.wakeGraceMs !== undefined) timers.WAKE_GRACE_MS = String(p.wakeGraceMs);
  const worker = new WorkerProcess({
    name: 'our step worker',
    args: [new URL('./ours-worker.ts', import.meta.url).pathname],
    env: { OURS_CONFIG: JSON.stringify(ours.config), STEP_LOG: p.logPath, ...timers },
    readyPrefix: 'ready',
  });
  await worker.start();
  const labels = runLabels(`ours-${p.phase}`, p.runs);
  const loadBefore = load();
  const storeBefore = { ...ours.stack.runtime.store.metrics };
  const workerBefore = await worker.ask<WorkerMetrics>('metrics');
  const dynamoPort = new URL(ours.stack.services.dynamoEndpoint).port;
  const jvm = childWhoseCommandHas(`-port ${dynamoPort}`);
  const cpu = p.crash ? null : cpuMeter({ dynamodb_local: () => [jvm], step_worker: () => [worker.pid] });
  const started = preciseNow();
  const ids = await Promise.all(
    labels.map(async (run) => {
      const created = await ours.client.createRun({
        subject: { workspace: 'bench', path: `/peers/${run}` },
        reducer: { function_path: REDUCER_PATH },
        input: { run, steps: p.steps },
      });
      return created.run.run_id;
    }),
  );
  const finished = untilAllComplete(ours.client, labels, ids, p.logPath, p.steps, p.crash ? 1_000 : 5_000);
  const kills = p.crash
    ? killRepeatedly(
        worker,
        p.crash,
        { executed: () => countSteps(p.logPath), total: p.runs * p.steps },
        finished,
      )
    : null;
  const wallEnd = await finished;
  const crashed = kills === null ? null : await kills;
  const wall = wallEnd - started;
  const cpuUsed = cpu?.stop() ?? null;
  const loadAfter = load();

  let storage: Record<string, number> | null = null;
  const total = p.runs * p.steps;
  if (crashed === null) {
    const answer = await worker.ask<WorkerMetrics>('metrics');
    const w = answer.store;
    const s = ours.stack.runtime.store.metrics;
    const d = (k: keyof StoreMetrics) => w[k] - workerBefore.store[k] + (s[k] - storeBefore[k]);
    // Who sent them: the step worker (the hot path), and the local control plane in this
    // process (the driver's creates and its GET /runs/{id} polls, the sweeper's passes).
    const requests = (m: StoreMetrics) => m.writeRequests + m.reads + m.queries;
    const functionReads = answer.functionReads - workerBefore.functionReads;
    storage = perStep(
      {
        step_worker_requests: requests(w) - requests(workerBefore.store) + functionReads,
        control_plane_requests: requests(s) - requests(storeBefore),
        commits: d('transactions'),
        write_requests: d('writeRequests'),
        transaction_retries: d('transactionRetries'),
        get_item: d('reads'),
        query: d('queries'),
        function_registry_get_item: functionReads,
        write_capacity_units: d('writeCapacity'),
        read_capacity_units: d('readCapacity'),
      },
      total,
    );
  }
  await worker.stop();
  const floor = crashed === null ? await dynamoFloor(ours) : null;

  const lines = readStepLog(p.logPath);
  let outcomeUnknown = 0;
  const takeovers = new Map<string, number[]>();
  if (crashed !== null) {
    for (const [i, id] of ids.entries()) {
      const page = await ours.client.events(id, { limit: 1000 });
      outcomeUnknown += page.events.filter(
        (e) => e.kind === 'operation_failed' && e.data.outcome_unknown === true,
      ).length;
      takeovers.set(
        labels[i] ?? id,
        page.events.filter((e) => e.kind === 'lease_taken_over').map((e) => e.at),
      );
    }
  }
  return {
    system: 'ours',
    phase: p.phase,
    runs: p.runs,
    steps_per_run: p.steps,
    wall_ms: Math.round(wall),
    steps_per_second: stepsPerSecond(total, wall),
    log: analyzeSteps(lines, labels, p.steps),
    storage_per_step: storage,
    cpu_ms_per_step: cpuPerStep(cpuUsed, total),
    crash:
      crashed === null
        ? null
        : {
            kills: crashed.kills.length,
            restart_ms: crashed.restart_ms,
            recovery: recoveryGaps(lines, crashed.kills),
            recovery_breakdown: recoveryBreakdown(lines, crashed.kills, takeovers),
            outcome_unknown: outcomeUnknown,
          },
    load: { before: loadBefore, after: loadAfter },
    ...(floor !== null && { floor }),
    settings: {
      worker_processes: 1,
      pollers_per_worker: 4,
      batch_size: 10,
      lease_ttl_ms: p.leaseTtlMs ?? 90_000,
      heartbeat_ms: p.heartbeatMs ?? 30_000,
      wake_grace_ms: p.wakeGraceMs ?? 60_000,
      sweep_every_ms: p.sweepEveryMs,
      storage: ours.inMemory
        ? 'DynamoDB Local in memory (not durable), fauxqs SQS + S3 in the bench process'
        : 'DynamoDB Local persisted to disk (-dbPath), fauxqs SQS + S3 in the bench process',
    },
  };
}

interface WorkerMetrics {
  store: StoreMetrics;
  functionReads: number;
}

/**
 * The storage floor right after the phase, on the same DynamoDB Local: sequential raw requests
 * from this process, one at a time (ms each): a consistent GetItem of a 1 KB item and a
 * TransactWriteItems of one 1 KB Put.
 */
async function dynamoFloor(ours: Ours): Promise<{ get_item: Series; transact_write_one_put: Series }> {
  const doc = ours.stack.runtime.clients.doc;
  const TableName = ours.stack.resources.tableName;
  const pk = `FLOOR#${randomUUID()}`;
  const body = 'x'.repeat(1_000);
  const gets: number[] = [];
  const writes: number[] = [];
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
  return { get_item: summarize(gets), transact_write_one_put: summarize(writes) };
}

/**
 * Resolves with the time (epoch ms) the last run was seen terminal through `GET /runs/{id}`.
 * A run is read every 50 ms once its last step is in the step log, and every `slowMs` anyway
 * (a run whose last step ended outcome_unknown, or never ran, finishes without that line).
 */
async function untilAllComplete(
  client: AgentRunsClient,
  labels: string[],
  ids: string[],
  logPath: string,
  steps: number,
  slowMs: number,
): Promise<number> {
  const open = new Map(labels.map((label, i) => [label, { id: ids[i] ?? '', checked: Date.now() }]));
  let last = preciseNow();
  while (open.size > 0) {
    const lastSteps = new Set(
      readStepLog(logPath)
        .filter((l) => l.n === steps)
        .map((l) => l.run),
    );
    const now = Date.now();
    const due = [...open].filter(
      ([label, r]) => (lastSteps.has(label) && now - r.checked >= 50) || now - r.checked >= slowMs,
    );
    await Promise.all(
      due.map(async ([label, r]) => {
        r.checked = Date.now();
        const record = await client.getRun(r.id);
        if (isTerminalStatus(record.status)) {
          open.delete(label);
          last = preciseNow();
        }
      }),
    );
    await sleep(25);
  }
  return last;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
