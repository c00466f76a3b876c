/**
 * The read side of the engine: a run's view, its events (with the long poll), listings, its
 * checkpoints and children. The HTTP layer reads only through here, so authorization is decided
 * once, before anything of a run is returned. docs/contracts/run-lifecycle.md, "Projections"
 * (readers get the effective projection), "Checkpoints"; docs/contracts/run-lifecycle.md,
 * "Controls".
 */
import { isTerminalStatus, type RunEvent, type RunRecord } from '../contracts/index.ts';
import { accessOf, type Caller, mayList } from '../core/authority.ts';
import { DEFAULT_PRICES, type PriceTables, withCost } from '../core/prices.ts';
import { effectiveProjection } from '../core/projection.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';
import { listVisibleByStatus } from './list-cursor.ts';
import type { CheckpointItem } from './ports.ts';
import { admitWorkspace } from './workspace-admission.ts';

/** A child run as its parent's listing shows it. */
export interface ChildRunSummary {
  run_id: string;
  status: RunRecord['status'];
  depth: number;
  parent_op_id?: string;
  created_at: number;
}

/** One page of a run's events, with where the run stands when the page was read. */
export interface EventPage {
  events: RunEvent[];
  /** The `after` to ask for next: the last seq of this page, or the request's `after`. */
  next_after: number;
  last_seq: number;
  status: RunRecord['status'];
  /** The run ended and its reducer received every event: no event will follow `last_seq`. */
  settled: boolean;
}

export interface EventQuery {
  /** Events with seq > after. */
  after: number;
  limit: number;
  /** Long poll: wait up to this many milliseconds for the first event (0: answer at once). */
  waitMs?: number;
  /** How often the long poll re-reads the run record (ms, default 250). */
  pollIntervalMs?: number;
  /** Ends the long poll early (the client went away). */
  signal?: AbortSignal;
}

/** A page of runs the caller may read. */
export interface RunListing {
  runs: RunRecord[];
  /**
   * Continues a listing by status (absent at its end): sealed (list-cursor.ts), it shows nothing
   * and is accepted only from the caller it was returned to, for the same status.
   */
  cursor?: string;
}

export interface RunListQuery {
  status?: RunRecord['status'];
  /** With both subject fields: the subject's live run only. */
  subject_workspace?: string;
  subject_path?: string;
  limit: number;
  cursor?: string;
}

export interface Reads {
  getRun(runId: string, caller: Caller): Promise<RunRecord>;
  readEvents(runId: string, caller: Caller, query: EventQuery): Promise<EventPage>;
  /**
   * Runs by status (a full page of the caller's, list-cursor.ts), or a subject's live run (none,
   * without a store read, in a workspace the caller may not use). Throws EngineError
   * validation_failed (`cursor`, `invalid_cursor`) for a cursor not returned to this caller.
   */
  listRuns(query: RunListQuery, caller: Caller): Promise<RunListing>;
  listCheckpoints(runId: string, caller: Caller): Promise<CheckpointItem[]>;
  getCheckpoint(runId: string, caller: Caller, n: number): Promise<CheckpointItem>;
  /** The child runs `runId` delegated to, oldest first. */
  listChildren(runId: string, caller: Caller): Promise<ChildRunSummary[]>;
}

/**
 * The view readers get: the record with its effective projection, without the capability hash
 * (a digest of a secret has no use outside the store).
 */
export function runView(record: RunRecord, prices: PriceTables = DEFAULT_PRICES): RunRecord {
  const { capability_hash: _hash, ...rest } = record;
  // The index keys the record item holds are the store's, not the API's: answered empty.
  const metered = rest.metered === undefined ? {} : { metered: { ...rest.metered, record_index_keys: {} } };
  // usage.cost: what the run cost so far at the deployment's price tables (core/prices.ts).
  return withCost(
    { ...rest, ...metered, projection: effectiveProjection(record.projection, record.status) } as RunRecord,
    prices,
  );
}

/** An ended run whose reducer has received every event: its log will not grow. */
export function isSettled(record: RunRecord): boolean {
  return isTerminalStatus(record.status) && record.inbox.length === 0;
}

/**
 * The record of a run the caller may read. Throws EngineError run_not_found (unknown id, or a
 * run the caller may not see: the same answer) or capability_invalid (a caller who may see the
 * run presented a capability that does not match). core/authority.ts decides.
 */
export async function readRun(deps: EngineDeps, runId: string, caller: Caller): Promise<RunRecord> {
  const record = await deps.store.getRun(runId);
  const access = accessOf(record, caller);
  if (!access.ok) throw accessError(access.code, runId);
  return record as RunRecord;
}

/**
 * The error of a refused access: run_not_found reads exactly like an unknown id (nothing of the
 * run is revealed); capability_invalid names only the header.
 */
export function accessError(code: 'run_not_found' | 'capability_invalid', runId: string): EngineError {
  return code === 'run_not_found'
    ? new EngineError('run_not_found', `run ${runId} not found`, { run_id: runId })
    : new EngineError('capability_invalid', 'the X-Control-Capability header does not match this run', {
        run_id: runId,
      });
}

/** The refusal of an events cursor beyond the run's last seq: no event with seq > after exists yet. */
export function cursorAhead(runId: string, after: number, lastSeq: number): EngineError {
  return new EngineError('cursor_ahead', `cursor ${after} is beyond the run's last seq ${lastSeq}`, {
    run_id: runId,
    after,
    last_seq: lastSeq,
  });
}

/** Sleeps `ms`; false at once (and the timer cleared) when `signal` aborts first. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted === true) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (slept: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(slept);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function createReads(deps: EngineDeps): Reads {
  const { store } = deps;

  async function readEvents(runId: string, caller: Caller, query: EventQuery): Promise<EventPage> {
    const { after, limit } = query;
    const pollIntervalMs = query.pollIntervalMs ?? 250;
    // The record is read BEFORE the events: a page whose status is terminal and whose
    // next_after reaches last_seq therefore holds every event the run will have.
    let record = await readRun(deps, runId, caller);
    if (after > record.last_seq) throw cursorAhead(runId, after, record.last_seq);
    const deadline = deps.clock.now() + (query.waitMs ?? 0);
    for (;;) {
      if (record.last_seq > after) {
        const events = await store.readEvents(runId, after, limit);
        const last = events[events.length - 1];
        return {
          events,
          next_after: last?.seq ?? after,
          last_seq: record.last_seq,
          status: record.status,
          settled: isSettled(record),
        };
      }
      const remaining = deadline - deps.clock.now();
      if (remaining <= 0 || isSettled(record) || query.signal?.aborted === true) {
        return {
          events: [],
          next_after: after,
          last_seq: record.last_seq,
          status: record.status,
          settled: isSettled(record),
        };
      }
      // A client that went away ends the wait now, not at the next poll.
      if (!(await pause(Math.min(pollIntervalMs, remaining), query.signal))) continue;
      const next = await store.getRun(runId);
      if (next === null) throw new EngineError('run_not_found', `run ${runId} not found`, { run_id: runId });
      record = next;
    }
  }

  // The deployment's listing key, read once per process (again after a failed read).
  let listingKey: Promise<Uint8Array> | undefined;
  const keyOf = () => {
    listingKey ??= store.listingKey().catch((err: unknown) => {
      listingKey = undefined;
      throw err;
    });
    return listingKey;
  };

  async function listRuns(query: RunListQuery, caller: Caller): Promise<RunListing> {
    if (query.subject_workspace === undefined || query.subject_path === undefined) {
      const page = await listVisibleByStatus(store, keyOf, query, caller);
      const runs = page.runs.map((r) => runView(r, deps.prices));
      return page.cursor === undefined ? { runs } : { runs, cursor: page.cursor };
    }
    // A subject is looked up only in a workspace the caller may use (the create path's check):
    // elsewhere the answer is no run, before anything of the subject is read.
    try {
      await admitWorkspace(deps, caller.principal, caller, query.subject_workspace);
    } catch (err) {
      if (err instanceof EngineError && err.code === 'workspace_not_granted') return { runs: [] };
      throw err;
    }
    const live = await store.findBySubject({ workspace: query.subject_workspace, path: query.subject_path });
    const record = live === null ? null : await store.getRun(live);
    const runs =
      record !== null &&
      // The subject item may still name its ended run until the release lands (RunStore.findBySubject).
      !isTerminalStatus(record.status) &&
      mayList(record, caller) &&
      (query.status === undefined || record.status === query.status)
        ? [runView(record, deps.prices)]
        : [];
    return { runs };
  }

  return {
    async getRun(runId, caller) {
      return runView(await readRun(deps, runId, caller), deps.prices);
    },
    readEvents,
    listRuns,
    async listCheckpoints(runId, caller) {
      await readRun(deps, runId, caller);
      return store.listCheckpoints(runId);
    },
    async getCheckpoint(runId, caller, n) {
      await readRun(deps, runId, caller);
      const cp = await store.getCheckpoint(runId, n);
      if (cp === null)
        throw new EngineError('checkpoint_not_found', `checkpoint ${n} of run ${runId} not found`, {
          run_id: runId,
          n,
        });
      return cp;
    },
    async listChildren(runId, caller) {
      await readRun(deps, runId, caller);
      const ids = await store.listChildren(runId);
      const records = await Promise.all(ids.map((id) => store.getRun(id)));
      return records
        .filter((r): r is RunRecord => r !== null)
        .map((r) => ({
          run_id: r.run_id,
          status: r.status,
          depth: r.depth,
          ...(r.parent_op_id !== undefined ? { parent_op_id: r.parent_op_id } : {}),
          created_at: r.created_at,
        }))
        .sort((a, b) => a.created_at - b.created_at);
    },
  };
}
