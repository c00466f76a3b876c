/**
 * Reading a run's domain state back by revision (`GET /runs/{id}/state?rev=`): the revision
 * the record holds, or one a checkpoint references. Domain state is write-once (a revision's
 * item is written with a condition that it does not exist), so what is read for a revision never
 * changes. Authorization is the other reads' (readRun: core/authority.ts's accessOf).
 * docs/contracts/run-lifecycle.md, "Storage and cluster behaviour" (`dom/{rev}`: write-once domain
 * state), "Checkpoints".
 */
import type { RunRecord, StateRevision } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { digestOf } from '../core/canonical.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';
import { readRun } from './reads.ts';

/**
 * One domain state revision of a run, as `GET /runs/{id}/state` answers it (the contract's
 * StateRevision). `state_digest`: sha256 hex of its canonical JSON. Where it is stored (its
 * item's sort key) stays inside: it is not part of the answer.
 */
export type { StateRevision } from '../contracts/index.ts';

/**
 * Where revision `rev` of `record` is stored: the record's own item for its revision, a
 * checkpoint's for one it references, else the `D#{rev}` item (a commit without events).
 */
async function locate(deps: EngineDeps, record: RunRecord, rev: number): Promise<string | undefined> {
  if (rev === record.state_rev) return record.state_at;
  const checkpoints = await deps.store.listCheckpoints(record.run_id);
  return checkpoints.find((c) => c.state_rev === rev && c.state_at !== undefined)?.state_at;
}

/**
 * Revision `rev` (default: the record's) of `runId`'s domain state. Throws EngineError
 * run_not_found / capability_invalid (readRun), state_not_found (a revision the run neither holds
 * nor stored: above its current one, or one a later answer replaced before any commit).
 */
export async function readState(
  deps: EngineDeps,
  runId: string,
  caller: Caller,
  rev?: number,
): Promise<StateRevision> {
  const record = await readRun(deps, runId, caller);
  const wanted = rev ?? record.state_rev;
  const notFound = () =>
    new EngineError('state_not_found', `run ${runId} holds no stored domain state of revision ${wanted}`, {
      run_id: runId,
      rev: wanted,
      current_rev: record.state_rev,
    });
  if (wanted > record.state_rev) throw notFound();
  if (wanted === 0) return { run_id: runId, state_rev: 0, state: null, state_digest: digestOf(null) };
  const at = await locate(deps, record, wanted);
  let state: unknown;
  try {
    state = await deps.store.getState(runId, wanted, at);
  } catch (err) {
    if (err instanceof Error && /missing|holds domain state/.test(err.message)) throw notFound();
    throw err;
  }
  return { run_id: runId, state_rev: wanted, state, state_digest: digestOf(state) };
}
