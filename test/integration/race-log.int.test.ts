/**
 * Race test on the event log (issue 3, "Crash and race tests", case 8), on DynamoDB Local: a
 * zombie writer (a worker whose lease was taken over, still committing with its old fence) and
 * the lease owner commit at the same time while a reader pages the log with `after`. The reader
 * must see every seq once, in order, and nothing the zombie tried to write.
 * Seed: agent-runs ("a durable event log whose seq numbers are contiguous from 1", "Leases");
 * DESIGN sections 4 and 5.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { CommitRejected } from '../../lib/engine/commit-errors.ts';
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
  editedQueries,
  expectConvergedLog,
  localStore,
  readAll,
  scopedStore,
  shardOfRun,
} from '../support/faults.ts';
import { toolLoop } from '../support/reducers.ts';

const OPERATIONS = 40;
const PAGE = 3;

describe('race 8: a reader paging the log while a zombie and the owner commit', () => {
  it('sees every seq once, in order, and never an event the zombie tried to write', async () => {
    const tools = inProcessTools({ lookup: async (r) => ({ i: r.args.i }) });
    const t = await makeTestEngine({
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
    t.clock.advance(LEASE_TTL_MS + 1_000);
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
            zombie.refused.set(err.reason, (zombie.refused.get(err.reason) ?? 0) + 1);
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

describe('event pages while a commit is still landing', () => {
  it('stop before a gap a read-committed Query may show, so a reader paging with after never skips a seq', async () => {
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(3) }),
      tools: inProcessTools({ lookup: async (r) => ({ i: r.args.i }) }),
      models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
    });
    const store = scopedStore(t.store);
    const { run } = await t
      .another({ store })
      .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' }, alice);
    await t.another({ store }).stepRun(run.run_id);
    const all = await readAll(store, run.run_id);
    expect(all.length).toBeGreaterThan(8);
    // The run's event pages as stored (one per commit, keyed by their last seq), in order.
    const { Items } = await t.clients.doc.send(
      new QueryCommand({
        TableName: inject('localServices').tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :e)',
        ExpressionAttributeValues: { ':pk': `RUN#${run.run_id}`, ':e': 'E#' },
        ConsistentRead: true,
      }),
    );
    const lastSeqs = (Items ?? []).map((page) => Number(page.last_seq));
    expect(lastSeqs.length).toBeGreaterThan(4);
    const [, end1 = 0, , end3 = 0] = lastSeqs;
    const seqs = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // The first two queries miss the third page they return (a page of a commit still landing).
    const partial = localStore((doc) =>
      editedQueries(doc, (items, n) => (n <= 2 ? items.filter((_, i) => i !== 2) : items)),
    );
    const first = await partial.readEvents(run.run_id, 0, 100);
    expect(first.map((e) => e.seq)).toEqual(seqs(1, end1));
    // From page 3 on, the query misses page 5: the read stops at the end of page 4.
    const second = await partial.readEvents(run.run_id, end1, 100);
    expect(second.map((e) => e.seq)).toEqual(seqs(end1 + 1, end3));
    const rest = await partial.readEvents(run.run_id, end3, 100);
    expect([...first, ...second, ...rest]).toEqual(all);
  });
});
