/**
 * Crash tests: a worker is killed at each named CrashPoint,
 * on DynamoDB Local and fauxqs. Then the clock moves past the lease TTL and the sweeper plus a
 * fresh worker must converge: no gap or duplicate in the log, every reducer answer committed
 * once, a non-replay-safe tool executed at most once and reported `outcome_unknown` when
 * abandoned, a replay-safe one dispatched again under the same op_id. And a worker killed inside
 * a plain commit, after its event page and before its record update: the page is never read and
 * the next commit overwrites it (lib/store/commit-protocol.ts).
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper"; docs/architecture.md, "The
 * step", "The sweeper".
 */
import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { sweepDue } from '../../lib/core/sweeper.ts';
import type { CrashPoint } from '../../lib/engine/engine.ts';
import type { RunStore } from '../../lib/engine/ports.ts';
import { localStore } from '../support/dynamo-faults.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  makeTestEngine,
  scriptedModel,
  uniqueSubject,
} from '../support/engine.ts';
import {
  crashAt,
  expectConvergedLog,
  readAll,
  SimulatedCrash,
  scopedStore,
  settle,
} from '../support/faults.ts';
import { askOnce, toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Flavor = { name: string; tool: string; mutating: boolean; replay_safe: boolean };
const REPLAY_SAFE: Flavor = {
  name: 'a replay-safe tool',
  tool: 'lookup',
  mutating: false,
  replay_safe: true,
};
const NOT_REPLAY_SAFE: Flavor = {
  name: 'a non-replay-safe tool',
  tool: 'charge',
  mutating: true,
  replay_safe: false,
};

/**
 * Where the worker dies; which operation (1-based) its death abandons, and whether that one had
 * run (`dispatched`); `leased`: whether the dead worker's lease was written (a step's lease is
 * written with its first commit, so a death before that commit leaves the run as it was).
 */
const CASES: {
  point: CrashPoint;
  nth: number;
  abandoned: number | null;
  dispatched?: boolean;
  leased?: boolean;
  what: string;
}[] = [
  {
    point: 'after_lease_acquire',
    nth: 1,
    abandoned: 1,
    dispatched: false,
    what: 'right after the first commit took the lease and started operation 1',
  },
  {
    point: 'after_reducer_answer',
    nth: 1,
    abandoned: null,
    leased: false,
    what: 'after the first reducer answer, before any commit',
  },
  {
    point: 'after_reducer_answer',
    nth: 2,
    abandoned: 1,
    what: "after the reducer answered operation 1's result, before the commit",
  },
  { point: 'after_dispatch', nth: 1, abandoned: 1, what: 'after operation 1 ran, before its result commit' },
  { point: 'after_dispatch', nth: 2, abandoned: 2, what: 'after operation 2 ran, before its result commit' },
  { point: 'during_heartbeat', nth: 1, abandoned: 1, what: 'in the first heartbeat of operation 1' },
  {
    point: 'during_heartbeat',
    nth: 2,
    abandoned: 1,
    what: 'in the second heartbeat of operation 1 (after one renewal)',
  },
];

/**
 * The engine over DynamoDB Local with a tool loop of `calls` calls. `paged`: each tool result
 * is too large for the record's inline tail (random hex), so each fused commit after the first
 * writes an event page and then the record: two writes a worker can die between.
 */
async function setup(flavor: Flavor, toolDelayMs: number, { calls = 2, paged = false } = {}) {
  const tools = inProcessTools({
    [flavor.tool]: async (r) => {
      if (toolDelayMs > 0) await sleep(toolDelayMs);
      return paged ? { i: r.args.i, blob: randomBytes(1_500).toString('hex') } : { i: r.args.i };
    },
  });
  const t = await makeTestEngine({
    reducers: inProcessReducers({ '/r/loop': toolLoop(calls, flavor.tool, flavor) }),
    tools,
    models: noModel,
  });
  const store = scopedStore(t.store);
  const fresh = t.another({ store });
  return { t, tools, store, fresh };
}

describe('a worker killed at a crash point converges under the sweeper and a fresh worker', () => {
  for (const flavor of [REPLAY_SAFE, NOT_REPLAY_SAFE]) {
    for (const c of CASES) {
      it(`with ${flavor.name}, killed ${c.what} (${c.point} #${c.nth})`, async () => {
        const heartbeat = c.point === 'during_heartbeat';
        const { t, tools, store, fresh } = await setup(flavor, heartbeat ? 300 : 0);
        const { run } = await fresh.createRun(
          { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
          alice,
        );
        const crash = crashAt(c.point, { nth: c.nth, runId: run.run_id });
        const victim = t.another({
          faults: crash.hook,
          store: crash.store(store),
          tools: crash.tools(tools),
          queue: crash.queue(t.queue),
          ...(heartbeat ? { heartbeatMs: 50 } : {}),
        });

        const died = await victim.stepRun(run.run_id).then(
          (outcome) => outcome,
          (err: unknown) => err,
        );
        expect(died).toBeInstanceOf(SimulatedCrash);
        expect((died as SimulatedCrash).point).toBe(c.point);
        const orphaned = await store.getRun(run.run_id);
        const leased = c.leased ?? true;
        if (leased) {
          // The dead worker still holds the lease, and the sweeper owes the run a look at its expiry.
          expect(orphaned?.lease).not.toBeNull();
          expect(orphaned && sweepDue(orphaned)).toBe(orphaned?.lease?.expires_at);
        } else {
          // Nothing was written: the run is as created, and its step message is run again.
          expect(orphaned).toMatchObject({ status: 'queued', lease: null, last_seq: 1 });
        }

        const { record, rounds } = await settle(fresh, store, t.clock, run.run_id);
        expect(rounds).toBe(1);
        expect(record).toMatchObject({ status: 'completed', lease: null, inbox: [] });
        const events = await readAll(store, run.run_id, 7);
        const outcomes = expectConvergedLog(events);
        expect(events.filter((e) => e.kind === 'lease_taken_over')).toHaveLength(leased ? 1 : 0);

        const opIds = [...outcomes.keys()];
        for (const [i, opId] of opIds.entries()) {
          const started = events.filter((e) => e.kind === 'operation_started' && e.operation_id === opId);
          const [outcome] = outcomes.get(opId) ?? [];
          if (c.abandoned !== i + 1) {
            expect(tools.executions.get(opId)).toBe(1);
            expect(started.map((e) => e.data.attempt)).toEqual([1]);
            expect(outcome?.kind).toBe('tool_result');
          } else if (flavor.replay_safe) {
            // Dispatched again under the same op_id; its one result is in the log.
            expect(tools.executions.get(opId)).toBe(c.dispatched === false ? 1 : 2);
            expect(started.map((e) => e.data.attempt)).toEqual([1, 2]);
            expect(outcome?.kind).toBe('tool_result');
          } else {
            // Executed at most once, and reported to the reducer with outcome_unknown.
            expect(tools.executions.get(opId)).toBe(c.dispatched === false ? undefined : 1);
            expect(started.map((e) => e.data.attempt)).toEqual([1]);
            expect(outcome).toMatchObject({
              kind: 'operation_failed',
              data: { outcome_unknown: true, error_class: 'lease_expired' },
            });
          }
        }
        // Every execution of the tool is an operation the log accounts for.
        const neverRan = !flavor.replay_safe && c.dispatched === false ? opIds[(c.abandoned ?? 0) - 1] : null;
        expect([...tools.executions.keys()].sort()).toEqual(opIds.filter((id) => id !== neverRan).sort());
        expect(record.usage.tool_calls).toBe(opIds.length);
      });
    }
  }
});

describe('a worker killed after a commit, before the SQS send, is covered by the wake deadline', () => {
  it('at create: the run is queued with no message, and the sweeper wakes it', async () => {
    const { t, tools, store, fresh } = await setup(REPLAY_SAFE, 0);
    const crash = crashAt('after_commit_before_send');
    const victim = t.another({ faults: crash.hook, store: crash.store(store), queue: crash.queue(t.queue) });
    const died = await victim
      .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' }, alice)
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(died).toBeInstanceOf(SimulatedCrash);
    const [runId] = [...store.runIds];
    if (runId === undefined) throw new Error('the run was not created');
    expect(await t.drainMessages()).toEqual([]);
    const orphaned = await store.getRun(runId);
    expect(orphaned).toMatchObject({ status: 'queued', lease: null });
    expect(orphaned?.wake_at).toBeTypeOf('number');

    const { record } = await settle(fresh, store, t.clock, runId);
    expect(record.status).toBe('completed');
    const events = await readAll(store, runId);
    expectConvergedLog(events);
    expect([...tools.executions.values()]).toEqual([1, 1]);
  });

  it('at the release of a step that yielded at its deadline with work left', async () => {
    const tools = inProcessTools({
      lookup: async (r) => {
        t.clock.advance(50_000); // past the step's deadline (lease TTL / 2)
        return { i: r.args.i };
      },
    });
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(2) }),
      tools,
      models: noModel,
    });
    const store = scopedStore(t.store);
    const fresh = t.another({ store });
    const { run } = await fresh.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
      alice,
    );
    await t.drainMessages();
    const crash = crashAt('after_commit_before_send', { runId: run.run_id });
    const victim = t.another({ faults: crash.hook, store: crash.store(store), queue: crash.queue(t.queue) });
    await expect(victim.stepRun(run.run_id)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(await t.drainMessages()).toEqual([]);
    const orphaned = await store.getRun(run.run_id);
    // Released: no lease, queued with the undelivered result, and a wake deadline for the sweeper.
    expect(orphaned).toMatchObject({ status: 'queued', lease: null });
    expect(orphaned?.inbox).toHaveLength(1);
    expect(orphaned && sweepDue(orphaned)).toBe(orphaned?.wake_at);

    const { record } = await settle(fresh, store, t.clock, run.run_id);
    expect(record.status).toBe('completed');
    expectConvergedLog(await readAll(store, run.run_id));
    expect([...tools.executions.values()]).toEqual([1, 1]);
  });

  it('at a control that woke a waiting run', async () => {
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/ask': askOnce() }),
      tools: inProcessTools({}),
      models: noModel,
    });
    const store = scopedStore(t.store);
    const fresh = t.another({ store });
    const { run } = await fresh.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, input: 'go' },
      alice,
    );
    await fresh.stepRun(run.run_id);
    await t.drainMessages();
    const waiting = await store.getRun(run.run_id);
    expect(waiting?.status).toBe('waiting');
    const crash = crashAt('after_commit_before_send', { runId: run.run_id });
    const victim = t.another({ faults: crash.hook, store: crash.store(store), queue: crash.queue(t.queue) });
    const control = {
      control_id: 'answer-1',
      command: 'provide_input',
      request_id: waiting?.open_requests[0]?.request_id,
      value: 'HAT001',
    };
    await expect(victim.applyControl(run.run_id, control, alice)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(await t.drainMessages()).toEqual([]);
    // The answer is committed; a client retrying the control gets a duplicate, not a second answer.
    const retried = await fresh.applyControl(run.run_id, control, alice);
    expect(retried.ack).toBe('duplicate');

    const { record } = await settle(fresh, store, t.clock, run.run_id);
    expect(record).toMatchObject({ status: 'completed', summary: 'HAT001' });
    expectConvergedLog(await readAll(store, run.run_id));
  });
});

describe('a worker killed between its event page and its record update (a plain commit half made)', () => {
  for (const nth of [1, 2]) {
    it(`leaves its page ${nth} unread, and the commits after it overwrite it into a converged log`, async () => {
      // Prepare: a victim whose store dies right after the nth event page of the run landed.
      let target = '';
      let pages = 0;
      let dead = false;
      const victimStore = localStore(undefined, (runId) => {
        if (runId !== target) return;
        pages += 1;
        if (pages === nth) {
          dead = true;
          throw new SimulatedCrash('dead');
        }
      });
      const { t, tools, store, fresh } = await setup(REPLAY_SAFE, 0, { calls: 4, paged: true });
      const { run } = await fresh.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
        alice,
      );
      await t.drainMessages();
      target = run.run_id;
      const victim = t.another({ store: deadAfter(victimStore, () => dead) });

      // Act: the victim dies between the two writes of one commit.
      await expect(victim.stepRun(run.run_id)).rejects.toBeInstanceOf(SimulatedCrash);

      // Assess: the page is stored past the record's last_seq, and no read returns its events.
      const orphaned = await store.getRun(run.run_id);
      if (orphaned === null) throw new Error('the run vanished');
      const page = await rawItem(`RUN#${run.run_id}`, `E#${String(orphaned.last_seq + 1).padStart(12, '0')}`);
      expect(page?.commit_version).toBe(orphaned.version + 1);
      expect(await store.readEvents(run.run_id, orphaned.last_seq, 10)).toEqual([]);
      expect((await readAll(store, run.run_id)).at(-1)?.seq).toBe(orphaned.last_seq);

      const { record } = await settle(fresh, store, t.clock, run.run_id);
      expect(record).toMatchObject({ status: 'completed', lease: null });
      const events = await readAll(store, run.run_id);
      const outcomes = expectConvergedLog(events);
      expect([...outcomes.values()].map((o) => o[0]?.kind)).toEqual([
        'tool_result',
        'tool_result',
        'tool_result',
        'tool_result',
      ]);
      // The page's seq now holds a committed event: the page was overwritten, not skipped.
      expect(events.map((e) => e.seq)).toContain(orphaned.last_seq + 1);
      expect([...tools.executions.keys()].sort()).toEqual([...outcomes.keys()].sort());
    });
  }
});

/** A store that refuses every call once `isDead()` (a killed process makes no more requests). */
function deadAfter(store: RunStore, isDead: () => boolean): RunStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (isDead()) throw new SimulatedCrash('dead');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** One item of the table as stored, strongly consistent. */
async function rawItem(pk: string, sk: string): Promise<Record<string, unknown> | undefined> {
  const local = inject('localServices');
  const clients = createAwsClients(local);
  try {
    const out = await clients.doc.send(
      new GetCommand({ TableName: local.tableName, Key: { pk, sk }, ConsistentRead: true }),
    );
    return out.Item;
  } finally {
    clients.destroy();
  }
}
