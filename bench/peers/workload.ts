/**
 * The one workload of `npm run bench:peers`, shared by the three systems, and what is read off
 * it. A run is `steps` durable tool calls, one after the other, each answering a small JSON
 * result at once (no sleep); every fifth call is `charge`, a non-idempotent side effect (not
 * replay-safe), the others `lookup` (read-only, replay-safe). Every execution of a call, by any
 * system, appends one line to that system's step log (the side effect that is counted): a
 * (run, step) logged twice ran twice. Issue 19, "One workload, three runtimes, one run".
 */
import { appendFileSync, closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { loadavg } from 'node:os';

/** Every `CHARGE_EVERY`-th step is the non-idempotent `charge`. */
export const CHARGE_EVERY = 5;

export type StepKind = 'lookup' | 'charge';

/** The kind of step `n` (1-based). */
export function stepKind(n: number): StepKind {
  return n % CHARGE_EVERY === 0 ? 'charge' : 'lookup';
}

/** One line of a step log. `t` is epoch milliseconds with sub-millisecond precision (comparable across processes). */
export interface StepLine {
  run: string;
  n: number;
  kind: StepKind;
  t: number;
  pid: number;
}

/** Epoch milliseconds with the precision of `performance.now()`. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The tool body every system calls for step `n` of `run`: appends its line to `logPath` (one
 * `write` with O_APPEND, so concurrent writers never interleave a line) and answers a small JSON
 * result.
 */
export function executeStep(logPath: string, run: string, n: number): { run: string; n: number; ok: true } {
  const line: StepLine = { run, n, kind: stepKind(n), t: preciseNow(), pid: process.pid };
  appendFileSync(logPath, `${JSON.stringify(line)}\n`);
  return { run, n, ok: true };
}

/** How many executions a step log holds so far (its line count; missing file: 0). */
export function countSteps(logPath: string): number {
  try {
    const bytes = readFileSync(logPath);
    let lines = 0;
    for (const b of bytes) if (b === 10) lines += 1;
    return lines;
  } catch {
    return 0;
  }
}

/**
 * A step log read as it grows: each `next()` returns only the lines appended since the last
 * call (whole lines; a line being written is kept for the next call). A waiter that looks every
 * few ms reads each byte once instead of the whole log each time.
 */
export class StepLogTail {
  private offset = 0;
  private partial = '';
  private readonly logPath: string;
  constructor(logPath: string) {
    this.logPath = logPath;
  }

  next(): StepLine[] {
    let fd: number;
    try {
      fd = openSync(this.logPath, 'r');
    } catch {
      return [];
    }
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buffer = Buffer.alloc(size - this.offset);
      const read = readSync(fd, buffer, 0, buffer.length, this.offset);
      this.offset += read;
      const lines = (this.partial + buffer.subarray(0, read).toString('utf8')).split('\n');
      this.partial = lines.pop() ?? '';
      return lines.filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as StepLine);
    } finally {
      closeSync(fd);
    }
  }
}

/** Every line of a step log (missing file: none). */
export function readStepLog(logPath: string): StepLine[] {
  let text: string;
  try {
    text = readFileSync(logPath, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as StepLine);
}

// ---------------------------------------------------------------- statistics

export interface Series {
  n: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export function summarize(samples: number[]): Series {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1)))] ?? Number.NaN;
  return { n: sorted.length, p50_ms: round(at(0.5)), p99_ms: round(at(0.99)), max_ms: round(at(1)) };
}

/** What the step log of one workload says. */
export interface StepLogReport {
  executions: number;
  /** (run, step) pairs expected: runs × steps. */
  expected: number;
  /** Pairs that ran more than once (any kind), and the extra executions. */
  steps_run_twice_or_more: number;
  extra_executions: number;
  /** `charge` pairs that ran more than once: a non-idempotent side effect produced twice. */
  duplicate_side_effects: number;
  /** Pairs that never ran (a system that reports an unknown outcome instead of re-running). */
  never_ran: number;
  /** Time from one step's first execution to the next step's first execution, same run. */
  step_gap: Series;
}

/** Reads a step log against the plan (`runs` labels × `steps`). */
export function analyzeSteps(lines: StepLine[], runs: string[], steps: number): StepLogReport {
  const byPair = new Map<string, StepLine[]>();
  for (const l of lines) {
    const key = `${l.run}#${l.n}`;
    byPair.set(key, [...(byPair.get(key) ?? []), l]);
  }
  let twice = 0;
  let extra = 0;
  let duplicateCharges = 0;
  let never = 0;
  const gaps: number[] = [];
  for (const run of runs) {
    let previous: number | undefined;
    for (let n = 1; n <= steps; n += 1) {
      const execs = byPair.get(`${run}#${n}`) ?? [];
      if (execs.length === 0) never += 1;
      if (execs.length > 1) {
        twice += 1;
        extra += execs.length - 1;
        if (stepKind(n) === 'charge') duplicateCharges += 1;
      }
      const first = Math.min(...execs.map((e) => e.t));
      if (execs.length > 0 && previous !== undefined) gaps.push(first - previous);
      if (execs.length > 0) previous = first;
    }
  }
  return {
    executions: lines.length,
    expected: runs.length * steps,
    steps_run_twice_or_more: twice,
    extra_executions: extra,
    duplicate_side_effects: duplicateCharges,
    never_ran: never,
    step_gap: summarize(gaps),
  };
}

/**
 * How long runs stalled because of each kill: for every run, the gap between the last step
 * execution before a kill and the first one after it (only gaps that span a kill). A run with
 * nothing in flight at the kill still counts if its next step waited for the restart.
 */
export function recoveryGaps(lines: StepLine[], kills: number[]): Series {
  const byRun = new Map<string, number[]>();
  for (const l of lines) byRun.set(l.run, [...(byRun.get(l.run) ?? []), l.t]);
  const stalls: number[] = [];
  for (const times of byRun.values()) {
    times.sort((a, b) => a - b);
    for (const k of kills) {
      const after = times.find((t) => t > k);
      if (after === undefined || !times.some((t) => t <= k)) continue;
      stalls.push(after - k);
    }
  }
  return summarize(stalls);
}

/**
 * Where the time from a kill to a run's next step went, per run the kill stalled (the gaps
 * recoveryGaps measures): a run whose lease the sweeper took over (its `lease_taken_over` event
 * between the kill and that step) splits into kill → takeover (what is left of the dead
 * worker's lease, the sweeper's clock-skew allowance, the wait for the next sweep pass) and
 * takeover → step (the wake message, the queue, the restarted worker); a run that held no lease
 * at the kill (a step message in the dead worker's hands, or queued behind it) is kill → step.
 */
export function recoveryBreakdown(
  lines: StepLine[],
  kills: number[],
  takeovers: Map<string, number[]>,
): {
  taken_over: { kill_to_takeover: Series; takeover_to_step: Series };
  no_lease: { kill_to_step: Series };
} {
  const byRun = new Map<string, number[]>();
  for (const l of lines) byRun.set(l.run, [...(byRun.get(l.run) ?? []), l.t]);
  const toTakeover: number[] = [];
  const toStep: number[] = [];
  const unleased: number[] = [];
  for (const [run, times] of byRun) {
    times.sort((a, b) => a - b);
    for (const k of kills) {
      const after = times.find((t) => t > k);
      if (after === undefined || !times.some((t) => t <= k)) continue;
      const taken = (takeovers.get(run) ?? []).find((t) => t > k && t <= after);
      if (taken === undefined) unleased.push(after - k);
      else {
        toTakeover.push(taken - k);
        toStep.push(after - taken);
      }
    }
  }
  return {
    taken_over: { kill_to_takeover: summarize(toTakeover), takeover_to_step: summarize(toStep) },
    no_lease: { kill_to_step: summarize(unleased) },
  };
}

// ---------------------------------------------------------------- the machine

/** The 1-, 5- and 15-minute load averages, rounded, as `uptime` prints them. */
export function load(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

/** mulberry32: a small seeded PRNG, so a crash plan with the same seed kills at the same offsets. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------- one phase's result

/** What one system did in one phase (steady or crash) of the peer bench. */
export interface PhaseResult {
  system: 'ours' | 'restate' | 'dbos';
  phase: 'steady' | 'crash';
  runs: number;
  steps_per_run: number;
  /** First submission to the last run seen complete by the client, ms. */
  wall_ms: number;
  /** runs × steps / wall time. */
  steps_per_second: number;
  log: StepLogReport;
  /** Storage writes per step, as the system counts them (null where it cannot be read, e.g. after kills). */
  storage_per_step: Record<string, number> | null;
  crash: null | {
    kills: number;
    /** Kill to ready again, per kill (ms). */
    restart_ms: number[];
    /** Kill to each affected run's next step execution. */
    recovery: Series;
    /** Ours: the recovery split at the sweeper's takeover (ours.ts recoveryBreakdown). */
    recovery_breakdown?: {
      taken_over: { kill_to_takeover: Series; takeover_to_step: Series };
      no_lease: { kill_to_step: Series };
    };
    /** Operations the system closed as outcome unknown instead of running them again (ours). */
    outcome_unknown: number | null;
  };
  /**
   * CPU per step (ms, steady phase): `system`, the system's own processes (ours: DynamoDB Local's
   * JVM and the step worker; Restate: server and endpoint; DBOS: PostgreSQL and the application);
   * `driver`, the bench process (the clients and their waiting; ours' control plane, fauxqs and
   * the HTTP API run in a process of their own, counted as `control_plane`).
   */
  cpu_ms_per_step: { system: number; driver: number; parts: Record<string, number> } | null;
  /**
   * The storage's own latency right after the phase (ours: raw DynamoDB Local requests), and the
   * SDK's CPU per request of the process that sent them (ms).
   */
  floor?: { get_item?: Series; transact_write_one_put?: Series; sdk_cpu_ms_per_request?: number };
  /** Load averages (1, 5, 15 min) when the phase started and ended. */
  load: { before: string; after: string };
  settings: Record<string, unknown>;
}

/** The run labels of a phase: `{prefix}-{i}`. */
export function runLabels(prefix: string, runs: number): string[] {
  return Array.from({ length: runs }, (_, i) => `${prefix}-${i}`);
}

export function stepsPerSecond(total: number, wallMs: number): number {
  return Math.round((total / (wallMs / 1000)) * 10) / 10;
}

export function cpuPerStep(
  cpu: { system_ms: number; driver_ms: number; parts_ms: Record<string, number> } | null,
  steps: number,
) {
  if (cpu === null) return null;
  const r = (x: number) => Math.round((x / steps) * 100) / 100;
  const parts = Object.fromEntries(Object.entries(cpu.parts_ms).map(([k, v]) => [k, r(v)]));
  return { system: r(cpu.system_ms), driver: r(cpu.driver_ms), parts };
}

export function perStep(counters: Record<string, number>, steps: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counters).map(([k, v]) => [k, Math.round((v / steps) * 100) / 100]),
  );
}
