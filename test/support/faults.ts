/**
 * Fault injection for the crash and race tests: workers that die at a named CrashPoint, stores
 * whose commits fail as a RunStore can fail (CommitRejected after the store's own retries), a
 * store scoped to the runs a test created (so its sweeps never touch another test's runs), and
 * the checks that the log converged. Faults are injected by wrapping the ports, never by
 * replacing the services. Faults inside the DynamoDB adapter (a cancelled TransactWriteItems, a
 * read-committed Query) are in dynamo-faults.ts. No AWS SDK here: unit tests load it too.
 */
import { expect } from 'vitest';
import { isTerminalStatus, type RunEvent, type RunRecord } from '../../lib/contracts/index.ts';
import { LEASE_TTL_MS, REDUCER_VISIBLE_KINDS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import type { CrashPoint, Engine } from '../../lib/engine/engine.ts';
import { StoreUnavailable } from '../../lib/engine/errors.ts';
import {
  type Commit,
  CommitRejected,
  type ModelHost,
  type RunStore,
  type StepQueue,
  SWEEP_SHARDS,
  type ToolHost,
} from '../../lib/engine/ports.ts';
import { shardOf } from '../../lib/store/table.ts';

/** What a killed worker throws: the process is gone from this point on. */
export class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
  readonly point: CrashPoint | 'dead';
  constructor(point: CrashPoint | 'dead') {
    super(point === 'dead' ? 'the worker is dead' : `worker killed at ${point}`);
    this.point = point;
  }
}

/** Wraps every RunStore method; `over` replaces the ones given. */
export function wrapStore(store: RunStore, over: Partial<Omit<RunStore, 'metrics'>>): RunStore {
  return {
    get metrics() {
      return store.metrics;
    },
    getRun: (id) => store.getRun(id),
    getStatus: (id, opts) => store.getStatus(id, opts),
    getRunAndAck: (id, control) => store.getRunAndAck(id, control),
    getState: (id, rev, at) => store.getState(id, rev, at),
    readEvents: (id, after, limit, held) => store.readEvents(id, after, limit, held),
    getCheckpoint: (id, n) => store.getCheckpoint(id, n),
    listCheckpoints: (id) => store.listCheckpoints(id),
    findBySubject: (s) => store.findBySubject(s),
    releaseSubject: (r) => store.releaseSubject(r),
    findByCreateKey: (p, k) => store.findByCreateKey(p, k),
    readQuota: (p, w) => store.readQuota(p, w),
    listChildren: (id) => store.listChildren(id),
    findByResumeKey: (k) => store.findByResumeKey(k),
    readResumeKey: (k, now) => store.readResumeKey(k, now),
    holdEarlyResult: (hold) => store.holdEarlyResult(hold),
    sweepCandidates: (shard, now, limit) => store.sweepCandidates(shard, now, limit),
    listByStatus: (status, limit, cursor) => store.listByStatus(status, limit, cursor),
    listByPrincipal: (key, limit, cursor) => store.listByPrincipal(key, limit, cursor),
    listingKey: () => store.listingKey(),
    commit: (c) => store.commit(c),
    ...over,
  };
}

/**
 * A store whose sweeps see only the runs created through it. The table is shared by every
 * integration test file running in parallel, and a test that moves its clock past the lease
 * TTL would otherwise take over other tests' live runs.
 */
export function scopedStore(store: RunStore): RunStore & { readonly runIds: Set<string> } {
  const runIds = new Set<string>();
  const scoped = wrapStore(store, {
    async commit(c) {
      const out = await store.commit(c);
      if (c.expectedVersion === null) runIds.add(out.run_id);
      return out;
    },
    async sweepCandidates(shard, now, limit) {
      return (await store.sweepCandidates(shard, now, limit)).filter((id) => runIds.has(id));
    },
  });
  return Object.assign(scoped, { runIds });
}

/** The one sweep shard a run lives in (a sweep of only that shard is enough for it). */
export const shardOfRun = (runId: string) => [shardOf(runId, SWEEP_SHARDS)];

// ---------------------------------------------------------------- killing a worker

/** A planned death at one CrashPoint, with the port wrappers that make the worker really dead. */
export interface Crash {
  readonly point: CrashPoint;
  /** The engine's `faults` hook: throws at the target point (nth time reached), and on every call after. */
  hook(point: CrashPoint, runId: string): void;
  readonly dead: boolean;
  /** Settles when the worker died. */
  readonly died: Promise<void>;
  /** Refuses every call once dead, and never hands a reply that arrives after death to the worker. */
  store(store: RunStore): RunStore;
  /** Abandons the in-flight call at death: the worker never sees its result (the tool itself runs on). */
  tools(tools: ToolHost): ToolHost;
  models(models: ModelHost): ModelHost;
  queue(queue: StepQueue): StepQueue;
}

/**
 * Plans a crash at `point`, the `nth` time (default 1) the worker reaches it for `runId` (any
 * run when absent). The hook throws SimulatedCrash; at the same moment every port call in
 * flight is abandoned and every later one refused, as if the process had been killed.
 */
export function crashAt(point: CrashPoint, options: { nth?: number; runId?: string } = {}): Crash {
  const nth = options.nth ?? 1;
  let reached = 0;
  let dead = false;
  let kill: (err: SimulatedCrash) => void = () => {};
  const died = new Promise<SimulatedCrash>((_, reject) => {
    kill = reject;
  });
  died.catch(() => {}); // observed through `abandon`; never an unhandled rejection
  const alive = () => {
    if (dead) throw new SimulatedCrash('dead');
  };
  /** Runs `call`, unless the worker is dead before or dies before it returns. */
  async function abandon<T>(call: () => Promise<T>): Promise<T> {
    alive();
    const result = await Promise.race([call(), died]);
    alive();
    return result as T;
  }
  return {
    point,
    get dead() {
      return dead;
    },
    died: died.then(
      () => {},
      () => {},
    ),
    hook(at, runId) {
      alive();
      if (at !== point || (options.runId !== undefined && runId !== options.runId)) return;
      reached += 1;
      if (reached < nth) return;
      dead = true;
      const err = new SimulatedCrash(point);
      kill(err);
      throw err;
    },
    store(store) {
      const guarded = wrapStore(store, {});
      const out: Partial<RunStore> = {};
      for (const [name, fn] of Object.entries(guarded)) {
        if (typeof fn !== 'function') continue;
        (out as Record<string, unknown>)[name] = (...args: unknown[]) =>
          abandon(() => (fn as (...a: unknown[]) => Promise<unknown>)(...args));
      }
      return wrapStore(store, out);
    },
    tools(tools) {
      return {
        list: () => tools.list(),
        gate: (r) => tools.gate(r),
        execute: (r, signal) => abandon(() => tools.execute(r, signal)),
      };
    },
    models(models) {
      return { turn: (input, ctx, signal) => abandon(() => models.turn(input, ctx, signal)) };
    },
    queue(queue) {
      return { send: (m, d) => abandon(() => queue.send(m, d)), sent: () => queue.sent() };
    },
  };
}

// ---------------------------------------------------------------- failing commits

/**
 * A store whose commits fail with `reason` (CommitRejected transaction_conflict or
 * StoreUnavailable, as the store throws once its own retries are exhausted) when `when(commit, n)` says so (n counts commits from 1). With
 * `afterWrite`, the transaction lands first and the caller still sees the failure (an ambiguous
 * outcome, e.g. a timeout after DynamoDB committed).
 */
export function failingCommits(
  store: RunStore,
  reason: 'transaction_conflict' | 'store_unavailable',
  when: (commit: Commit, n: number) => boolean,
  options: { afterWrite?: boolean } = {},
): RunStore & { readonly failed: number } {
  let n = 0;
  let failed = 0;
  const wrapped = wrapStore(store, {
    async commit(c) {
      n += 1;
      if (!when(c, n)) return store.commit(c);
      failed += 1;
      if (options.afterWrite) await store.commit(c);
      throw reason === 'store_unavailable'
        ? new StoreUnavailable('injected throttling')
        : new CommitRejected(reason, `injected ${reason}`);
    },
  });
  return Object.assign(wrapped, {
    get failed() {
      return failed;
    },
  });
}

// ---------------------------------------------------------------- convergence

/**
 * Drives a run to rest after a crash: each round moves the clock past the lease TTL, runs one
 * sweep over the run's shard and one step of a fresh worker. Returns the settled record
 * (terminal with nothing left for the reducer, waiting, or paused) and the rounds it took.
 */
export async function settle(
  fresh: Engine,
  store: RunStore,
  clock: { advance(ms: number): void },
  runId: string,
  maxRounds = 8,
): Promise<{ record: RunRecord; rounds: number }> {
  for (let round = 0; round <= maxRounds; round += 1) {
    const record = await store.getRun(runId);
    if (record === null) throw new Error(`run ${runId} vanished`);
    const rests =
      (isTerminalStatus(record.status) && record.inbox.length === 0) ||
      record.status === 'waiting' ||
      record.status === 'paused';
    if (rests) return { record, rounds: round };
    clock.advance(LEASE_TTL_MS + defaultClockSkewMs(LEASE_TTL_MS) + 1_000);
    await fresh.sweep(shardOfRun(runId));
    await fresh.stepRun(runId);
  }
  throw new Error(`run ${runId} did not settle in ${maxRounds} rounds`);
}

/** Every event of a run, read in pages of `pageSize` with the `after` cursor. */
export async function readAll(store: RunStore, runId: string, pageSize = 100): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for (;;) {
    const page = await store.readEvents(runId, out.length === 0 ? 0 : (out.at(-1)?.seq ?? 0), pageSize);
    if (page.length === 0) return out;
    out.push(...page);
  }
}

/** Counts of `kind` events per key. */
export function countBy(
  events: RunEvent[],
  kind: string,
  key: (e: RunEvent) => unknown,
): Map<unknown, number> {
  const out = new Map<unknown, number>();
  for (const e of events) if (e.kind === kind) out.set(key(e), (out.get(key(e)) ?? 0) + 1);
  return out;
}

/** Events that record how an operation ended (at most one per op_id). */
const OUTCOMES = new Set(['tool_result', 'operation_failed', 'model_turn_completed', 'operation_cancelled']);

/**
 * The convergence checks of the crash tests: seq contiguous from 1 (no gap, no duplicate);
 * every reducer-visible event answered exactly once (reducer_answered per event_seq); at most
 * one outcome per operation. Returns the outcome events per op_id.
 */
export function expectConvergedLog(events: RunEvent[]): Map<string, RunEvent[]> {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  const answers = countBy(events, 'reducer_answered', (e) => e.data.event_seq);
  const visible = events.filter((e) => REDUCER_VISIBLE_KINDS.has(e.kind)).map((e) => e.seq);
  expect([...answers.keys()].sort((a, b) => Number(a) - Number(b))).toEqual(visible);
  expect([...answers.values()].every((n) => n === 1)).toBe(true);
  const outcomes = new Map<string, RunEvent[]>();
  for (const e of events) {
    if (!OUTCOMES.has(e.kind) || e.operation_id === undefined) continue;
    outcomes.set(e.operation_id, [...(outcomes.get(e.operation_id) ?? []), e]);
  }
  for (const list of outcomes.values()) expect(list).toHaveLength(1);
  return outcomes;
}
