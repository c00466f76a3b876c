/**
 * The time-travel read (`GET /runs/{id}/at/{seq}`): a run as it stood at one seq, from its log,
 * its checkpoints and the states it stored, without a new run (lib/engine/upgrade/run-at.ts does the
 * folding; the run's pinned reducer, through the engine's reducer host, gives the projection).
 * Authorization is the other reads' (readRun).
 */
import type { RunEvent } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';
import { readRun } from './reads.ts';
import { readState } from './state-reads.ts';
import { type RunAtSeq, runAtSeq } from './upgrade/run-at.ts';

const PAGE = 1000;

/**
 * `runId` as it stood at `seq`. Throws EngineError run_not_found / capability_invalid (readRun),
 * seq_not_found (seq outside 1..last_seq). Reads the events up to `seq` page by page, the
 * checkpoints, and each state revision it needs once.
 */
export async function readRunAt(
  deps: EngineDeps,
  runId: string,
  caller: Caller,
  seq: number,
): Promise<RunAtSeq> {
  const record = await readRun(deps, runId, caller);
  if (!Number.isInteger(seq) || seq < 1 || seq > record.last_seq) {
    throw new EngineError(
      'seq_not_found',
      `run ${runId} has no event of seq ${seq} (last_seq ${record.last_seq})`,
      {
        run_id: runId,
        seq,
        last_seq: record.last_seq,
      },
    );
  }
  const events: RunEvent[] = [];
  while (events.length < seq) {
    const page = await deps.store.readEvents(runId, events.length, Math.min(PAGE, seq - events.length));
    if (page.length === 0) break;
    events.push(...page);
  }
  const checkpoints = await deps.store.listCheckpoints(runId);
  const load = async (rev: number): Promise<unknown> => {
    try {
      return (await readState(deps, runId, caller, rev)).state;
    } catch (err) {
      if (err instanceof EngineError && err.code === 'state_not_found') return undefined;
      throw err;
    }
  };
  return runAtSeq(deps.reducers, record, events, checkpoints, load, seq);
}
