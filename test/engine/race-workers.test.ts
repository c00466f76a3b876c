/**
 * Race tests between workers, on the memory
 * store and step queue: a worker paused past its lease, a step message delivered twice, and a
 * commit that landed while the worker saw it fail. What needs DynamoDB or SQS themselves (a
 * batch of SQS messages, a cancelled TransactWriteItems and the raw sweep attributes) is in
 * test/integration/race-workers.int.test.ts.
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper"; docs/architecture.md, "The
 * commit", "The step", "The sweeper".
 */
import { describe, expect, it } from 'vitest';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import type { RunStore, StepQueue } from '../../lib/engine/ports.ts';
import {
  expectConvergedLog,
  failingCommits,
  readAll,
  scopedStore,
  settle,
  shardOfRun,
  wrapStore,
} from '../support/faults.ts';
import {
  alice,
  inProcessReducers,
  inProcessTools,
  scriptedModel,
  testClock,
  uniqueSubject,
} from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { modelOnce, toolLoop } from '../support/reducers.ts';
import { latch } from '../support/steer-reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
/** A heartbeat that never fires during a test: the worker is paused, or must not renew. */
const NO_HEARTBEAT = 3_600_000;

/** Counts a store's commits: attempted, and landed (DynamoDB accepted them). */
function countingStore(store: RunStore) {
  const counts = { attempted: 0, landed: 0 };
  const wrapped = wrapStore(store, {
    async commit(c) {
      counts.attempted += 1;
      const out = await store.commit(c);
      counts.landed += 1;
      return out;
    },
  });
  return { store: wrapped, counts };
}

function countingQueue(queue: StepQueue): StepQueue {
  let sent = 0;
  return {
    async send(m, d) {
      sent += 1;
      await queue.send(m, d);
    },
    sent: () => sent,
  };
}

describe('race 1: a worker paused past its lease while another takes over', () => {
  for (const flavor of [
    { name: 'replay-safe', mutating: false, replay_safe: true },
    { name: 'non-replay-safe', mutating: true, replay_safe: false },
  ]) {
    it(`cannot commit or enqueue anything afterwards, and the log holds one result (${flavor.name} tool)`, async () => {
      const hold = latch();
      let calls = 0;
      const tools = inProcessTools({
        pay: async (r) => {
          calls += 1;
          if (calls === 1) await hold.wait(); // worker A's call: A is paused inside it
          return { paid: r.args.i };
        },
      });
      const t = await makeMemoryTestEngine({
        reducers: inProcessReducers({ '/r/pay': toolLoop(1, 'pay', flavor) }),
        tools,
        models: noModel,
      });
      const store = scopedStore(t.store);
      const fresh = t.another({ store });
      const { run } = await fresh.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/pay' }, input: 'go' },
        alice,
      );
      await t.drainMessages();
      // Worker A's clock lags behind (a paused process): locally it still believes it holds the
      // lease, so only the fence in DynamoDB's condition can stop it.
      const a = countingStore(store);
      const aQueue = countingQueue(t.queue);
      const worker = t.another({
        store: a.store,
        queue: aQueue,
        clock: testClock(),
        heartbeatMs: NO_HEARTBEAT,
      });
      const aStep = worker.stepRun(run.run_id);
      await hold.entered;

      t.clock.advance(LEASE_TTL_MS + defaultClockSkewMs(LEASE_TTL_MS) + 1_000);
      expect((await fresh.sweep(shardOfRun(run.run_id))).taken_over).toBe(1);
      expect(await fresh.stepRun(run.run_id)).toMatchObject({ kind: 'progressed', status: 'completed' });
      const settled = await store.getRun(run.run_id);
      await t.drainMessages();
      const before = { ...a.counts };

      hold.release();
      expect(await aStep).toEqual({ kind: 'fenced' });
      // A tried to commit its result and the fence refused it; it sent no step message.
      expect(a.counts.attempted).toBe(before.attempted + 1);
      expect(a.counts.landed).toBe(before.landed);
      expect(aQueue.sent()).toBe(0);
      expect(await t.drainMessages()).toEqual([]);
      const after = await store.getRun(run.run_id);
      expect(after?.version).toBe(settled?.version);

      const events = await readAll(store, run.run_id);
      const outcomes = expectConvergedLog(events);
      const opId = `${run.run_id}/op/1`;
      expect([...outcomes.keys()]).toEqual([opId]);
      if (flavor.replay_safe) {
        expect(outcomes.get(opId)?.map((e) => e.kind)).toEqual(['tool_result']);
        expect(tools.executions.get(opId)).toBe(2);
      } else {
        expect(outcomes.get(opId)?.[0]).toMatchObject({
          kind: 'operation_failed',
          data: { outcome_unknown: true },
        });
        expect(tools.executions.get(opId)).toBe(1);
      }
    });
  }
});

describe('race 2: the same step message delivered twice', () => {
  const answer = {
    message: { text: 'done' },
    tool_calls: [],
    finish_reason: 'stop',
    usage: { input_tokens: 5, output_tokens: 2 },
  };

  it('while the first worker is alive: the model is called once and the second worker exits without touching the run', async () => {
    const hold = latch();
    const model = scriptedModel(async () => {
      await hold.wait();
      return answer;
    });
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/m': modelOnce() }),
      tools: inProcessTools({}),
      models: model,
      heartbeatMs: NO_HEARTBEAT,
    });
    const store = scopedStore(t.store);
    const first = t.another({ store });
    const { run } = await first.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/m' }, input: 'x' },
      alice,
    );
    const aStep = first.stepRun(run.run_id);
    await hold.entered;

    const b = countingStore(store);
    const before = await store.getRun(run.run_id);
    expect(await t.another({ store: b.store }).stepRun(run.run_id)).toEqual({ kind: 'busy' });
    const after = await store.getRun(run.run_id);
    expect(after?.version).toBe(before?.version);
    expect(b.counts.attempted).toBe(0);

    hold.release();
    expect(await aStep).toMatchObject({ kind: 'progressed', status: 'completed' });
    expect(model.calls).toBe(1);
    const events = await readAll(store, run.run_id);
    expectConvergedLog(events);
    expect(events.filter((e) => e.kind === 'operation_started')).toHaveLength(1);
  });

  it('to two workers at the same instant: one steps the run, the other finds it busy or done', async () => {
    const model = scriptedModel(async () => answer);
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/m': modelOnce() }),
      tools: inProcessTools({}),
      models: model,
    });
    const store = scopedStore(t.store);
    for (let i = 0; i < 5; i += 1) {
      const { run } = await t
        .another({ store })
        .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/m' }, input: 'x' }, alice);
      const calls = model.calls;
      const outcomes = await Promise.all([
        t.another({ store }).stepRun(run.run_id),
        t.another({ store }).stepRun(run.run_id),
      ]);
      const kinds = outcomes.map((o) => o.kind).sort();
      expect(kinds.filter((k) => k === 'progressed')).toHaveLength(1);
      expect(['busy', 'nothing_to_do']).toContain(kinds.find((k) => k !== 'progressed'));
      expect(model.calls - calls).toBe(1);
      expectConvergedLog(await readAll(store, run.run_id));
    }
  });
});

describe('race 4: a commit that fails after the operation ran', () => {
  it('an ambiguous commit (it landed, the worker saw throttling) converges without running an operation twice', async () => {
    const tools = inProcessTools({ lookup: async (r) => ({ i: r.args.i }) });
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(2) }),
      tools,
      models: noModel,
    });
    const store = scopedStore(t.store);
    let once = true;
    const ambiguous = failingCommits(
      store,
      'store_unavailable',
      (c) => {
        const hit = once && c.events.some((e) => e.kind === 'tool_result');
        if (hit) once = false;
        return hit;
      },
      { afterWrite: true },
    );
    const { run } = await t
      .another({ store })
      .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' }, alice);
    await expect(t.another({ store: ambiguous }).stepRun(run.run_id)).rejects.toMatchObject({
      code: 'store_unavailable',
      retryable: true,
    });
    // The fused commit landed: op 1's result, the reducer's answer and op 2's start.
    const stuck = await store.getRun(run.run_id);
    expect(stuck?.operation).toMatchObject({ op_id: `${run.run_id}/op/2` });
    expect(stuck?.operation?.started_at).not.toBeNull();

    const { record, rounds } = await settle(t.another({ store }), store, t.clock, run.run_id);
    expect(rounds).toBe(1);
    expect(record.status).toBe('completed');
    expectConvergedLog(await readAll(store, run.run_id));
    // op 2 was started but never dispatched by the worker that saw the failure: it runs once.
    expect(tools.executions.get(`${run.run_id}/op/1`)).toBe(1);
    expect(tools.executions.get(`${run.run_id}/op/2`)).toBe(1);
  });
});
