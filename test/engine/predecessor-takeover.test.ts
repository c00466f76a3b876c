/**
 * A restarted worker of the same slot (EngineOptions.workerSlot) takes over at once, lease
 * unexpired, the runs its dead predecessor held: at its start (recoverPredecessors) and when a
 * step message reaches such a run. Nobody else's lease is taken: another slot's, a later
 * process's, an unslotted worker's. The epoch fence still stops the predecessor should it be
 * alive after all. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { readAll, scopedStore } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { toolLoop } from '../support/reducers.ts';
import { latch } from '../support/steer-reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
/** A heartbeat that never fires during a test: the holder must not renew. */
const NO_HEARTBEAT = 3_600_000;

/**
 * A run whose one tool call is in flight under worker A of slot `box-1`, A paused inside it
 * (as good as dead: its process is gone as far as the run can tell).
 */
async function heldByA(flavor: { mutating: boolean; replay_safe: boolean }) {
  const hold = latch();
  let calls = 0;
  const tools = inProcessTools({
    pay: async (r) => {
      calls += 1;
      if (calls === 1) await hold.wait();
      return { paid: r.args.i };
    },
  });
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ '/r/pay': toolLoop(1, 'pay', flavor) }),
    tools,
    models: noModel,
  });
  const store = scopedStore(t.store);
  const { run } = await t
    .another({ store })
    .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/pay' }, input: 'go' }, alice);
  await t.drainMessages();
  const a = t.another({ store, workerSlot: 'box-1', heartbeatMs: NO_HEARTBEAT });
  const aStep = a.stepRun(run.run_id);
  await hold.entered;
  // The restart comes a second later, far inside A's 90 s lease.
  t.clock.advance(1_000);
  return { t, store, runId: run.run_id, aStep, hold, calls: () => calls };
}

const kinds = (events: RunEvent[]) => events.map((e) => e.kind);

describe('a restarted worker of the same slot', () => {
  it('takes over its dead predecessor’s run at start and ends the non-replay-safe call outcome_unknown', async () => {
    const { t, store, runId, aStep, hold, calls } = await heldByA({ mutating: true, replay_safe: false });
    const before = await store.getRun(runId);
    const b = t.another({ store, workerSlot: 'box-1' });

    expect(await b.recoverPredecessors()).toMatchObject({ taken_over: 1 });
    expect(await t.drainMessages()).toEqual([runId]);
    expect(await b.stepRun(runId)).toMatchObject({ kind: 'progressed', status: 'completed' });
    expect(calls()).toBe(1); // never run twice

    const events = await readAll(store, runId);
    const taken = events.find((e) => e.kind === 'lease_taken_over');
    expect(taken?.data).toMatchObject({
      previous_owner: before?.lease?.owner,
      previous_epoch: before?.epoch,
    });
    expect(String(before?.lease?.owner)).toMatch(/^box-1@\d+\//);
    expect(events.find((e) => e.kind === 'operation_failed')?.data).toMatchObject({ outcome_unknown: true });

    // The predecessor, alive after all, is fenced out: its result is never written.
    hold.release();
    expect(await aStep).toEqual({ kind: 'fenced' });
    expect(kinds(await readAll(store, runId)).filter((k) => k === 'tool_result')).toEqual([]);
  });

  it('takes over when a step message reaches the run, and runs a replay-safe call again', async () => {
    const { t, store, runId, aStep, hold, calls } = await heldByA({ mutating: false, replay_safe: true });
    const b = t.another({ store, workerSlot: 'box-1' });
    expect(await b.stepRun(runId)).toMatchObject({ kind: 'progressed', status: 'completed' });
    expect(calls()).toBe(2);
    hold.release();
    expect(await aStep).toEqual({ kind: 'fenced' });
    expect(kinds(await readAll(store, runId)).filter((k) => k === 'tool_result')).toHaveLength(1);
  });

  it('leaves alone a lease of another slot, of an unslotted worker, or of a process that started later', async () => {
    const { t, store, runId, aStep, hold } = await heldByA({ mutating: true, replay_safe: false });
    const behind = { now: () => t.clock.now() - 60_000 };
    for (const other of [
      t.another({ store, workerSlot: 'box-2' }),
      t.another({ store }),
      // Same slot, but its start is not after A's: A may be the live one.
      t.another({ store, workerSlot: 'box-1', clock: behind }),
    ]) {
      expect(await other.recoverPredecessors()).toMatchObject({ taken_over: 0 });
      expect(await other.stepRun(runId)).toEqual({ kind: 'busy' });
    }
    expect(kinds(await readAll(store, runId))).not.toContain('lease_taken_over');
    hold.release();
    expect(await aStep).toMatchObject({ kind: 'progressed', status: 'completed' });
  });

  it('refuses a slot name that could forge another owner', async () => {
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({}),
      tools: inProcessTools({}),
      models: noModel,
    });
    expect(() => t.another({ workerSlot: 'box-1@99/x' })).toThrow(/workerSlot/);
    expect(() => t.another({ workerSlot: '' })).toThrow(/workerSlot/);
  });
});
