/**
 * Time travel: a run as it stood at one seq, from its log and the states it stored, without a
 * new run. The summary fields (status, turn, usage, open requests, unanswered calls) and the
 * state revision are folded from the events up to the seq (run-at-delivery.ts); the domain state
 * is the stored revision when the store holds it; the projection, which the log does not hold,
 * comes from sending the deliveries up to the seq to the run's pinned reducer again (each with the
 * state the run stored for it, as the reducer check does). When the pinned artifact is no longer
 * served, or it does not reproduce a recorded state revision, the projection (and a state the
 * store lost) is reported unknown. docs/contracts/run-lifecycle.md, "Projections", "Checkpoints".
 */
import type { Checkpoint, Projection, ReducerBinding, RunEvent, RunRecord } from '../../contracts/index.ts';
import { effectiveProjection } from '../../core/projection.ts';
import { reducerRequestFor, validateAnswer } from '../../core/reducer-outcome.ts';
import type { ReducerHost } from '../ports.ts';
import { deliveriesOf, type RunSummary, summaryAfter } from './run-at-delivery.ts';

/** The answer of `GET /runs/{id}/at/{seq}`. */
export interface RunAtSeq extends RunSummary {
  /** The seq asked for (last_seq equals it). */
  seq: number;
  /** The run's last seq now. */
  current_seq: number;
  state_rev: number;
  /** The domain state of `state_rev`, or null when `state_known` is false. */
  state: unknown;
  state_known: boolean;
  /** The effective projection then (core's effectiveProjection over the status then), or null. */
  projection: Projection | null;
  projection_known: boolean;
  /** Why `projection_known` (or `state_known`) is false. */
  unknown_reason?: string;
  /** The last checkpoint written at or before `seq` (its n and reason), or null. */
  checkpoint: { n: number; reason: string; state_rev: number } | null;
}

/** What the reducer's answers up to a seq say: the last projection set, the states they wrote. */
interface Replayed {
  projection: Projection | null;
  known: boolean;
  reason?: string;
}

/** Stored domain states by revision, read once each; `undefined` for a revision not stored. */
export type StateLoader = (rev: number) => Promise<unknown>;

/** `load` memoized, with revision 0 (null) and the revisions the replayed answers wrote. */
class States {
  private readonly known = new Map<number, unknown>([[0, null]]);
  private readonly load: StateLoader;
  constructor(load: StateLoader) {
    this.load = load;
  }
  async get(rev: number): Promise<{ found: boolean; state: unknown }> {
    if (!this.known.has(rev)) {
      const state = await this.load(rev);
      if (state === undefined) return { found: false, state: null };
      this.known.set(rev, state);
    }
    return { found: true, state: this.known.get(rev) };
  }
  wrote(rev: number, state: unknown): void {
    if (!this.known.has(rev)) this.known.set(rev, state);
  }
}

/**
 * Sends each delivery answered within `events` to `binding` again, each with the state the run
 * stored for its revision, and keeps the last projection set.
 */
async function replayProjection(
  host: ReducerHost,
  binding: ReducerBinding,
  run: Pick<RunRecord, 'run_id' | 'subject' | 'budgets'>,
  events: readonly RunEvent[],
  states: States,
): Promise<Replayed> {
  let projection: Projection | null = null;
  for (const d of deliveriesOf(run, events)) {
    if (d.recorded.kind !== 'answered') continue;
    const given = await states.get(d.state_rev);
    if (!given.found) {
      return { projection, known: false, reason: `state revision ${d.state_rev} is not stored` };
    }
    const record = { ...d.run, state_rev: d.state_rev } as unknown as Parameters<typeof reducerRequestFor>[0];
    const request = reducerRequestFor(record, given.state ?? null, d.event);
    if (request === null) continue;
    const res = await host.reduce(binding, request);
    if (res.kind !== 'answered') {
      const why =
        res.kind === 'unavailable'
          ? res.reason
          : res.kind === 'changed'
            ? 'the artifact changed'
            : res.message;
      return { projection, known: false, reason: `the pinned reducer did not answer: ${why}` };
    }
    const v = validateAnswer(request, res.response);
    if (!v.ok || v.response.refused !== null || v.response.state_rev !== Number(d.recorded.data.state_rev)) {
      return {
        projection,
        known: false,
        reason: `the pinned reducer does not reproduce the answer of seq ${d.recorded.seq}`,
      };
    }
    if (v.response.projection !== undefined) projection = v.response.projection;
    states.wrote(v.response.state_rev, v.response.state);
  }
  return { projection, known: true };
}

/**
 * The run `run` (the stored record now, its projection not yet made effective) as it stood at
 * `seq` (1..run.last_seq), from `events` (the log from seq 1, at least up to `seq`),
 * `checkpoints`, and `load` (a stored state revision, or undefined). `host` serves the run's
 * pinned reducer. Never throws for a reducer fault (the projection is then unknown).
 */
export async function runAtSeq(
  host: ReducerHost,
  run: RunRecord,
  events: readonly RunEvent[],
  checkpoints: readonly Checkpoint[],
  load: StateLoader,
  seq: number,
): Promise<RunAtSeq> {
  const upTo = events.filter((e) => e.seq <= seq);
  const then = summaryAfter(run, upTo);
  const states = new States(load);
  let replayed: Replayed;
  if (seq === run.last_seq) replayed = { projection: run.projection, known: true };
  else if (run.reducer === null)
    replayed = { projection: null, known: false, reason: 'no reducer: a client sets it' };
  else if (run.origin !== undefined) replayed = { projection: null, known: false, reason: 'a fork' };
  else replayed = await replayProjection(host, run.reducer, run, upTo, states);
  const state = await states.get(then.state_rev);
  const checkpoint = checkpoints.filter((c) => c.transcript_cutoff_seq <= seq).at(-1);
  return {
    ...then.run,
    seq,
    current_seq: run.last_seq,
    state_rev: then.state_rev,
    state: state.state,
    state_known: state.found,
    projection:
      replayed.projection === null ? null : effectiveProjection(replayed.projection, then.run.status),
    projection_known: replayed.known,
    ...(replayed.reason !== undefined || !state.found
      ? { unknown_reason: replayed.reason ?? `state revision ${then.state_rev} is not stored` }
      : {}),
    checkpoint:
      checkpoint === undefined
        ? null
        : { n: checkpoint.n, reason: checkpoint.reason, state_rev: checkpoint.state_rev },
  };
}
