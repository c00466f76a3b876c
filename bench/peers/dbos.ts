/**
 * DBOS in the peer bench: a PostgreSQL cluster in a temporary folder (bench/peers/postgres.ts)
 * as DBOS's system database, the application (bench/peers/dbos-app.ts) in its own process, and
 * the workload submitted over its HTTP endpoint, one request per run that answers the
 * workflow's result; a request cut by a kill is sent again with the same workflow ID, which DBOS
 * turns into a handle on the same workflow. The crash phase kills the application process with
 * SIGKILL and starts it again; DBOS recovers its pending workflows at launch. Storage writes are
 * read from PostgreSQL: transactions committed, rows written and WAL bytes. Issue 19.
 */
import { cpuMeter, descendants } from './cpu.ts';
import type { Postgres } from './postgres.ts';
import { type CrashPlan, freePort, killRepeatedly, WorkerProcess } from './processes.ts';
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

const DATABASE = 'dbos_bench';

export interface DbosPhase {
  phase: 'steady' | 'crash';
  runs: number;
  steps: number;
  logPath: string;
  crash?: CrashPlan;
}

function storageCounters(pg: Postgres): Record<string, number> {
  const row = pg
    .sql(
      'postgres',
      `select xact_commit, tup_inserted + tup_updated + tup_deleted from pg_stat_database where datname = '${DATABASE}'`,
    )
    .split('|')
    .map(Number);
  const wal = pg.sql('postgres', `select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')`);
  return { transactions_committed: row[0] ?? 0, rows_written: row[1] ?? 0, wal_bytes: Number(wal) };
}

/** Runs one phase of the workload on DBOS. */
export async function runDbos(pg: Postgres, p: DbosPhase): Promise<PhaseResult> {
  const port = await freePort();
  const app = new WorkerProcess({
    name: 'DBOS application',
    args: [new URL('./dbos-app.ts', import.meta.url).pathname],
    env: { DBOS_SYSTEM_DATABASE_URL: pg.url(DATABASE), PORT: String(port), STEP_LOG: p.logPath },
    readyPrefix: 'ready',
  });
  await app.start();
  const labels = runLabels(`dbos-${p.phase}`, p.runs);
  const loadBefore = load();
  const before = storageCounters(pg);
  const postmaster = pg.pid();
  const cpu = p.crash
    ? null
    : cpuMeter({ postgres: () => [postmaster, ...descendants(postmaster)], application: () => [app.pid] });
  const started = preciseNow();
  let last = started;
  const calls = Promise.all(
    labels.map(async (run) => {
      for (;;) {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/runs/${run}?steps=${p.steps}`, {
            method: 'POST',
          });
          if (response.ok) break;
        } catch {
          // the application was killed: send the same workflow ID again once it is back
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      last = preciseNow();
    }),
  );
  const kills = p.crash
    ? killRepeatedly(app, p.crash, { executed: () => countSteps(p.logPath), total: p.runs * p.steps }, calls)
    : null;
  await calls;
  const crashed = kills === null ? null : await kills;
  const wall = last - started;
  const cpuUsed = cpu?.stop() ?? null;
  const loadAfter = load();
  // A backend publishes its statistics when it exits (or after 10 s idle): stop the app first.
  await app.stop();
  await settleStats();
  const after = storageCounters(pg);
  const total = p.runs * p.steps;
  const lines = readStepLog(p.logPath);
  return {
    system: 'dbos',
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
      application_processes: 1,
      postgres: 'server defaults (fsync, synchronous_commit on), trust auth on 127.0.0.1',
      step_retries: 'DBOS default (none; a step interrupted by a crash runs again on recovery)',
    },
  };
}

/** The statistics of a backend that exited reach pg_stat_database within a moment. */
const settleStats = () => new Promise((r) => setTimeout(r, 1_500));
