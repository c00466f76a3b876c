/**
 * The DynamoDB run store's item layout, on DynamoDB Local + fauxqs S3: every event of one commit
 * in ONE event page (`E#{last seq}`), the domain state that commit wrote inline in its last
 * page (`state_at` on the record and on checkpoints names it), pages split above PAGE_LIMIT,
 * payloads above INLINE_LIMIT in the blob store, and the commit refusals classified as before
 * with nothing written. DESIGN sections 4 and 5; seed agent-runs, "Storage and cluster behaviour".
 */
import { randomUUID } from 'node:crypto';
import {
  type DynamoDBDocumentClient,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { RunEvent, RunEventKind, RunRecord } from '../../lib/contracts/index.ts';
import { acquireLease, createRun } from '../../lib/core/run-machine.ts';
import { CommitRejected, CommitTooLarge } from '../../lib/engine/commit-errors.ts';
import type { CheckpointItem, Commit, ControlAckItem, RunStore } from '../../lib/engine/ports.ts';
import { INLINE_LIMIT, PAGE_LIMIT } from '../../lib/store/commit-plan.ts';
import { uniqueSubject } from '../support/engine.ts';
import { localStore } from '../support/faults.ts';

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

const local = inject('localServices');
const raw = createAwsClients(local).doc;

/** A store whose TransactWriteItems are recorded (their items), to check a commit's shape. */
function recordingStore(): { store: RunStore; transactions: TransactItems[] } {
  const transactions: TransactItems[] = [];
  const store = localStore(
    (doc) =>
      new Proxy(doc, {
        get(target, prop, receiver) {
          if (prop !== 'send') return Reflect.get(target, prop, receiver);
          return (command: unknown) => {
            if (command instanceof TransactWriteCommand) transactions.push(command.input.TransactItems ?? []);
            return (target.send as (c: unknown) => Promise<unknown>)(command);
          };
        },
      }) as DynamoDBDocumentClient,
  );
  return { store, transactions };
}

/** Creates a run (its run_started event is seq 1) and returns the stored record. */
async function storedRun(store: RunStore): Promise<RunRecord> {
  const created = createRun(
    {
      run_id: `store-${randomUUID()}`,
      principal: { kind: 'user', id: 'alice' },
      subject: uniqueSubject(),
      reducer: { function_path: '/r/none' },
      input: 'hello',
      budgets: {},
      on_exceeded: 'pause',
    },
    Date.now(),
  );
  return store.commit({ record: created.record, expectedVersion: null, events: created.events });
}

/** One commit appending `data` as events of `kind` after the record's last seq. */
async function append(
  store: RunStore,
  record: RunRecord,
  data: Record<string, unknown>[],
  extra: Partial<Omit<Commit, 'record' | 'expectedVersion' | 'events'>> & { kind?: RunEventKind } = {},
): Promise<{ record: RunRecord; events: RunEvent[] }> {
  const { kind = 'steer_queued', state, ...rest } = extra;
  const events: RunEvent[] = data.map((d, i) => ({
    seq: record.last_seq + 1 + i,
    kind,
    at: 1_000 + i,
    data: d,
  }));
  const next = {
    ...record,
    last_seq: record.last_seq + data.length,
    ...(state !== undefined ? { state_rev: state.rev } : {}),
  } as RunRecord;
  const stored = await store.commit({
    record: next,
    expectedVersion: record.version,
    events,
    ...(state !== undefined ? { state } : {}),
    ...rest,
  });
  return { record: stored, events };
}

/** Every item of the run's partition, in sort-key order. */
async function itemsOf(runId: string): Promise<Record<string, unknown>[]> {
  const out = await raw.send(
    new QueryCommand({
      TableName: local.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `RUN#${runId}` },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

const pagesOf = async (runId: string) => (await itemsOf(runId)).filter((i) => String(i.sk).startsWith('E#'));

const checkpoint = (n: number, stateRev: number): CheckpointItem => ({
  n,
  reason: 'test',
  core: { status: 'running' },
  state_rev: stateRev,
  transcript_cutoff_seq: 1,
  at: 1_000,
});

describe('event pages', () => {
  it('writes a fused commit (three events and the domain state) as two items: the record update and one page', async () => {
    const { store, transactions } = recordingStore();
    const run = await storedRun(store);
    transactions.length = 0;
    const { record } = await append(store, run, [{ a: 1 }, { b: 2 }, { c: 3 }], {
      state: { rev: 1, value: { turn: 1 } },
    });
    expect(transactions).toHaveLength(1);
    const [update, page] = transactions[0] ?? [];
    expect(transactions[0]).toHaveLength(2);
    expect(update?.Update?.Key).toEqual({ pk: `RUN#${run.run_id}`, sk: 'R' });
    expect(page?.Put?.Item).toMatchObject({
      sk: 'E#000000000004',
      first_seq: 2,
      last_seq: 4,
      state_rev: 1,
      state_json: JSON.stringify({ turn: 1 }),
    });
    expect(page?.Put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(((page?.Put?.Item?.events ?? []) as RunEvent[]).map((e) => e.seq)).toEqual([2, 3, 4]);
    expect(record.state_at).toBe('E#000000000004');
  });

  it('reads commits of any size back contiguous, in order, for any after and limit', async () => {
    const store = localStore();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 30 }),
        async (sizes, after, limit) => {
          let record = await storedRun(store);
          const all: RunEvent[] = (await store.readEvents(record.run_id, 0, 10)).slice();
          for (const [c, size] of sizes.entries()) {
            const out = await append(
              store,
              record,
              Array.from({ length: size }, (_, i) => ({ c, i })),
            );
            record = out.record;
            all.push(...out.events);
          }
          expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
          const read = await store.readEvents(record.run_id, after, limit);
          expect(read).toEqual(all.filter((e) => e.seq > after).slice(0, limit));
        },
      ),
      { numRuns: 30 },
    );
  });

  it('never returns checkpoint, state, ack or record items as events', async () => {
    const store = localStore();
    let { record } = await append(store, await storedRun(store), [{ x: 1 }, { x: 2 }], {
      state: { rev: 1, value: { s: 1 } },
      checkpoints: [checkpoint(1, 1)],
      controlAck: { control_id: 'ctl-1', digest: 'd', ack: { ack: 'applied', seq: 3 }, seq: 3 },
    });
    // State without events: the legacy D# item.
    record = await store.commit({
      record: { ...record, state_rev: 2 } as RunRecord,
      expectedVersion: record.version,
      events: [],
      state: { rev: 2, value: { s: 2 } },
    });
    ({ record } = await append(store, record, [{ x: 3 }], { checkpoints: [checkpoint(2, 2)] }));
    const sks = (await itemsOf(record.run_id)).map((i) => String(i.sk));
    expect(sks).toEqual(
      expect.arrayContaining(['C#1', 'C#2', 'D#2', 'K#ctl-1', 'R', 'E#000000000001', 'E#000000000003']),
    );
    const events = await store.readEvents(record.run_id, 0, 100);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(events.map((e) => e.kind)).toEqual([
      'run_started',
      'steer_queued',
      'steer_queued',
      'steer_queued',
    ]);
    expect(await store.readEvents(record.run_id, 4, 100)).toEqual([]);
    expect(await store.readEvents(record.run_id, 3, 1)).toEqual([events[3]]);
  });

  it('keeps a 450 KB event data and a 450 KB domain state in the blob store and reads both back intact', async () => {
    const store = localStore();
    const big = { text: 'e'.repeat(450_000), n: [1, 2, 3] };
    const state = { text: 's'.repeat(450_000), nested: { ok: true } };
    const { record } = await append(store, await storedRun(store), [{ small: 1 }, big, { small: 2 }], {
      state: { rev: 1, value: state },
    });
    const [page] = await pagesOf(record.run_id).then((p) => p.filter((i) => i.sk === 'E#000000000004'));
    const entries = page?.events as Record<string, unknown>[];
    expect(entries[1]?.data_blob).toBeDefined();
    expect(entries[1]?.data_json).toBeUndefined();
    expect(entries[0]?.data_json).toBe(JSON.stringify({ small: 1 }));
    expect(page?.state_blob).toBeDefined();
    expect(page?.state_json).toBeUndefined();
    const events = await store.readEvents(record.run_id, 1, 10);
    expect(events.map((e) => e.data)).toEqual([{ small: 1 }, big, { small: 2 }]);
    expect(await store.getState(record.run_id, 1, record.state_at)).toEqual(state);
  });

  it('stores values nested past DynamoDB’s 32-level limit (record, event data, state, checkpoint) and reads them back', async () => {
    const store = localStore();
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200; i += 1) deep = { d: deep };
    const run = await storedRun(store);
    const nested = { ...run, executor_config: { deep } } as RunRecord;
    const { record, events } = await append(store, nested, [{ deep }], {
      state: { rev: 1, value: { deep } },
      checkpoints: [checkpoint(1, 1)].map((c) => ({ ...c, core: { deep } })),
    });
    expect(record.executor_config).toEqual({ deep });
    expect((await store.getRun(record.run_id))?.executor_config).toEqual({ deep });
    expect(await store.readEvents(record.run_id, 1, 10)).toEqual(events);
    expect(await store.getState(record.run_id, 1, record.state_at)).toEqual({ deep });
    expect((await store.getCheckpoint(record.run_id, 1))?.core).toEqual({ deep });
  });

  it('splits a commit whose events exceed the page limit into several pages and reads it back whole', async () => {
    const store = localStore();
    const filler = 'p'.repeat(INLINE_LIMIT - 1_024);
    const data = Array.from({ length: 14 }, (_, i) => ({ i, filler }));
    const state = { s: 'x'.repeat(INLINE_LIMIT - 1_024) };
    const { record, events } = await append(store, await storedRun(store), data, {
      state: { rev: 1, value: state },
    });
    const pages = (await pagesOf(record.run_id)).slice(1); // the first is run_started's
    expect(pages.length).toBeGreaterThanOrEqual(2);
    // Contiguous, each keyed by its own last seq, under the page limit, the state on the last.
    expect(pages.map((p) => p.first_seq)).toEqual([
      2,
      ...pages.slice(0, -1).map((p) => Number(p.last_seq) + 1),
    ]);
    expect(pages.at(-1)?.last_seq).toBe(15);
    for (const p of pages) {
      expect(p.sk).toBe(`E#${String(p.last_seq).padStart(12, '0')}`);
      const { pk: _pk, sk: _sk, ...body } = p;
      expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThanOrEqual(PAGE_LIMIT + 1_024);
      expect(
        (p.events as { data_json: string }[]).every(
          (e) => (JSON.parse(e.data_json) as { filler?: string }).filler === filler,
        ),
      ).toBe(true);
    }
    expect(pages.filter((p) => p.state_json !== undefined).map((p) => p.sk)).toEqual([pages.at(-1)?.sk]);
    expect(record.state_at).toBe(pages.at(-1)?.sk);
    expect(await store.readEvents(record.run_id, 1, 100)).toEqual(events);
    // Starting in the middle of a page, and a limit that ends in the middle of another.
    const middle = Number(pages[0]?.last_seq) - 1;
    expect(await store.readEvents(record.run_id, middle, 3)).toEqual(
      events.filter((e) => e.seq > middle).slice(0, 3),
    );
    expect(await store.getState(record.run_id, 1, record.state_at)).toEqual(state);
  });

  it('refuses a commit above the transaction item limit whole, never truncated', async () => {
    const store = localStore();
    const run = await storedRun(store);
    const checkpoints = Array.from({ length: 99 }, (_, i) => checkpoint(i + 1, 0));
    await expect(append(store, run, [{ x: 1 }], { checkpoints })).rejects.toBeInstanceOf(CommitTooLarge);
    expect((await itemsOf(run.run_id)).map((i) => i.sk)).toEqual(['E#000000000001', 'R']);
  });
});

describe('domain state where the record says', () => {
  it('sets state_at on the returned and stored record, getState reads it, and a checkpoint carries it', async () => {
    const store = localStore();
    const run = await storedRun(store);
    expect(run.state_at).toBeUndefined();
    expect(await store.getState(run.run_id, 0)).toBeNull();
    const { record } = await append(store, run, [{ a: 1 }, { a: 2 }], {
      state: { rev: 1, value: { v: 'one' } },
      checkpoints: [checkpoint(1, 1), checkpoint(2, 0)],
    });
    expect(record.state_at).toBe('E#000000000003');
    expect((await store.getRun(run.run_id))?.state_at).toBe('E#000000000003');
    expect(await store.getState(run.run_id, 1, record.state_at)).toEqual({ v: 'one' });
    await expect(store.getState(run.run_id, 2, record.state_at)).rejects.toThrow(
      /holds domain state 1, not 2/,
    );
    const cp = await store.getCheckpoint(run.run_id, 1);
    expect(cp?.state_at).toBe('E#000000000003');
    expect(await store.getState(run.run_id, cp?.state_rev ?? -1, cp?.state_at)).toEqual({ v: 'one' });
    expect((await store.getCheckpoint(run.run_id, 2))?.state_at).toBeUndefined();

    // A commit without state keeps pointing at the item that holds the record's state_rev.
    const later = await append(store, record, [{ a: 3 }], { checkpoints: [checkpoint(3, 1)] });
    expect(later.record.state_at).toBe('E#000000000003');
    expect((await store.getCheckpoint(run.run_id, 3))?.state_at).toBe('E#000000000003');

    // State without events (not expected from the engine): written as D#{rev}.
    const bare = await store.commit({
      record: { ...later.record, state_rev: 2 } as RunRecord,
      expectedVersion: later.record.version,
      events: [],
      state: { rev: 2, value: { v: 'two' } },
    });
    expect(bare.state_at).toBe('D#2');
    expect(await store.getState(run.run_id, 2, bare.state_at)).toEqual({ v: 'two' });
    expect(await store.getState(run.run_id, 2)).toEqual({ v: 'two' });
    await expect(store.getState(run.run_id, 7)).rejects.toThrow(/missing/);
  });
});

describe('refused commits write nothing', () => {
  it('classifies a stale version and keeps the log and record as they were', async () => {
    const store = localStore();
    const run = await storedRun(store);
    const { record } = await append(store, run, [{ a: 1 }]);
    const stale = append(store, run, [{ zombie: true }], { state: { rev: 1, value: { z: 1 } } });
    await expect(stale).rejects.toMatchObject({ reason: 'stale_version' });
    const err = await stale.catch((e: unknown) => e);
    expect((err as CommitRejected).current?.version).toBe(record.version);
    expect(await store.getRun(run.run_id)).toEqual(record);
    expect((await store.readEvents(run.run_id, 0, 100)).map((e) => e.data)).toEqual([
      { input: 'hello' },
      { a: 1 },
    ]);
  });

  it('classifies a commit under a lost fence as fenced_out', async () => {
    const store = localStore();
    const run = await storedRun(store);
    const leased = acquireLease(run, 'owner-a', Date.now());
    if (!leased.ok) throw new Error('lease not acquired');
    const held = await store.commit({ record: leased.record, expectedVersion: run.version, events: [] });
    const fence = { owner: 'owner-b', epoch: held.epoch };
    const refused = store.commit({
      record: { ...held, last_seq: held.last_seq + 1 } as RunRecord,
      expectedVersion: held.version,
      fence,
      events: [{ seq: held.last_seq + 1, kind: 'steer_queued', at: 1, data: { zombie: true } }],
    });
    await expect(refused).rejects.toBeInstanceOf(CommitRejected);
    await expect(refused).rejects.toMatchObject({ reason: 'fenced_out' });
    expect(await store.getRun(run.run_id)).toEqual(held);
    expect(await store.readEvents(run.run_id, held.last_seq, 10)).toEqual([]);
    // The owner's own fence still commits.
    const owned = await append(store, held, [{ ok: true }], {
      fence: { owner: 'owner-a', epoch: held.epoch },
    });
    expect(owned.record.version).toBe(held.version + 1);
  });

  it('classifies a second ack for the same control id by its item index after the pages', async () => {
    const store = localStore();
    const ack: ControlAckItem = {
      control_id: 'ctl-dup',
      digest: 'd',
      ack: { ack: 'applied', seq: 2 },
      seq: 2,
    };
    const { record } = await append(store, await storedRun(store), [{ a: 1 }], {
      state: { rev: 1, value: {} },
      checkpoints: [checkpoint(1, 1)],
      controlAck: ack,
    });
    const again = append(store, record, [{ a: 2 }, { a: 3 }], {
      state: { rev: 2, value: {} },
      checkpoints: [checkpoint(2, 2)],
      controlAck: { ...ack, seq: 4 },
    });
    await expect(again).rejects.toMatchObject({ reason: 'control_ack_exists' });
    expect(await store.getRun(record.run_id)).toEqual(record);
    expect(await store.readEvents(record.run_id, 2, 10)).toEqual([]);
  });
});
