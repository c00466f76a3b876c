/**
 * The DynamoDB run store on DynamoDB Local + fauxqs S3: first the RunStore contract
 * (test/contract/run-store.contract.ts, the suite the memory store passes too; the listing and
 * sweep tests each on a table of their own); then what is about DynamoDB itself, on the shared table: every event of one
 * commit in ONE event page (`E#{first seq}`), so a fused commit is two plain writes (the page, then the record),
 * the domain state inline in the commit's last page, pages split under PAGE_LIMIT, payloads
 * above INLINE_LIMIT as blob attributes, the rendered condition expressions, and reads that stop
 * before a gap a read-committed Query may show. docs/reference/storage.md; docs/architecture.md,
 * "The commit"; docs/reference/storage.md.
 */

import { randomBytes, randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { createS3BlobStore } from '../../lib/blobs/blob-store.ts';
import { createMemoryBlobStore } from '../../lib/blobs/memory-blob-store.ts';
import type { RunEvent, RunEventKind, RunRecord } from '../../lib/contracts/index.ts';
import { acquireLease, createRun } from '../../lib/core/run-machine.ts';
import type { CheckpointItem, Commit, RunStore } from '../../lib/engine/ports.ts';
import { INLINE_LIMIT, itemSize, PAGE_LIMIT, storeCommitBodies } from '../../lib/store/commit-plan.ts';
import { createDynamoRunStore } from '../../lib/store/dynamo-run-store.ts';
import { recordAndTailOf } from '../../lib/store/item-codec.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { planMetered, writtenItem } from '../../lib/store/metering.ts';
import { METERED_COUNTERS, packBody, unpackBody, unpackPageBody } from '../../lib/store/record-codec.ts';
import { createTableInput } from '../../lib/store/table.ts';
import { recordingBlobs, runStoreContract } from '../contract/run-store.contract.ts';
import { editedQueries, localStore } from '../support/dynamo-faults.ts';
import { uniqueSubject } from '../support/engine.ts';
import { readAll } from '../support/faults.ts';
import { givenUpClaimScenario } from '../support/given-up-claim.ts';

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

const local = inject('localServices');
const clients = createAwsClients(local);
const raw = clients.doc;
afterAll(() => clients.destroy());

runStoreContract('DynamoDB Local', async ({ empty }) => {
  const blobs = recordingBlobs(createS3BlobStore(clients.s3, local.bucketName));
  if (!empty) {
    const store = createDynamoRunStore({ doc: clients.doc, tableName: local.tableName, blobs });
    return { store, blobPuts: blobs.puts, close: async () => {} };
  }
  // A table of its own: the listing and sweep tests see only the runs they made.
  const tableName = `contract-${randomUUID()}`;
  await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  return {
    store: createDynamoRunStore({ doc: clients.doc, tableName, blobs }),
    blobPuts: blobs.puts,
    close: async () => {
      await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
    },
  };
});

describe('the listing key on DynamoDB', () => {
  it('is one key for every store over the table, even when two create it at once', async () => {
    const tableName = `listing-key-${randomUUID()}`;
    await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
    try {
      const blobs = createMemoryBlobStore();
      const a = createDynamoRunStore({ doc: clients.doc, tableName, blobs });
      const b = createDynamoRunStore({ doc: clients.doc, tableName, blobs });
      const [ka, kb] = await Promise.all([a.listingKey(), b.listingKey()]);
      expect(ka.length).toBe(32);
      expect(Buffer.from(ka).equals(Buffer.from(kb))).toBe(true);
      const later = createDynamoRunStore({ doc: clients.doc, tableName, blobs });
      expect(Buffer.from(await later.listingKey()).equals(Buffer.from(ka))).toBe(true);
      expect(later.metrics.writeRequests).toBe(0);
    } finally {
      await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
    }
  });
});

/**
 * A store whose writes are recorded, to check a commit's shape: each TransactWriteItems (its
 * items), and each plain Put and Update (as a one-item list in `plain`).
 */
function recordingStore(): { store: RunStore; transactions: TransactItems[]; plain: TransactItems } {
  const transactions: TransactItems[] = [];
  const plain: TransactItems = [];
  const store = localStore(
    (doc) =>
      new Proxy(doc, {
        get(target, prop, receiver) {
          if (prop !== 'send') return Reflect.get(target, prop, receiver);
          return (command: unknown) => {
            if (command instanceof TransactWriteCommand) transactions.push(command.input.TransactItems ?? []);
            if (command instanceof PutCommand) plain.push({ Put: command.input } as TransactItems[number]);
            if (command instanceof UpdateCommand)
              plain.push({ Update: command.input } as TransactItems[number]);
            return (target.send as (c: unknown) => Promise<unknown>)(command);
          };
        },
      }) as DynamoDBDocumentClient,
  );
  return { store, transactions, plain };
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

describe('the items of a commit on DynamoDB', () => {
  it('writes a fused commit (three events and the domain state) as ONE plain write: the record update, its events inline', async () => {
    const { store, transactions, plain } = recordingStore();
    const run = await storedRun(store);
    transactions.length = 0;
    plain.length = 0;
    const { record, events } = await append(store, run, [{ a: 1 }, { b: 2 }, { c: 3 }], {
      state: { rev: 1, value: { turn: 1 } },
    });
    expect(transactions).toEqual([]);
    const [update] = plain;
    expect(plain).toHaveLength(1);
    expect(update?.Update?.Key).toEqual({ pk: `RUN#${run.run_id}`, sk: 'R' });
    expect(update?.Update?.ConditionExpression).toBe('#version = :expected_version');
    expect(update?.Update?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    // The state is located by the page its tail will be flushed to: the tail's first seq.
    expect(record.state_at).toBe('E#000000000001');
    expect(await pagesOf(run.run_id)).toEqual([]);
    expect(await localStore().readEvents(run.run_id, 1, 10)).toEqual(events);
    expect(await localStore().getState(run.run_id, 1, record.state_at)).toEqual({ turn: 1 });
  });

  it('stores the charge beside the compressed body, and reads the item’s own size back; an older item keeps its body’s', async () => {
    const store = localStore();
    const run = await storedRun(store);
    const { record } = await append(store, run, [{ a: 1 }]);
    const key = { pk: `RUN#${run.run_id}`, sk: 'R' };
    const item = (
      await raw.send(new GetCommand({ TableName: local.tableName, Key: key, ConsistentRead: true }))
    ).Item as Record<string, unknown>;
    // The counters in their fixed order (record-codec.ts METERED_COUNTERS); not in the body.
    const counters = JSON.parse(item.metered as string) as number[];
    expect(counters[0]).toBe(record.metered?.dynamodb_write_units);
    expect(counters).toHaveLength(METERED_COUNTERS.length);
    expect(unpackBody(item.body_z as Uint8Array).record).not.toContain('"metered"');
    // Read back, the size and index keys are the item's own: what the commit said it wrote.
    const read = await store.getRun(run.run_id);
    expect(read?.metered).toEqual(record.metered);
    expect(read?.metered?.record_item_bytes).toBe(itemSize(item));
    // An item written before the counters moved out of the body reads its body's charge.
    const { record: text, tail } = unpackBody(item.body_z as Uint8Array);
    const carried = { ...record.metered, record_item_bytes: 777 };
    const { metered: _counters, ...rest } = item;
    const older = {
      ...rest,
      body_z: packBody(JSON.stringify({ ...JSON.parse(text), metered: carried }), tail),
    };
    await raw.send(new PutCommand({ TableName: local.tableName, Item: older }));
    expect((await localStore().getRun(run.run_id))?.metered).toEqual(carried);
    // A stored charge that is not a list of counters is a corrupt item, refused by name.
    await raw.send(new PutCommand({ TableName: local.tableName, Item: { ...item, metered: '{"x":1}' } }));
    await expect(localStore().getRun(run.run_id)).rejects.toThrow(/metered is not a list/);
    // The table is shared: the run goes back as it was, for every listing after this test.
    await raw.send(new PutCommand({ TableName: local.tableName, Item: item }));
    expect((await localStore().getRun(run.run_id))?.metered).toEqual(record.metered);
  });

  it('flushes a tail that would grow past its limit to one page keyed by its first seq, then updates the record', async () => {
    const { store, transactions, plain } = recordingStore();
    let record = await storedRun(store);
    const data = () => [{ pad: randomBytes(300).toString('hex') }];
    for (let i = 0; i < 6 && (await pagesOf(record.run_id)).length === 0; i += 1) {
      transactions.length = 0;
      plain.length = 0;
      ({ record } = await append(store, record, data(), { state: { rev: i + 1, value: { i } } }));
    }
    const [page] = await pagesOf(record.run_id);
    expect(transactions).toEqual([]);
    expect(plain.map((w) => (w.Put !== undefined ? 'page' : 'record'))).toEqual(['page', 'record']);
    expect(page).toMatchObject({ sk: 'E#000000000001', first_seq: 1, commit_version: record.version });
    // Stored compressed, as it was in the record: its events and the states their commits wrote.
    expect(page?.events).toBeUndefined();
    const flushed = unpackPageBody(page?.events_z as Uint8Array);
    expect((JSON.parse(flushed.events) as { seq: number }[]).map((e) => e.seq)[0]).toBe(1);
    expect((JSON.parse(flushed.states) as { state_rev: number }[]).length).toBeGreaterThan(0);
    expect(plain[0]?.Put?.ConditionExpression).toBe(
      'attribute_not_exists(pk) OR #commit_version < :commit_version',
    );
    // Every event and every state still reads back, from the page and from the new tail alike.
    const all = await readAll(localStore(), record.run_id);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: record.last_seq }, (_, i) => i + 1));
    expect(await localStore().getState(record.run_id, record.state_rev, record.state_at)).toEqual({
      i: record.state_rev - 1,
    });
  });

  it('renders a lease holder’s fence in the record update’s own condition, and the subject claim of a create', async () => {
    const { store, transactions, plain } = recordingStore();
    const run = await storedRun(store);
    // A create that claims only its subject: two plain puts, the subject first (stamped with
    // the store's clock), then the record (run_started in its tail).
    expect(transactions).toEqual([]);
    expect(plain.map((i) => i.Put?.ConditionExpression)).toEqual([
      'attribute_not_exists(pk)',
      'attribute_not_exists(pk)',
    ]);
    expect(plain[0]?.Put?.Item?.pk).toMatch(/^SUBJ#[0-9a-f]{64}$/);
    expect(plain[0]?.Put?.Item?.claimed_at).toEqual(expect.any(Number));
    expect(plain[1]?.Put?.Item?.sk).toBe('R');
    const leased = acquireLease(run, 'owner-a', Date.now());
    if (!leased.ok) throw new Error('lease not acquired');
    const held = await store.commit({ record: leased.record, expectedVersion: run.version, events: [] });
    transactions.length = 0;
    plain.length = 0;
    await append(store, held, [{ ok: true }], { fence: { owner: 'owner-a', epoch: held.epoch } });
    const update = plain.find((w) => w.Update !== undefined)?.Update;
    expect(update?.ConditionExpression).toBe(
      '#version = :expected_version AND #lease_owner_c = :fence_owner AND #epoch = :fence_epoch',
    );
    expect(update?.ExpressionAttributeValues).toMatchObject({
      ':expected_version': held.version,
      ':fence_owner': 'owner-a',
      ':fence_epoch': held.epoch,
    });
    expect(transactions).toEqual([]);
  });

  it('keeps checkpoint, state, ack, record and page items under their own sort keys', async () => {
    const store = localStore();
    let { record } = await append(store, await storedRun(store), [{ x: 1 }, { x: 2 }], {
      state: { rev: 1, value: { s: 1 } },
      checkpoints: [checkpoint(1, 1)],
      controlAck: { control_id: 'ctl-1', digest: 'd', ack: { ack: 'applied', seq: 3 }, seq: 3 },
    });
    // State without events: the D# item.
    record = await store.commit({
      record: { ...record, state_rev: 2 } as RunRecord,
      expectedVersion: record.version,
      events: [],
      state: { rev: 2, value: { s: 2 } },
    });
    expect(record.state_at).toBe('D#2');
    ({ record } = await append(store, record, [{ x: 3 }], { checkpoints: [checkpoint(2, 2)] }));
    const sks = (await itemsOf(record.run_id)).map((i) => String(i.sk));
    // The events are in the record's inline tail: no page yet.
    expect(sks.sort()).toEqual(['C#1', 'C#2', 'D#2', 'K#ctl-1', 'R']);
  });

  it('stores a payload above INLINE_LIMIT as a blob attribute of its tail entry or tail state', async () => {
    const store = localStore();
    const big = { text: 'e'.repeat(450_000), n: [1, 2, 3] };
    const state = { text: 's'.repeat(450_000), nested: { ok: true } };
    const { record } = await append(store, await storedRun(store), [{ small: 1 }, big, { small: 2 }], {
      state: { rev: 1, value: state },
    });
    const item = (await itemsOf(record.run_id)).find((i) => i.sk === 'R');
    const tail = recordAndTailOf(item)?.tail;
    const entries = (tail?.events ?? []).slice(1) as Record<string, unknown>[];
    const page = tail?.states[0] as Record<string, unknown> | undefined;
    expect(entries[1]?.data_blob).toMatchObject({ size: Buffer.byteLength(JSON.stringify(big)) });
    expect(entries[1]?.data_json).toBeUndefined();
    expect(entries[0]?.data_json).toBe(JSON.stringify({ small: 1 }));
    expect(page?.state_blob).toMatchObject({ size: Buffer.byteLength(JSON.stringify(state)) });
    expect(page?.state_json).toBeUndefined();
  });

  it('splits a commit whose events exceed the page limit into contiguous pages, each under the limit, the state on the last', async () => {
    const store = localStore();
    const filler = 'p'.repeat(INLINE_LIMIT - 1_024);
    const data = Array.from({ length: 14 }, (_, i) => ({ i, filler }));
    const state = { s: 'x'.repeat(INLINE_LIMIT - 1_024) };
    const { record, events } = await append(store, await storedRun(store), data, {
      state: { rev: 1, value: state },
    });
    const pages = (await pagesOf(record.run_id)).slice(1); // the first is run_started's
    expect(pages.length).toBeGreaterThanOrEqual(2);
    // Contiguous, each keyed by its own first seq, under the page limit, the state on the last.
    expect(pages.map((p) => p.first_seq)).toEqual([
      2,
      ...pages.slice(0, -1).map((p) => Number(p.last_seq) + 1),
    ]);
    expect(pages.at(-1)?.last_seq).toBe(15);
    for (const p of pages) {
      expect(p.sk).toBe(`E#${String(p.first_seq).padStart(12, '0')}`);
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
  });

  it('refuses a commit above the transaction item limit before sending it: nothing reaches DynamoDB', async () => {
    const { store, transactions } = recordingStore();
    const run = await storedRun(store);
    transactions.length = 0;
    const checkpoints = Array.from({ length: 100 }, (_, i) => checkpoint(i + 1, 0));
    await expect(append(store, run, [{ x: 1 }], { checkpoints })).rejects.toThrow(/transaction limit/);
    expect(transactions).toEqual([]);
    expect((await itemsOf(run.run_id)).map((i) => i.sk)).toEqual(['R']);
  });
});

describe('event pages while a commit is still landing', () => {
  it('stop before a gap a read-committed Query may show, so a reader paging with after never skips a seq', async () => {
    const store = localStore();
    let record = await storedRun(store);
    for (let c = 0; c < 6; c += 1) {
      // Too large for the inline tail (random hex): each commit writes a page of its own.
      ({ record } = await append(store, record, [
        { c, i: 0, pad: randomBytes(900).toString('hex') },
        { c, i: 1, pad: randomBytes(900).toString('hex') },
      ]));
    }
    const all = await readAll(store, record.run_id);
    expect(all.length).toBeGreaterThan(8);
    // The run's event pages as stored (one per commit, keyed by their first seq), in order.
    const lastSeqs = (await pagesOf(record.run_id)).map((page) => Number(page.last_seq));
    expect(lastSeqs.length).toBeGreaterThan(4);
    const [, end1 = 0, , end3 = 0] = lastSeqs;
    const seqs = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // The first two queries miss the third page they return (a page of a commit still landing).
    const partial = localStore((doc) =>
      editedQueries(doc, (items, n) => (n <= 2 ? items.filter((_, i) => i !== 2) : items)),
    );
    const first = await partial.readEvents(record.run_id, 0, 100);
    expect(first.map((e) => e.seq)).toEqual(seqs(1, end1));
    // From page 3 on, the query misses page 5: the read stops at the end of page 4.
    const second = await partial.readEvents(record.run_id, end1, 100);
    expect(second.map((e) => e.seq)).toEqual(seqs(end1 + 1, end3));
    const rest = await partial.readEvents(record.run_id, end3, 100);
    expect([...first, ...second, ...rest]).toEqual(all);
  });
});

describe('metering: the same commit costs the same units in both stores', () => {
  it('charges the same units on DynamoDB Local and in memory for the same commits, and reads alike', async () => {
    // Prepare: one run, the same commits (same ids, times and payloads) on both stores.
    const dynamo = localStore();
    const memory = createMemoryRunStore();
    const created = createRun(
      {
        run_id: `meter-${randomUUID()}`,
        principal: { kind: 'user', id: 'alice' },
        subject: uniqueSubject(),
        reducer: { function_path: '/r/none' },
        input: 'hello',
        budgets: {},
        on_exceeded: 'pause',
      },
      1_700_000_000_000,
    );
    const both = async (commit: (store: RunStore) => Promise<RunRecord>) => {
      const [d, m] = [await commit(dynamo), await commit(memory)];
      return { d, m };
    };
    // Act: a create, a lease, a 3 KB event, a grown record, reads, and a shrunk record. The
    // notes are random: the record is stored compressed, and 4 KB of one letter would not grow it.
    let r = await both((store) =>
      store.commit({ record: created.record, expectedVersion: null, events: created.events }),
    );
    // Every commit after the create is plain writes (commit-protocol.ts), which DynamoDB Local
    // reports exactly (unlike a transaction's units): what it consumed is what the run was charged.
    const createdUnits = r.d.metered?.dynamodb_write_units ?? 0;
    const consumedBefore = dynamo.metrics.writeCapacity;
    const taken = acquireLease(r.d, 'worker-1', 1_700_000_000_100);
    if (!taken.ok) throw new Error('lease not acquired');
    r = await both((store) => store.commit({ record: taken.record, expectedVersion: 1, events: [] }));
    r = await both(async (store) => (await append(store, r.d, [{ text: 'x'.repeat(3_000) }])).record);
    const notes = randomBytes(3_000).toString('base64');
    const grown = { ...r.d, executor_config: { notes } } as RunRecord;
    r = await both((store) => store.commit({ record: grown, expectedVersion: grown.version, events: [] }));
    const readsBefore = { d: dynamo.metrics.readCapacity, m: memory.metrics.readCapacity };
    for (const store of [dynamo, memory]) {
      await store.getRun(r.d.run_id);
      await store.getStatus(r.d.run_id);
    }
    const shrunk = { ...r.d, executor_config: {} } as RunRecord;
    r = await both((store) => store.commit({ record: shrunk, expectedVersion: shrunk.version, events: [] }));
    // Assess: the same units charged; the reads DynamoDB measured are the memory store's count.
    expect(r.m.metered).toEqual(r.d.metered);
    expect(r.d.metered?.dynamodb_write_units).toBe(memory.metrics.writeCapacity);
    expect((r.d.metered?.dynamodb_write_units ?? 0) - createdUnits).toBe(
      dynamo.metrics.writeCapacity - consumedBefore,
    );
    expect(dynamo.metrics.readCapacity - readsBefore.d).toBe(memory.metrics.readCapacity - readsBefore.m);
    expect(r.d.metered?.dynamodb_read_units).toBeGreaterThan(0);
  });

  it('estimates each planned write at the units DynamoDB Local consumes for it alone', async () => {
    // DynamoDB Local reports a multi-item TransactWriteItems as the sum of its items' DISTINCT
    // unit counts (three 1 KB puts: 2 units, not 6), so each planned write is sent as a
    // transaction of its own, to a table of its own.
    const tableName = `meter-${randomUUID()}`;
    await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
    try {
      const blobs = createMemoryBlobStore();
      const created = createRun(
        {
          run_id: `meter-${randomUUID()}`,
          principal: { kind: 'user', id: 'alice' },
          subject: uniqueSubject(),
          reducer: { function_path: '/r/none' },
          input: 'hello',
          budgets: {},
          on_exceeded: 'pause',
        },
        Date.now(),
      );
      const commits: ((previous: RunRecord | null) => Commit)[] = [
        () => ({ record: created.record, expectedVersion: null, events: created.events }),
        (p) => {
          const taken = acquireLease(p as RunRecord, 'worker-1', Date.now());
          if (!taken.ok) throw new Error('lease not acquired');
          return { record: taken.record, expectedVersion: (p as RunRecord).version, events: [] };
        },
        (p) => ({
          record: {
            ...(p as RunRecord),
            executor_config: { n: randomBytes(4_500).toString('base64') },
          } as RunRecord,
          expectedVersion: (p as RunRecord).version,
          events: [],
        }),
        (p) => ({
          record: { ...(p as RunRecord), executor_config: {} } as RunRecord,
          expectedVersion: (p as RunRecord).version,
          events: [],
        }),
      ];
      let previous: RunRecord | null = null;
      for (const make of commits) {
        const commit = make(previous);
        const plan = planMetered(commit, await storeCommitBodies(commit, blobs), {});
        let consumed = 0;
        for (const w of plan.writes) {
          // An update is sent as the put of the item it leaves: charged alike (larger size, keys).
          const action =
            w.op === 'delete'
              ? { Delete: { TableName: tableName, Key: w.key } }
              : { Put: { TableName: tableName, Item: writtenItem(w) ?? {} } };
          const out = await raw.send(
            new TransactWriteCommand({ TransactItems: [action], ReturnConsumedCapacity: 'TOTAL' }),
          );
          consumed += out.ConsumedCapacity?.[0]?.CapacityUnits ?? 0;
        }
        const charged =
          (plan.record.metered?.dynamodb_write_units ?? 0) - (previous?.metered?.dynamodb_write_units ?? 0);
        expect(charged).toBe(consumed);
        previous = plan.record;
      }
    } finally {
      await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
    }
  });
});

describe('a plain create on DynamoDB', () => {
  it('gives up a create that stalled between its subject and its record once the grace is over', async () => {
    await givenUpClaimScenario((hooks) => localStore(undefined, undefined, hooks));
  });
});
