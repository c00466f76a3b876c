/**
 * Race test on the event log, on the memory store: a
 * zombie writer (a worker whose lease was taken over, still committing with its old fence) and
 * the lease owner commit at the same time while a reader pages the log with `after`. The reader
 * must see every seq once, in order, and nothing the zombie tried to write.
 * docs/contracts/run-lifecycle.md ("a durable event log whose seq numbers are contiguous from 1",
 * "Leases"); docs/reference/storage.md; docs/architecture.md, "The commit".
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import { CommitRejected } from '../../lib/engine/ports.ts';
import { crashAt, expectConvergedLog, readAll, scopedStore, shardOfRun } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { toolLoop } from '../support/reducers.ts';

const OPERATIONS = 40;
const PAGE = 3;

describe('race 8: a reader paging the log while a zombie and the owner commit', () => {
  it('sees every seq once, in order, and never an event the zombie tried to write', async () => {
    const tools = inProcessTools({ lookup: async (r) => ({ i: r.args.i }) });
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(OPERATIONS) }),
      tools,
      models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
    });
    const store = scopedStore(t.store);
    const owner = t.another({ store });
    const { run } = await owner.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
      alice,
    );
    // The zombie: a worker that took the lease, stalled, and lost it to the sweeper.
    const crash = crashAt('after_lease_acquire', { runId: run.run_id });
    await expect(
      t.another({ faults: crash.hook, store: crash.store(store) }).stepRun(run.run_id),
    ).rejects.toThrow();
    const stale = await store.getRun(run.run_id);
    if (stale?.lease === null || stale === null) throw new Error('the zombie holds no lease');
    const zombieFence = { owner: stale.lease.owner, epoch: stale.epoch };
    t.clock.advance(LEASE_TTL_MS + defaultClockSkewMs(LEASE_TTL_MS) + 1_000);
    expect((await owner.sweep(shardOfRun(run.run_id))).taken_over).toBe(1);

    let ownerDone = false;
    const zombie = { attempts: 0, landed: 0, refused: new Map<string, number>() };
    /** Commits an event as the zombie would: its old fence, with the fresh version or its stale one. */
    async function zombieWrites(): Promise<void> {
      while (!ownerDone) {
        const current = await store.getRun(run.run_id);
        if (current === null) return;
        for (const [base, version] of [
          [current, current.version],
          [stale as RunRecord, (stale as RunRecord).version],
        ] as const) {
          const seq = base.last_seq + 1;
          const event: RunEvent = { seq, kind: 'capability_gap', at: t.clock.now(), data: { zombie: true } };
          zombie.attempts += 1;
          try {
            await store.commit({
              record: { ...base, last_seq: seq } as RunRecord,
              expectedVersion: version,
              fence: zombieFence,
              events: [event],
            });
            zombie.landed += 1;
          } catch (err) {
            if (!(err instanceof CommitRejected)) throw err;
            zombie.refused.set(err.code, (zombie.refused.get(err.code) ?? 0) + 1);
          }
        }
      }
    }
    const seen: RunEvent[] = [];
    let pages = 0;
    /** Pages with `after` = the last seq seen, until the owner is done and a page comes back empty. */
    async function reader(): Promise<void> {
      for (;;) {
        const done = ownerDone;
        const after = seen.at(-1)?.seq ?? 0;
        const page = await store.readEvents(run.run_id, after, PAGE);
        pages += 1;
        expect(page.map((e) => e.seq)).toEqual(page.map((_, i) => after + i + 1));
        seen.push(...page);
        if (page.length === 0 && done) return;
      }
    }
    const stepping = owner.stepRun(run.run_id).finally(() => {
      ownerDone = true;
    });
    await Promise.all([stepping, zombieWrites(), zombieWrites(), reader()]);

    expect(await stepping).toMatchObject({ kind: 'progressed', status: 'completed', operations: OPERATIONS });
    const final = await store.getRun(run.run_id);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: final?.last_seq ?? 0 }, (_, i) => i + 1));
    expect(seen).toEqual(await readAll(store, run.run_id));
    expect(seen.some((e) => e.data.zombie === true)).toBe(false);
    expect(zombie.attempts).toBeGreaterThan(10);
    expect(zombie.landed).toBe(0);
    // A matching version does not help the zombie: the fence in the same condition refuses it.
    expect(zombie.refused.get('fenced_out') ?? 0).toBeGreaterThan(0);
    expect([...zombie.refused.keys()].every((r) => r === 'fenced_out' || r === 'stale_version')).toBe(true);
    expect(pages).toBeGreaterThan(OPERATIONS / PAGE);
    expectConvergedLog(seen);
    expect(tools.executions.size).toBe(OPERATIONS);
  });
});
