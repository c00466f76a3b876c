/**
 * Accept with evidence (EngineOptions.requireReducerCheck): before a resume that accepts a
 * reducer change is decided, the run's whole log is checked against the artifact published now
 * at the run's path (lib/engine/upgrade/reducer-check.ts, through the engine's own reducer host, unpinned).
 * Only `identical` passes; a divergence, a fork (not checkable) or a fault of the new artifact
 * does not.
 */
import type { Control, RunEvent } from '../contracts/index.ts';
import type { EngineDeps } from './deps.ts';
import { checkRunLog } from './upgrade/reducer-check.ts';
import { parseRunLog, runLogOf } from './upgrade/run-log.ts';

const PAGE = 1000;

/**
 * The check's verdict for `control` on `runId`, or undefined when none is needed (not required,
 * not a resume accepting a change, or the run not paused `reducer_changed`). Reads the run, its
 * events, checkpoints and the state revisions they reference; never throws for a reducer fault.
 */
export async function reducerEvidence(
  deps: EngineDeps,
  runId: string,
  control: Control,
): Promise<{ passed: boolean } | undefined> {
  if (!deps.requireReducerCheck || control.command !== 'resume' || control.accept_reducer_change !== true) {
    return undefined;
  }
  const record = await deps.store.getRun(runId);
  if (record?.status !== 'paused' || record.pause_reason !== 'reducer_changed' || record.reducer === null) {
    return undefined;
  }
  const events: RunEvent[] = [];
  while (events.length < record.last_seq) {
    const page = await deps.store.readEvents(runId, events.length, PAGE);
    if (page.length === 0) break;
    events.push(...page);
  }
  const checkpoints = await deps.store.listCheckpoints(runId);
  const states: { state_rev: number; state: unknown }[] = [];
  const revs = new Set([record.state_rev, ...checkpoints.map((c) => c.state_rev)]);
  for (const rev of [...revs].filter((r) => r > 0).sort((a, b) => a - b)) {
    const at =
      rev === record.state_rev ? record.state_at : checkpoints.find((c) => c.state_rev === rev)?.state_at;
    states.push({ state_rev: rev, state: await deps.store.getState(runId, rev, at) });
  }
  const log = parseRunLog(
    JSON.parse(
      JSON.stringify(runLogOf({ run: record, events, checkpoints, states, exportedAt: deps.clock.now() })),
    ),
    `run ${runId}`,
  );
  const check = await checkRunLog(deps.reducers, log, record.reducer.function_path);
  return { passed: check.result === 'identical' };
}
