/**
 * Restate in the peer bench: the server from the npm package `@restatedev/restate-server`
 * started in a temporary folder on free ports (TCP only, telemetry off, defaults otherwise), the
 * service endpoint (bench/peers/restate-service.ts) in its own process, registered as a
 * deployment through the admin API, and the workload invoked through the ingress with the typed
 * client of `@restatedev/restate-sdk-clients` (one request-response call per run). The crash
 * phase kills the endpoint process with SIGKILL and starts it again on the same port; the server
 * keeps the invocations and retries them. Storage writes are read from the server's Prometheus
 * metrics (log records committed, RocksDB write batches). Issue 19.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as clients from '@restatedev/restate-sdk-clients';
import { cpuMeter } from './cpu.ts';
import { type CrashPlan, freePort, killRepeatedly, WorkerProcess } from './processes.ts';
import type { Agent } from './restate-service.ts';
import {
  analyzeSteps,
  countSteps,
  cpuPerStep,
  load,
  type PhaseResult,
  perStep,
  preciseNow,
  readStepLog,
  recoveryGaps,
  runLabels,
  stepsPerSecond,
} from './workload.ts';

const require = createRequire(import.meta.url);

export interface Restate {
  ingressUrl: string;
  adminUrl: string;
  metricsUrl: string;
  version: string;
  sdkVersion: string;
  endpointPort: number;
  serverPid: number | undefined;
  /** Whether the endpoint's deployment is registered (it is, after the first phase). */
  registered: boolean;
  stop(): Promise<void>;
}

/** Starts restate-server in `dir` and waits until its admin and ingress answer. */
export async function startRestate(dir: string): Promise<Restate> {
  const binary = require.resolve(
    `@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`,
  );
  mkdirSync(dir, { recursive: true });
  const [admin, ingress, fabric, endpointPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const child: ChildProcess = spawn(binary, ['--base-dir', dir, '--node-name', 'bench', '--no-logo'], {
    cwd: dir,
    env: {
      ...process.env,
      RESTATE_LISTEN_MODE: 'tcp',
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${admin}`,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingress}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${fabric}`,
      RESTATE_DISABLE_TELEMETRY: 'true',
      RESTATE_LOG_FILTER: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (b: Buffer) => {
    output = (output + b.toString('utf8')).slice(-8_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const adminUrl = `http://127.0.0.1:${admin}`;
  const ingressUrl = `http://127.0.0.1:${ingress}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`restate-server exited (code ${child.exitCode}):\n${output}`);
    const up = await Promise.all([ok(`${adminUrl}/health`), ok(`${ingressUrl}/restate/health`)]);
    if (up.every(Boolean)) break;
    if (Date.now() > deadline) throw new Error(`restate-server did not answer in 60 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const version = ((await (await fetch(`${adminUrl}/version`)).json()) as { version: string }).version;
  const sdk = JSON.parse(readFileSync(require.resolve('@restatedev/restate-sdk/package.json'), 'utf8')) as {
    version: string;
  };
  return {
    ingressUrl,
    adminUrl,
    metricsUrl: `http://127.0.0.1:${fabric}/metrics`,
    version,
    sdkVersion: sdk.version,
    endpointPort,
    serverPid: child.pid,
    registered: false,
    async stop() {
      if (child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.kill('SIGTERM');
      await gone;
      clearTimeout(force);
    },
  };
}

async function ok(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok;
  } catch {
    return false;
  }
}

/** Sums of the server's storage counters: log records and bytes committed, RocksDB write batches. */
async function storageCounters(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text();
  const sum = (name: string, filter = '') =>
    text
      .split('\n')
      .filter((l) => l.startsWith(name) && l.includes(filter))
      .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return {
    log_records_committed: sum('restate_bifrost_sequencer_committed_records_total'),
    log_bytes_committed: sum('restate_bifrost_sequencer_committed_records_bytes_total'),
    rocksdb_write_batches: sum('restate_rocksdb_manager_io_operation_total', 'operation="write-batch"'),
  };
}

export interface RestatePhase {
  phase: 'steady' | 'crash';
  runs: number;
  steps: number;
  logPath: string;
  crash?: CrashPlan;
}

/** Runs one phase of the workload on Restate. */
export async function runRestate(rs: Restate, p: RestatePhase): Promise<PhaseResult> {
  const endpoint = new WorkerProcess({
    name: 'restate service endpoint',
    args: [new URL('./restate-service.ts', import.meta.url).pathname],
    env: { PORT: String(rs.endpointPort), STEP_LOG: p.logPath },
    readyPrefix: 'ready',
  });
  await endpoint.start();
  if (!rs.registered) {
    const response = await fetch(`${rs.adminUrl}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${rs.endpointPort}`, force: true }),
    });
    if (!response.ok) throw new Error(`deployment registration failed: ${await response.text()}`);
    rs.registered = true;
  }
  const ingress = clients.connect({ url: rs.ingressUrl });
  const agent = ingress.serviceClient<Agent>({ name: 'agent' });
  const labels = runLabels(`restate-${p.phase}`, p.runs);
  const loadBefore = load();
  const before = await storageCounters(rs.metricsUrl);
  const cpu = p.crash ? null : cpuMeter({ server: () => [rs.serverPid], endpoint: () => [endpoint.pid] });
  const started = preciseNow();
  let last = started;
  const calls = Promise.all(
    labels.map(async (run) => {
      await agent.run({ run, steps: p.steps });
      last = preciseNow();
    }),
  );
  const kills = p.crash
    ? killRepeatedly(
        endpoint,
        p.crash,
        { executed: () => countSteps(p.logPath), total: p.runs * p.steps },
        calls,
      )
    : null;
  await calls;
  const crashed = kills === null ? null : await kills;
  const wall = last - started;
  const cpuUsed = cpu?.stop() ?? null;
  const loadAfter = load();
  const after = await storageCounters(rs.metricsUrl);
  await endpoint.stop();
  const total = p.runs * p.steps;
  const lines = readStepLog(p.logPath);
  return {
    system: 'restate',
    phase: p.phase,
    runs: p.runs,
    steps_per_run: p.steps,
    wall_ms: Math.round(wall),
    steps_per_second: stepsPerSecond(total, wall),
    log: analyzeSteps(lines, labels, p.steps),
    cpu_ms_per_step: cpuPerStep(cpuUsed, total),
    storage_per_step: perStep(
      Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)])),
      total,
    ),
    crash:
      crashed === null
        ? null
        : {
            kills: crashed.kills.length,
            restart_ms: crashed.restart_ms,
            recovery: recoveryGaps(lines, crashed.kills),
            outcome_unknown: null,
          },
    load: { before: loadBefore, after: loadAfter },
    settings: {
      endpoint_processes: 1,
      server: 'restate-server defaults (24 partitions, RocksDB WAL fsync on), TCP only, telemetry off',
      retry_policy: 'server default (500 ms initial, x2, at most 1 min)',
      base_dir: join('(tmp)', 'restate'),
    },
  };
}
