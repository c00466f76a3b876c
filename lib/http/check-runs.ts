/**
 * The reducer check over stored runs, as a deployment runs it (the admin route
 * `POST /admin/reducers/check`): the runs are read through the engine's reads as the caller,
 * each one's log is built as `runs export` builds it (run-log.ts), and each is checked against
 * one artifact (reducer-check.ts). Bounded: at most `limit` runs, and no run is started once
 * `timeBudgetMs` has passed (the runs left are reported skipped).
 */
import { RUN_STATUSES, type RunEvent, type RunRecord } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import type { Engine } from '../engine/engine.ts';
import { checkRunLog, checkTotals, type RunCheck } from '../engine/upgrade/reducer-check.ts';
import { exportRunLog, parseRunLog, type RunLogReader } from '../engine/upgrade/run-log.ts';
import { createCheckHost } from '../sandbox/check-host.ts';
import type { ArtifactKind } from '../sandbox/function-registry.ts';

/** The engine reads a check needs. */
export type CheckReads = Pick<Engine, 'getRun' | 'readEvents' | 'listCheckpoints' | 'getState' | 'listRuns'>;

/** The reads and the control an upgrade needs. */
export type UpgradeUseCases = CheckReads & Pick<Engine, 'applyControl'>;

/** Which runs to check: the ids given, or the runs bound to `function_path` (newest first per status). */
export type RunSelection = { run_ids: string[] } | { function_path: string };

export interface CheckRunsOptions {
  artifact: { kind: ArtifactKind; bytes: Uint8Array };
  selection: RunSelection;
  /** At most this many runs are checked (1..50). */
  limit: number;
  /** No run is started after this many ms; the rest are reported skipped. */
  timeBudgetMs: number;
  /** ms epoch; the elapsed time is measured with it. */
  now: () => number;
}

/** The answer: per run, identical / diverged / skipped; totals; `truncated` when `limit` cut the selection. */
export interface CheckRunsReport {
  runs: RunCheck[];
  totals: ReturnType<typeof checkTotals>;
  truncated: boolean;
}

/** A RunLogReader over the engine's reads, as `caller` (what they refuse, the export rejects with). */
export function engineLogReader(reads: CheckReads, caller: Caller): RunLogReader {
  return {
    getRun: (runId) => reads.getRun(runId, caller),
    events: async (runId, { after, limit }): Promise<{ events: RunEvent[] }> => ({
      events: await reads.readEvents(runId, caller, after, limit),
    }),
    checkpoints: (runId) => reads.listCheckpoints(runId, caller),
    state: (runId, { rev }) => reads.getState(runId, caller, rev),
  };
}

/**
 * The ids of up to `limit + 1` runs the caller may list that are bound to `functionPath` (of
 * `statuses`, default every one).
 */
async function runsBoundTo(
  reads: CheckReads,
  caller: Caller,
  functionPath: string,
  limit: number,
  statuses: readonly RunRecord['status'][] = RUN_STATUSES,
  keep: (run: RunRecord) => boolean = () => true,
): Promise<string[]> {
  const ids: string[] = [];
  for (const status of statuses) {
    let cursor: string | undefined;
    do {
      const page = await reads.listRuns({ status, limit: 100, ...(cursor ? { cursor } : {}) }, caller);
      for (const run of page.runs as RunRecord[]) {
        if (run.reducer?.function_path === functionPath && keep(run)) ids.push(run.run_id);
        if (ids.length > limit) return ids;
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
  return ids;
}

/**
 * Checks the selected runs against the artifact, one after another. Rejects with the engine's
 * EngineError when a named run cannot be read by the caller (run_not_found, unauthorized);
 * a reducer fault of the artifact is an answer (a divergence), never a rejection.
 */
export async function checkRuns(
  reads: CheckReads,
  caller: Caller,
  options: CheckRunsOptions,
): Promise<CheckRunsReport> {
  const started = options.now();
  const selected =
    'run_ids' in options.selection
      ? [...new Set(options.selection.run_ids)]
      : await runsBoundTo(reads, caller, options.selection.function_path, options.limit);
  const truncated = selected.length > options.limit;
  const ids = selected.slice(0, options.limit);
  const reader = engineLogReader(reads, caller);
  const host = createCheckHost(options.artifact);
  const runs: RunCheck[] = [];
  try {
    for (const runId of ids) {
      if (options.now() - started >= options.timeBudgetMs) {
        runs.push({ run_id: runId, result: 'skipped', deliveries: 0, reason: 'time budget spent' });
        continue;
      }
      const log = parseRunLog(await exportRunLog(reader, runId, options.now()), `run ${runId}`);
      runs.push(await checkRunLog(host, log));
    }
  } finally {
    await host.close();
  }
  return { runs, totals: checkTotals(runs), truncated };
}

/** One run of an upgrade: resumed on the new artifact (the resume's seq), or refused and why. */
export type RunUpgrade =
  | { run_id: string; result: 'upgraded'; seq: number }
  | {
      run_id: string;
      result: 'refused';
      /** `diverged` (event_seq, diff), `skipped` (reason), or the resume's rejection reason. */
      reason: string;
      event_seq?: number;
      diff?: string[];
    };

/**
 * The upgrade policy (`POST /admin/reducers/upgrade`): every run bound to `functionPath` that is
 * paused `reducer_changed` (up to `limit`, as the caller lists them) is checked against the
 * artifact published now; a run whose check is identical is resumed accepting the change, one
 * control (one commit) per run, with the control id `upgrade:<hash>` so that a repeat is a
 * duplicate; the rest are refused with their divergence. Rejects as checkRuns does.
 */
export async function upgradeRuns(
  engine: UpgradeUseCases,
  caller: Caller,
  options: Omit<CheckRunsOptions, 'selection'> & { functionPath: string; hash: string },
): Promise<{ runs: RunUpgrade[]; truncated: boolean }> {
  const ids = await runsBoundTo(
    engine,
    caller,
    options.functionPath,
    options.limit,
    ['paused'],
    (run) => run.status === 'paused' && run.pause_reason === 'reducer_changed',
  );
  const checked = await checkRuns(engine, caller, {
    ...options,
    selection: { run_ids: ids.slice(0, options.limit) },
  });
  const runs: RunUpgrade[] = [];
  for (const check of checked.runs) {
    if (check.result === 'diverged') {
      runs.push({
        run_id: check.run_id,
        result: 'refused',
        reason: 'diverged',
        event_seq: check.event_seq,
        diff: check.diff,
      });
      continue;
    }
    if (check.result === 'skipped') {
      runs.push({ run_id: check.run_id, result: 'refused', reason: `skipped: ${check.reason}` });
      continue;
    }
    const control = { control_id: `upgrade:${options.hash}`, command: 'resume', accept_reducer_change: true };
    const ack = await engine.applyControl(check.run_id, control, caller);
    runs.push(
      ack.ack === 'rejected'
        ? { run_id: check.run_id, result: 'refused', reason: ack.reason }
        : {
            run_id: check.run_id,
            result: 'upgraded',
            seq: ack.ack === 'applied' ? ack.seq : ack.original_seq,
          },
    );
  }
  return { runs, truncated: ids.length > options.limit };
}
