/**
 * Our runtime in the peer bench, driven as a user drives it: the local stack (`startLocalStack`:
 * DynamoDB Local persisted to a temporary folder, fauxqs, the HTTP API) and the sweeper in a
 * control-plane process of their own (bench/peers/ours-stack.ts, so that its CPU is the system's,
 * not the driver's), the step poller in a separate worker process (bench/peers/ours-worker.ts)
 * that the crash phase kills with SIGKILL, and the workload submitted through the HTTP client
 * (lib/client): the reducer registered with `PUT /functions/...`, one `POST /runs` per run, each
 * run's completion read with `GET /runs/{id}`. Issue 19.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import { isTerminalStatus } from '../../lib/contracts/index.ts';
import type { StoreMetrics } from '../../lib/engine/ports.ts';
import { cpuMeter } from './cpu.ts';
import type { OursStackOptions, OursStackReady, StorageFloor } from './ours-stack.ts';
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
  StepLogTail,
  stepsPerSecond,
} from './workload.ts';

const REDUCER_PATH = '/bench/agent-steps';
/** The local stack's visibility timeout for the step queue here (s): above a step's deadline in both phases. */
const VISIBILITY_S = 60;

export interface Ours {
  /** The control plane's process (bench/peers/ours-stack.ts): the local stack and the sweeper. */
  stack: WorkerProcess;
  client: AgentRunsClient;
  config: OursWorkerConfig;
  /** DynamoDB Local's JVM. */
  dynamoPid: number;
  inMemory: boolean;
  version: string;
  /** Sets the time between sweeper passes (ms); changed per phase. */
  setSweepEveryMs(ms: number): Promise<void>;
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

/**
 * Starts the control plane's process (the local stack without its step poller, and the sweeper
 * loop) and registers the reducer over HTTP.
 */
export async function startOurs(dir: string, options: OursOptions = {}): Promise<Ours> {
  // DynamoDB Local needs a Java 17+ runtime.
  if (process.env.JAVA_HOME === undefined && spawnSync('java', ['-version']).error !== undefined) {
    aptGetInstall('openjdk-17-jre-headless', 'java not found (DynamoDB Local needs it)');
  }
  const stackOptions: OursStackOptions = {
    dir,
    inMemory: options.inMemory === true,
    ...(options.wakeGraceMs !== undefined && { wakeGraceMs: options.wakeGraceMs }),
    ...(options.leaseTtlMs !== undefined && { leaseTtlMs: options.leaseTtlMs }),
    visibilityTimeoutSeconds: VISIBILITY_S,
  };
  const stack = new WorkerProcess({
    name: 'our control plane',
    args: [new URL('./ours-stack.ts', import.meta.url).pathname],
    env: { OURS_STACK: JSON.stringify(stackOptions) },
    readyPrefix: 'ready',
    readyTimeoutMs: 120_000,
  });
  await stack.start();
  const ready = JSON.parse(stack.readyLine) as OursStackReady;
  const client = createClient({ baseUrl: ready.url, token: ready.token });
  await client.putFunction(
    REDUCER_PATH,
    new Uint8Array(readFileSync(new URL('./agent-steps.js', import.meta.url))),
    'js',
  );
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return {
    stack,
    client,
    config: ready.config,
    dynamoPid: ready.dynamoPid,
    inMemory: options.inMemory === true,
    version: pkg.version,
    async setSweepEveryMs(ms) {
      await stack.ask({ sweepEveryMs: ms });
    },
    stop: () => stack.stop(30_000),
  };
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
  await ours.setSweepEveryMs(p.sweepEveryMs);
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
  const storeBefore = await ours.stack.ask<StoreMetrics>('metrics');
  const workerBefore = await worker.ask<WorkerMetrics>('metrics');
  const cpu = p.crash
    ? null
    : cpuMeter({
        dynamodb_local: () => [ours.dynamoPid],
        control_plane: () => [ours.stack.pid],
        step_worker: () => [worker.pid],
      });
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
    const s = await ours.stack.ask<StoreMetrics>('metrics');
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
  const floor = crashed === null ? await ours.stack.ask<StorageFloor>('floor', 120_000) : null;

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
  const log = new StepLogTail(logPath);
  const lastSteps = new Set<string>();
  while (open.size > 0) {
    for (const l of log.next()) if (l.n === steps) lastSteps.add(l.run);
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
