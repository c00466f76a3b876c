/**
 * The RunStore contract: what every adapter of the port (lib/engine/ports.ts) does, whatever it
 * stores in. `runStoreContract(name, open)` registers the tests for the store `open()` gives,
 * over an empty table each time. Run on the memory store by test/unit/memory-run-store.test.ts
 * (no Java, no services) and on DynamoDB Local + fauxqs S3 by
 * test/integration/dynamo-run-store.int.test.ts, which also keeps what is about DynamoDB itself
 * (the items of one TransactWriteItems, page shapes, raw attributes, condition expressions).
 * docs/reference/storage.md; docs/architecture.md, "The commit"; docs/reference/storage.md.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../lib/blobs/blob-store.ts';
import type { RunEvent, RunEventKind, RunRecord, Subject } from '../../lib/contracts/index.ts';
import { principalKeyOf } from '../../lib/core/principal.ts';
import {
  acquireLease,
  type CreateRunParams,
  createRun,
  decideControl,
  failRun,
  finishOperation,
  releaseLease,
} from '../../lib/core/run-machine.ts';
import {
  type CheckpointItem,
  type Commit,
  CommitRejected,
  CommitTooLarge,
  type ControlAckItem,
  type RunStore,
  SWEEP_SHARDS,
} from '../../lib/engine/ports.ts';
import { INLINE_LIMIT, MAX_TRANSACT_ITEMS, PAGE_LIMIT, RECORD_LIMIT } from '../../lib/store/commit-plan.ts';
import { DELIVERY_MEMORY_MS } from '../../lib/store/resume-key-plan.ts';
import { shardOf } from '../../lib/store/table.ts';

/** A store under test. */
export interface StoreUnderTest {
  store: RunStore;
  /** Every body the store put into its blob store since `open`, in order. */
  blobPuts: readonly string[];
  /** Drops what `open` made (e.g. its table); called after each test. */
  close(): Promise<void>;
  /**
   * Whether `store.metrics.writeCapacity` counts a multi-item transaction's units item by item,
   * as DynamoDB bills them (the memory store does; DynamoDB Local sums only the distinct unit
   * counts of a transaction's items, so its suite checks the estimate item by item instead).
   */
  countsTransactionUnits?: boolean;
}

/**
 * Opens the store for one test. With `empty`, over a table nobody else writes to (the listing
 * and sweep tests count every run they see); without, the table may hold other runs (every
 * test uses its own run ids and subjects).
 */
export type OpenStore = (options: { empty: boolean }) => Promise<StoreUnderTest>;

/** A blob store that records the bodies put into it. */
export function recordingBlobs(blobs: BlobStore): BlobStore & { readonly puts: string[] } {
  const puts: string[] = [];
  return {
    puts,
    async put(body, mediaType) {
      puts.push(body);
      return blobs.put(body, mediaType);
    },
    get: (ref) => blobs.get(ref),
  };
}

// ---------------------------------------------------------------- builders

const alice = { kind: 'user' as const, id: 'alice' };
const newSubject = (): Subject => ({ workspace: 'contract', path: `/runs/${randomUUID()}` });

/** A new run (queued, run_started at seq 1) as core creates it, not yet stored. */
function draft(overrides: Partial<CreateRunParams> = {}, now = Date.now()) {
  return createRun(
    {
      run_id: `store-${randomUUID()}`,
      principal: alice,
      subject: newSubject(),
      reducer: { function_path: '/r/none' },
      input: 'hello',
      budgets: {},
      on_exceeded: 'pause',
      ...overrides,
    },
    now,
  );
}

/** Creates a run and returns the stored record. */
async function storedRun(
  store: RunStore,
  overrides: Partial<CreateRunParams> = {},
  extra: Pick<Commit, 'createKey' | 'parentLink' | 'quota'> = {},
  now?: number,
): Promise<RunRecord> {
  const created = draft(overrides, now);
  return store.commit({ record: created.record, expectedVersion: null, events: created.events, ...extra });
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

/** The run with a lease held by `owner` (epoch + 1), as stored. */
async function leased(
  store: RunStore,
  record: RunRecord,
  owner: string,
  now = Date.now(),
): Promise<RunRecord> {
  const taken = acquireLease(record, owner, now);
  if (!taken.ok) throw new Error(`lease not acquired: ${taken.code}`);
  return store.commit({ record: taken.record, expectedVersion: record.version, events: [] });
}

const checkpoint = (n: number, stateRev: number): CheckpointItem => ({
  n,
  reason: 'test',
  core: { status: 'running' },
  state_rev: stateRev,
  transcript_cutoff_seq: 1,
  at: 1_000,
});

/** The reason a refused commit carries (fails the test when it was not a CommitRejected). */
async function refusal(commit: Promise<unknown>): Promise<CommitRejected> {
  const err = await commit.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CommitRejected);
  return err as CommitRejected;
}

/** A run id whose sweep shard is `shard`. */
function runIdInShard(shard: number): string {
  for (;;) {
    const id = `sweep-${randomUUID()}`;
    if (shardOf(id, SWEEP_SHARDS) === shard) return id;
  }
}

/** Every run id of `status`, following the cursor with pages of `limit`; and the pages seen. */
async function listAll(
  store: RunStore,
  status: string,
  limit: number,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await store.listByStatus(status, limit, cursor);
    pages += 1;
    expect(page.run_ids.length).toBeLessThanOrEqual(limit);
    ids.push(...page.run_ids);
    cursor = page.cursor;
    if (pages > 100) throw new Error('the cursor never ends');
  } while (cursor !== undefined);
  return { ids, pages };
}

// ---------------------------------------------------------------- the contract

export function runStoreContract(name: string, open: OpenStore): void {
  describe(`RunStore contract (${name})`, () => {
    let s: StoreUnderTest;
    /** Gives each test of the enclosing describe a store of its own. */
    const freshStoreEach = (empty: boolean) => {
      beforeEach(async () => {
        s = await open({ empty });
      });
      afterEach(async () => {
        await s.close();
      });
    };

    describe('create', () => {
      freshStoreEach(false);
      it('stores the record at version 1 with run_started at seq 1, and indexes its subject and create key', async () => {
        const created = draft();
        const stored = await s.store.commit({
          record: created.record,
          expectedVersion: null,
          events: created.events,
          createKey: { principalKey: 'user:alice', key: 'k-1', request_digest: 'digest-of-the-request' },
        });
        expect(stored.version).toBe(1);
        expect(await s.store.getRun(stored.run_id)).toEqual(stored);
        expect((await s.store.readEvents(stored.run_id, 0, 10)).map((e) => [e.seq, e.kind])).toEqual([
          [1, 'run_started'],
        ]);
        expect(await s.store.findBySubject(stored.subject)).toBe(stored.run_id);
        expect(await s.store.findByCreateKey('user:alice', 'k-1')).toEqual({
          run_id: stored.run_id,
          request_digest: 'digest-of-the-request',
        });
        expect(await s.store.findByCreateKey('user:bob', 'k-1')).toBeNull();
        expect(await s.store.getRun('store-never-created')).toBeNull();
      });

      it('reads a run’s status alone (the stop watch’s cheap read), and null for an unknown run', async () => {
        const created = draft();
        const stored = await s.store.commit({
          record: created.record,
          expectedVersion: null,
          events: created.events,
        });
        expect(await s.store.getStatus(stored.run_id)).toEqual({
          status: 'queued',
          interrupt_requested: null,
        });
        expect(await s.store.getStatus('store-never-created')).toBeNull();
      });

      it('reads an interrupting steer beside the status while its operation is in flight, and not after', async () => {
        const now = Date.now();
        const running = await leased(s.store, await storedRun(s.store), 'w1', now);
        const effect = {
          effect_id: '1:0',
          kind: 'call_tool',
          tool: 't',
          args: {},
          mutating: false,
          replay_safe: true,
        };
        const operation = {
          op_id: `${running.run_id}/op/1`,
          kind: 'tool_call',
          effect_id: '1:0',
          effect: { ...effect, interruptible: true },
          replay_safe: true,
          interruptible: true,
          attempt: 1,
          started_at: now,
        };
        const inFlight = await s.store.commit({
          record: { ...running, operation } as RunRecord,
          expectedVersion: running.version,
          events: [],
        });
        const steer = { control_id: 'st', command: 'steer', input: 'x', when_busy: 'interrupt' } as const;
        const decided = decideControl(inFlight, steer, 'digest', null, now);
        if (decided.kind !== 'applied') throw new Error(`steer not applied: ${decided.kind}`);
        const interrupted = await s.store.commit({
          record: decided.record,
          expectedVersion: inFlight.version,
          events: decided.events,
        });
        expect(await s.store.getStatus(running.run_id)).toEqual({
          status: 'running',
          interrupt_requested: `${running.run_id}/steer/1`,
        });

        // The executor reports the operation cancelled: the record between operations drops it.
        const cancelled = finishOperation(
          interrupted,
          { owner: 'w1', epoch: interrupted.epoch },
          { kind: 'operation_cancelled', acknowledged: true },
          now,
        );
        if (!cancelled.ok) throw new Error(`not finished: ${cancelled.code}`);
        expect(cancelled.record).not.toHaveProperty('interrupt_requested');
        await s.store.commit({
          record: cancelled.record,
          expectedVersion: interrupted.version,
          events: cancelled.events,
        });
        expect(await s.store.getStatus(running.run_id)).toEqual({
          status: 'running',
          interrupt_requested: null,
        });
      });

      it('refuses a create on a subject with a live run as subject_taken, and writes nothing of it', async () => {
        const parent = await storedRun(s.store);
        const first = await storedRun(s.store);
        const second = draft({ subject: first.subject });
        const refused = await refusal(
          s.store.commit({
            record: second.record,
            expectedVersion: null,
            events: second.events,
            createKey: { principalKey: 'user:alice', key: 'k-unused' },
            parentLink: parent.run_id,
          }),
        );
        expect(refused.code).toBe('subject_taken');
        expect(await s.store.getRun(second.record.run_id)).toBeNull();
        expect(await s.store.readEvents(second.record.run_id, 0, 10)).toEqual([]);
        expect(await s.store.findBySubject(first.subject)).toBe(first.run_id);
        expect(await s.store.findByCreateKey('user:alice', 'k-unused')).toBeNull();
        expect(await s.store.listChildren(parent.run_id)).toEqual([]);
      });

      it('refuses a create whose create key was used as create_key_taken, and writes nothing of it', async () => {
        const first = await storedRun(s.store, {}, { createKey: { principalKey: 'user:alice', key: 'k-2' } });
        const second = draft();
        const refused = await refusal(
          s.store.commit({
            record: second.record,
            expectedVersion: null,
            events: second.events,
            createKey: { principalKey: 'user:alice', key: 'k-2' },
          }),
        );
        expect(refused.code).toBe('create_key_taken');
        expect(await s.store.getRun(second.record.run_id)).toBeNull();
        expect(await s.store.findBySubject(second.record.subject)).toBeNull();
        expect((await s.store.findByCreateKey('user:alice', 'k-2'))?.run_id).toBe(first.run_id);
        // The subject the refused create would have taken is free.
        const retried = await s.store.commit({
          record: second.record,
          expectedVersion: null,
          events: second.events,
        });
        expect(await s.store.findBySubject(retried.subject)).toBe(retried.run_id);
      });

      it('names the subject when both the subject and the create key are taken', async () => {
        const first = await storedRun(s.store, {}, { createKey: { principalKey: 'user:alice', key: 'k-3' } });
        const second = draft({ subject: first.subject });
        const refused = await refusal(
          s.store.commit({
            record: second.record,
            expectedVersion: null,
            events: second.events,
            createKey: { principalKey: 'user:alice', key: 'k-3' },
          }),
        );
        expect(refused.code).toBe('subject_taken');
      });

      it('refuses a second create of the same run id as stale_version, and keeps the first', async () => {
        const created = draft();
        const first = await s.store.commit({
          record: created.record,
          expectedVersion: null,
          events: created.events,
        });
        const again = { ...created.record, subject: newSubject() } as RunRecord;
        const refused = await refusal(
          s.store.commit({ record: again, expectedVersion: null, events: created.events }),
        );
        expect(refused.code).toBe('stale_version');
        expect(await s.store.getRun(first.run_id)).toEqual(first);
        expect(await s.store.findBySubject(again.subject)).toBeNull();
      });
    });

    describe('versions and fences', () => {
      freshStoreEach(false);
      it('refuses a commit from a stale version as stale_version with the current record, and writes nothing', async () => {
        const run = await storedRun(s.store);
        const { record } = await append(s.store, run, [{ a: 1 }]);
        const refused = await refusal(
          append(s.store, run, [{ zombie: true }], {
            state: { rev: 1, value: { z: 1 } },
            checkpoints: [checkpoint(1, 1)],
          }),
        );
        expect(refused.code).toBe('stale_version');
        expect(refused.current).toEqual(record);
        expect(await s.store.getRun(run.run_id)).toEqual(record);
        expect((await s.store.readEvents(run.run_id, 0, 100)).map((e) => e.data)).toEqual([
          { input: 'hello' },
          { a: 1 },
        ]);
        expect(await s.store.listCheckpoints(run.run_id)).toEqual([]);
      });

      it('refuses a record the closed schema refuses, even one spread from a stored record, and writes nothing', async () => {
        const record = await storedRun(s.store);
        // Waiting with no open request has no schema: an illegal combination.
        const illegal = { ...record, status: 'waiting', lease: null } as unknown as RunRecord;
        await expect(
          s.store.commit({ record: illegal, expectedVersion: record.version, events: [] }),
        ).rejects.toThrow(/illegal run record/);
        expect((await s.store.getRun(record.run_id))?.version).toBe(record.version);
      });

      it('refuses an update of a run that was never created as stale_version', async () => {
        const never = draft().record;
        const refused = await refusal(
          s.store.commit({ record: { ...never, version: 1 } as RunRecord, expectedVersion: 1, events: [] }),
        );
        expect(refused.code).toBe('stale_version');
        expect(refused.current).toBeNull();
        expect(await s.store.getRun(never.run_id)).toBeNull();
      });

      it('refuses a commit under another owner’s lease as fenced_out, and the owner’s own fence commits', async () => {
        const held = await leased(s.store, await storedRun(s.store), 'owner-a');
        const refused = await refusal(
          append(s.store, held, [{ zombie: true }], { fence: { owner: 'owner-b', epoch: held.epoch } }),
        );
        expect(refused.code).toBe('fenced_out');
        expect(refused.current).toEqual(held);
        expect(await s.store.getRun(held.run_id)).toEqual(held);
        expect(await s.store.readEvents(held.run_id, held.last_seq, 10)).toEqual([]);
        const owned = await append(s.store, held, [{ ok: true }], {
          fence: { owner: 'owner-a', epoch: held.epoch },
        });
        expect(owned.record.version).toBe(held.version + 1);
        expect(await s.store.readEvents(held.run_id, held.last_seq, 10)).toEqual(owned.events);
      });

      it('refuses the same owner under an older epoch as fenced_out (the epoch is part of the fence)', async () => {
        const held = await leased(s.store, await storedRun(s.store), 'owner-a');
        const refused = await refusal(
          append(s.store, held, [{ zombie: true }], { fence: { owner: 'owner-a', epoch: held.epoch - 1 } }),
        );
        expect(refused.code).toBe('fenced_out');
        expect(await s.store.getRun(held.run_id)).toEqual(held);
      });

      it('refuses a fence once the run holds no lease as fenced_out', async () => {
        const held = await leased(s.store, await storedRun(s.store), 'owner-a');
        const fence = { owner: 'owner-a', epoch: held.epoch };
        const release = releaseLease(held, fence, Date.now());
        if (!release.ok) throw new Error(release.code);
        const released = await s.store.commit({
          record: release.record,
          expectedVersion: held.version,
          fence,
          events: release.events,
        });
        expect(released.lease).toBeNull();
        const refused = await refusal(append(s.store, released, [{ zombie: true }], { fence }));
        expect(refused.code).toBe('fenced_out');
        expect(await s.store.getRun(held.run_id)).toEqual(released);
      });

      it('refuses the fence holder reading a stale version as stale_version, not fenced_out', async () => {
        const held = await leased(s.store, await storedRun(s.store), 'owner-a');
        const fence = { owner: 'owner-a', epoch: held.epoch };
        const { record } = await append(s.store, held, [{ first: true }], { fence });
        const refused = await refusal(append(s.store, held, [{ again: true }], { fence }));
        expect(refused.code).toBe('stale_version');
        expect(refused.current).toEqual(record);
      });
    });

    describe('the event log', () => {
      freshStoreEach(false);
      it('reads commits of any size back contiguous, in order, for any after and limit', async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 5 }),
            fc.integer({ min: 0, max: 30 }),
            fc.integer({ min: 1, max: 30 }),
            async (sizes, after, limit) => {
              let record = await storedRun(s.store);
              const all: RunEvent[] = (await s.store.readEvents(record.run_id, 0, 10)).slice();
              for (const [c, size] of sizes.entries()) {
                const out = await append(
                  s.store,
                  record,
                  Array.from({ length: size }, (_, i) => ({ c, i })),
                );
                record = out.record;
                all.push(...out.events);
              }
              expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
              const read = await s.store.readEvents(record.run_id, after, limit);
              expect(read).toEqual(all.filter((e) => e.seq > after).slice(0, limit));
            },
          ),
          { numRuns: 30 },
        );
      });

      it('never returns checkpoint, state, ack or record items as events', async () => {
        let { record } = await append(s.store, await storedRun(s.store), [{ x: 1 }, { x: 2 }], {
          state: { rev: 1, value: { s: 1 } },
          checkpoints: [checkpoint(1, 1)],
          controlAck: { control_id: 'ctl-1', digest: 'd', ack: { ack: 'applied', seq: 3 }, seq: 3 },
        });
        // State without events (not expected from the engine): its own item.
        record = await s.store.commit({
          record: { ...record, state_rev: 2 } as RunRecord,
          expectedVersion: record.version,
          events: [],
          state: { rev: 2, value: { s: 2 } },
        });
        ({ record } = await append(s.store, record, [{ x: 3 }], { checkpoints: [checkpoint(2, 2)] }));
        const events = await s.store.readEvents(record.run_id, 0, 100);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect(events.map((e) => e.kind)).toEqual([
          'run_started',
          'steer_queued',
          'steer_queued',
          'steer_queued',
        ]);
        expect(await s.store.readEvents(record.run_id, 4, 100)).toEqual([]);
        expect(await s.store.readEvents(record.run_id, 3, 1)).toEqual([events[3]]);
        expect(await s.store.readEvents('store-never-created', 0, 100)).toEqual([]);
      });

      it('serves the events of a held version from its remembered tail, with no request, stopping at its last seq', async () => {
        const created = await storedRun(s.store);
        const first = await append(s.store, created, [{ a: 1 }, { a: 2 }]);
        const second = await append(s.store, first.record, [{ a: 3 }]);
        const all = await s.store.readEvents(created.run_id, 0, 100);
        const requests = () => s.store.metrics.reads + s.store.metrics.queries;
        const before = requests();
        // The version this store wrote last: its tail is known, the answer is the same as a read.
        expect(await s.store.readEvents(created.run_id, 0, 100, second.record)).toEqual(all);
        expect(await s.store.readEvents(created.run_id, 1, 1, second.record)).toEqual([all[1]]);
        expect(await s.store.readEvents(created.run_id, second.record.last_seq, 10, second.record)).toEqual(
          [],
        );
        expect(requests()).toBe(before);
        // An older version held: the store knows only the newest tail, so it reads, and says all.
        expect(await s.store.readEvents(created.run_id, 0, 100, first.record)).toEqual(all);
        expect(requests()).toBe(before + 1);
      });

      it("flushes a small record's tail before its item passes one write unit, so that each write costs one unit", async () => {
        let record = await storedRun(s.store);
        const all: RunEvent[] = (await s.store.readEvents(record.run_id, 0, 10)).slice();
        const units: number[] = [];
        const writes: number[] = [];
        for (let c = 0; c < 30; c++) {
          const [u, w] = [s.store.metrics.writeCapacity, s.store.metrics.writeRequests];
          // A small commit that compresses poorly: about 60 bytes more in the record item each time.
          const out = await append(s.store, record, [{ c, note: randomUUID().slice(0, 24) }]);
          units.push(s.store.metrics.writeCapacity - u);
          writes.push(s.store.metrics.writeRequests - w);
          record = out.record;
          all.push(...out.events);
        }
        // Every record write stays within one unit; a flush adds its page (one more request).
        expect(writes.filter((w) => w === 2).length).toBeGreaterThan(0);
        for (const [i, w] of writes.entries()) expect(units[i]).toBe(w);
        expect(await s.store.readEvents(record.run_id, 0, 100)).toEqual(all);
      });

      it('keeps a record too large for one write unit taking small commits inline, not a page per commit', async () => {
        // An objective that does not compress: the record item alone passes 1 KB.
        const objective = Array.from({ length: 40 }, () => randomUUID()).join(' ');
        let record = await storedRun(s.store, { objective });
        const all: RunEvent[] = (await s.store.readEvents(record.run_id, 0, 10)).slice();
        const writes: number[] = [];
        for (let c = 0; c < 6; c++) {
          const before = s.store.metrics.writeRequests;
          const out = await append(s.store, record, [{ c }]);
          writes.push(s.store.metrics.writeRequests - before);
          record = out.record;
          all.push(...out.events);
        }
        // The tail takes the first commits (one record write each) before a flush adds a page.
        expect(writes.slice(0, 2)).toEqual([1, 1]);
        expect(writes.reduce((a, b) => a + b, 0)).toBeLessThan(12);
        expect(await s.store.readEvents(record.run_id, 0, 100)).toEqual(all);
      });

      it('reads a commit larger than one page back whole, from inside a page and up to a limit inside another', async () => {
        const filler = 'p'.repeat(INLINE_LIMIT - 1_024);
        // More serialized bytes than one page holds.
        const count = Math.ceil((2 * PAGE_LIMIT) / filler.length) + 1;
        const data = Array.from({ length: count }, (_, i) => ({ i, filler }));
        const state = { s: 'x'.repeat(INLINE_LIMIT - 1_024) };
        const { record, events } = await append(s.store, await storedRun(s.store), data, {
          state: { rev: 1, value: state },
        });
        expect(s.blobPuts).toEqual([]);
        expect(await s.store.readEvents(record.run_id, 1, 100)).toEqual(events);
        for (const [after, limit] of [
          [3, 4],
          [7, 9],
          [count - 2, 10],
          [1, count],
        ] as const) {
          expect(await s.store.readEvents(record.run_id, after, limit)).toEqual(
            events.filter((e) => e.seq > after).slice(0, limit),
          );
        }
        expect(await s.store.getState(record.run_id, 1, record.state_at)).toEqual(state);
      });
    });

    describe('a fork linking the events of the run it was forked from', () => {
      freshStoreEach(false);
      it('reads the linked events through, for any after and limit, also through a fork of a fork', async () => {
        // The origin: run_started, then 3 commits (2..4, 5..7, 8..9).
        let origin = await storedRun(s.store);
        const originEvents = await s.store.readEvents(origin.run_id, 0, 10);
        for (const size of [3, 3, 2]) {
          const out = await append(
            s.store,
            origin,
            Array.from({ length: size }, (_, i) => ({ o: i })),
          );
          origin = out.record;
          originEvents.push(...out.events);
        }
        // A fork at cutoff 6: its own run_started, events 2..6 linked, then its own from 7.
        const created = draft();
        let fork = await s.store.commit({
          record: { ...created.record, last_seq: 6 } as RunRecord,
          expectedVersion: null,
          events: created.events,
          eventLink: { run_id: origin.run_id, first_seq: 2, last_seq: 6 },
        });
        const own = await append(s.store, fork, [{ f: 1 }, { f: 2 }]);
        fork = own.record;
        const forkEvents = [...created.events, ...originEvents.slice(1, 6), ...own.events];
        expect(forkEvents.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        for (let after = 0; after <= 8; after += 1) {
          for (const limit of [1, 2, 5, 100]) {
            expect(await s.store.readEvents(fork.run_id, after, limit)).toEqual(
              forkEvents.filter((e) => e.seq > after).slice(0, limit),
            );
          }
        }
        // A fork of the fork at cutoff 7: 2..6 are the origin's, 7 the first fork's.
        const again = draft();
        const second = await s.store.commit({
          record: { ...again.record, last_seq: 7 } as RunRecord,
          expectedVersion: null,
          events: again.events,
          eventLink: { run_id: fork.run_id, first_seq: 2, last_seq: 7 },
        });
        expect(await s.store.readEvents(second.run_id, 0, 100)).toEqual([
          ...again.events,
          ...forkEvents.slice(1, 7),
        ]);
        // The origin is what it was.
        expect(await s.store.readEvents(origin.run_id, 0, 100)).toEqual(originEvents);
      });
    });

    describe('domain state where the record says', () => {
      freshStoreEach(false);
      it('sets state_at on the returned and stored record, getState reads it, and a checkpoint carries it', async () => {
        const run = await storedRun(s.store);
        expect(run.state_at).toBeUndefined();
        expect(await s.store.getState(run.run_id, 0)).toBeNull();
        const { record } = await append(s.store, run, [{ a: 1 }, { a: 2 }], {
          state: { rev: 1, value: { v: 'one' } },
          checkpoints: [checkpoint(1, 1), checkpoint(2, 0)],
        });
        expect(record.state_at).toBeTypeOf('string');
        expect((await s.store.getRun(run.run_id))?.state_at).toBe(record.state_at);
        expect(await s.store.getState(run.run_id, 1, record.state_at)).toEqual({ v: 'one' });
        await expect(s.store.getState(run.run_id, 2, record.state_at)).rejects.toThrow(
          /holds domain state 1, not 2/,
        );
        const cp = await s.store.getCheckpoint(run.run_id, 1);
        expect(cp?.state_at).toBe(record.state_at);
        expect(await s.store.getState(run.run_id, cp?.state_rev ?? -1, cp?.state_at)).toEqual({ v: 'one' });
        expect((await s.store.getCheckpoint(run.run_id, 2))?.state_at).toBeUndefined();

        // A commit without state keeps pointing at the item that holds the record's state_rev.
        const later = await append(s.store, record, [{ a: 3 }], { checkpoints: [checkpoint(3, 1)] });
        expect(later.record.state_at).toBe(record.state_at);
        expect((await s.store.getCheckpoint(run.run_id, 3))?.state_at).toBe(record.state_at);

        // State without events (not expected from the engine): its own item, found by rev alone too.
        const bare = await s.store.commit({
          record: { ...later.record, state_rev: 2 } as RunRecord,
          expectedVersion: later.record.version,
          events: [],
          state: { rev: 2, value: { v: 'two' } },
        });
        expect(bare.state_at).toBeTypeOf('string');
        expect(bare.state_at).not.toBe(record.state_at);
        expect(await s.store.getState(run.run_id, 2, bare.state_at)).toEqual({ v: 'two' });
        expect(await s.store.getState(run.run_id, 2)).toEqual({ v: 'two' });
        await expect(s.store.getState(run.run_id, 7)).rejects.toThrow(/missing/);
      });

      it('never rewrites a state once written: each revision reads back as it was at its state_at', async () => {
        let record = await storedRun(s.store);
        const places: { rev: number; at: string | undefined; value: unknown }[] = [];
        for (let rev = 1; rev <= 4; rev += 1) {
          const value = { rev, text: `state ${rev}` };
          ({ record } = await append(s.store, record, [{ rev }], { state: { rev, value } }));
          places.push({ rev, at: record.state_at, value });
        }
        // A refused commit carrying a state writes none of it.
        const refused = await refusal(
          s.store.commit({
            record: { ...record, state_rev: 5, last_seq: record.last_seq + 1 } as RunRecord,
            expectedVersion: record.version - 1,
            events: [{ seq: record.last_seq + 1, kind: 'steer_queued', at: 1, data: {} }],
            state: { rev: 5, value: { rev: 'never' } },
          }),
        );
        expect(refused.code).toBe('stale_version');
        // Revisions committed into one inline tail share its page key (the key it is flushed to);
        // each still reads back as it was written.
        for (const p of places) expect(await s.store.getState(record.run_id, p.rev, p.at)).toEqual(p.value);
        expect((await s.store.getRun(record.run_id))?.state_rev).toBe(4);
      });

      it('never rewrites a state written without events (D#): writing the revision again is refused', async () => {
        const run = await storedRun(s.store);
        const first = await s.store.commit({
          record: { ...run, state_rev: 1 } as RunRecord,
          expectedVersion: run.version,
          events: [],
          state: { rev: 1, value: { v: 'first' } },
        });
        expect(first.state_at).toBe('D#1');
        const again = await refusal(
          s.store.commit({
            record: first,
            expectedVersion: first.version,
            events: [],
            state: { rev: 1, value: { v: 'second' } },
          }),
        );
        expect(again.code).toBe('validation');
        expect(await s.store.getState(run.run_id, 1, 'D#1')).toEqual({ v: 'first' });
        expect(await s.store.getRun(run.run_id)).toEqual(first);
      });
    });

    describe('checkpoints', () => {
      freshStoreEach(false);
      it('lists checkpoints in number order, reads one by number, and null for one never written', async () => {
        const run = await storedRun(s.store);
        const { record } = await append(s.store, run, [{ a: 1 }], {
          state: { rev: 1, value: { v: 1 } },
          checkpoints: [checkpoint(2, 1), checkpoint(1, 0)],
        });
        await append(s.store, record, [{ a: 2 }], { checkpoints: [checkpoint(10, 1)] });
        expect((await s.store.listCheckpoints(run.run_id)).map((c) => c.n)).toEqual([1, 2, 10]);
        expect(await s.store.getCheckpoint(run.run_id, 10)).toEqual({
          ...checkpoint(10, 1),
          state_at: record.state_at,
        });
        expect(await s.store.getCheckpoint(run.run_id, 3)).toBeNull();
        expect(await s.store.listCheckpoints('store-never-created')).toEqual([]);
      });

      it('refuses a commit that writes a checkpoint number again, and writes nothing of it', async () => {
        const { record } = await append(s.store, await storedRun(s.store), [{ a: 1 }], {
          checkpoints: [checkpoint(1, 0)],
        });
        const refused = await refusal(
          append(s.store, record, [{ a: 2 }], { checkpoints: [{ ...checkpoint(1, 0), reason: 'again' }] }),
        );
        expect(refused.code).toBe('validation');
        expect(await s.store.getRun(record.run_id)).toEqual(record);
        expect(await s.store.readEvents(record.run_id, record.last_seq, 10)).toEqual([]);
        expect((await s.store.getCheckpoint(record.run_id, 1))?.reason).toBe('test');
      });
    });

    describe('control acks', () => {
      freshStoreEach(false);
      const ack: ControlAckItem = {
        control_id: 'ctl-dup',
        digest: 'd',
        ack: { ack: 'applied', seq: 2 },
        seq: 2,
      };

      it('reads the run and one control’s ack together, null for a control never acked', async () => {
        const { record } = await append(s.store, await storedRun(s.store), [{ a: 1 }], { controlAck: ack });
        expect(await s.store.getRunAndAck(record.run_id, 'ctl-dup')).toEqual({ record, ack });
        expect(await s.store.getRunAndAck(record.run_id, 'ctl-other')).toEqual({ record, ack: null });
        expect(await s.store.getRunAndAck('store-never-created', 'ctl-dup')).toEqual({
          record: null,
          ack: null,
        });
      });

      it('refuses a second ack for the same control id as control_ack_exists, and writes nothing', async () => {
        const { record } = await append(s.store, await storedRun(s.store), [{ a: 1 }], {
          state: { rev: 1, value: {} },
          checkpoints: [checkpoint(1, 1)],
          controlAck: ack,
        });
        const refused = await refusal(
          append(s.store, record, [{ a: 2 }, { a: 3 }], {
            state: { rev: 2, value: {} },
            checkpoints: [checkpoint(2, 2)],
            controlAck: { ...ack, seq: 4 },
          }),
        );
        expect(refused.code).toBe('control_ack_exists');
        expect(await s.store.getRun(record.run_id)).toEqual(record);
        expect(await s.store.readEvents(record.run_id, 2, 10)).toEqual([]);
        expect(await s.store.getCheckpoint(record.run_id, 2)).toBeNull();
        expect((await s.store.getRunAndAck(record.run_id, 'ctl-dup')).ack).toEqual(ack);
      });
    });

    describe('indexes', () => {
      freshStoreEach(false);
      it('finds a resume key after its result request opened, and no longer once the result was delivered', async () => {
        const resumeKey = `rk-${randomUUID()}`;
        const run = await storedRun(s.store);
        expect(await s.store.findByResumeKey(resumeKey)).toBeNull();
        const opened = await append(
          s.store,
          run,
          [{ kind: 'result', request_id: 'req-1', op_id: 'op-1', resume_key: resumeKey }],
          { kind: 'request_opened' },
        );
        expect(await s.store.findByResumeKey(resumeKey)).toEqual({ run_id: run.run_id, op_id: 'op-1' });
        // A request of another kind indexes nothing.
        const other = `rk-${randomUUID()}`;
        const asked = await append(
          s.store,
          opened.record,
          [{ kind: 'input', request_id: 'req-2', op_id: 'op-2', resume_key: other }],
          { kind: 'request_opened' },
        );
        expect(await s.store.findByResumeKey(other)).toBeNull();
        await append(s.store, asked.record, [{ request_id: 'req-1', op_id: 'op-1', resume_key: resumeKey }], {
          kind: 'result_delivered',
        });
        expect(await s.store.findByResumeKey(resumeKey)).toBeNull();
      });

      it("keeps a resume key to the principal whose run waits on it: another's wait is refused until the key expires", async () => {
        const key = `rk-${randomUUID()}`;
        const bob = { kind: 'user' as const, id: 'bob' };
        const waitAt = async (record: RunRecord, opId: string, at: number, expiresAt: number | null = null) =>
          s.store.commit({
            record: { ...record, last_seq: record.last_seq + 1 } as RunRecord,
            expectedVersion: record.version,
            events: [
              {
                seq: record.last_seq + 1,
                kind: 'request_opened',
                at,
                data: {
                  kind: 'result',
                  request_id: 'req-1',
                  op_id: opId,
                  resume_key: key,
                  expires_at: expiresAt,
                },
              },
            ],
          });
        const first = await storedRun(s.store);
        const bobs = await storedRun(s.store, { principal: bob });
        const waiting = await waitAt(first, 'op-a', 1_000, 5_000);
        // Bob cannot take alice's waiting key: nothing of his run changes, her wait keeps it.
        expect((await refusal(waitAt(bobs, 'op-b', 2_000))).code).toBe('resume_key_held');
        expect(await s.store.getRun(bobs.run_id)).toEqual(bobs);
        expect(await s.store.findByResumeKey(key)).toEqual({ run_id: first.run_id, op_id: 'op-a' });
        // Used (its result delivered), it stays hers: bob is still refused, her next run takes it.
        await append(s.store, waiting, [{ request_id: 'req-1', op_id: 'op-a', resume_key: key }], {
          kind: 'result_delivered',
        });
        expect((await refusal(waitAt(bobs, 'op-b', 3_000))).code).toBe('resume_key_held');
        const second = await waitAt(await storedRun(s.store), 'op-c', 4_000, 5_000);
        expect(await s.store.findByResumeKey(key)).toEqual({ run_id: second.run_id, op_id: 'op-c' });
        // Seven days after her wait expired no delivery can be a repeat: the key is free for anyone.
        expect((await refusal(waitAt(bobs, 'op-b', 5_000 + DELIVERY_MEMORY_MS - 1_000))).code).toBe(
          'resume_key_held',
        );
        await waitAt(bobs, 'op-b', 5_000 + DELIVERY_MEMORY_MS + 1_000);
        expect(await s.store.findByResumeKey(key)).toEqual({ run_id: bobs.run_id, op_id: 'op-b' });
      });

      it('holds an early result for a free resume key, refuses the wait on it, and applies it once with the wait', async () => {
        const resumeKey = `rk-${randomUUID()}`;
        const run = await storedRun(s.store);
        const hold = { resume_key: resumeKey, body: '{"status":"succeeded"}', delivery_id: 'd-1' };
        expect(await s.store.holdEarlyResult({ ...hold, received_at: 900, expires_at: 5_000 })).toBe(true);
        expect(await s.store.holdEarlyResult({ ...hold, received_at: 901, expires_at: 5_000 })).toBe(false);
        expect(await s.store.readResumeKey(resumeKey, 1_000)).toEqual({
          kind: 'early',
          body: hold.body,
          delivery_id: 'd-1',
          received_at: 900,
          expires_at: 5_000,
        });
        expect(await s.store.findByResumeKey(resumeKey)).toBeNull();
        const opened = {
          seq: run.last_seq + 1,
          kind: 'request_opened' as const,
          at: 1_000,
          data: { kind: 'result', request_id: 'req-1', op_id: 'op-1', resume_key: resumeKey },
        };
        const refused = await refusal(
          s.store.commit({
            record: { ...run, last_seq: run.last_seq + 1 } as RunRecord,
            expectedVersion: run.version,
            events: [opened],
          }),
        );
        expect(refused.code).toBe('resume_key_held');
        expect(await s.store.getRun(run.run_id)).toEqual(run);

        const delivered = [
          opened,
          {
            seq: run.last_seq + 2,
            kind: 'result_delivered' as const,
            at: 1_000,
            data: { request_id: 'req-1', resume_key: resumeKey, delivery_id: 'd-1', early: true },
          },
          {
            seq: run.last_seq + 3,
            kind: 'tool_result' as const,
            at: 1_000,
            operation_id: 'op-1',
            data: { tool: 't', envelope: {} },
          },
        ];
        await s.store.commit({
          record: { ...run, last_seq: run.last_seq + 3 } as RunRecord,
          expectedVersion: run.version,
          events: delivered,
        });
        expect(await s.store.readResumeKey(resumeKey, 1_000)).toEqual({
          kind: 'wait',
          run_id: run.run_id,
          op_id: 'op-1',
          delivered: { delivery_id: 'd-1', seq: run.last_seq + 3 },
        });
        expect(await s.store.holdEarlyResult({ ...hold, received_at: 1_001, expires_at: 5_000 })).toBe(false);
      });

      it('counts an expired early result as nothing: the wait takes the key', async () => {
        const resumeKey = `rk-${randomUUID()}`;
        const run = await storedRun(s.store);
        expect(
          await s.store.holdEarlyResult({
            resume_key: resumeKey,
            body: '1',
            received_at: 0,
            expires_at: 500,
          }),
        ).toBe(true);
        expect(await s.store.readResumeKey(resumeKey, 500)).toBeNull();
        await append(
          s.store,
          run,
          [{ kind: 'result', request_id: 'req-1', op_id: 'op-1', resume_key: resumeKey }],
          {
            kind: 'request_opened',
          },
        );
        expect(await s.store.readResumeKey(resumeKey, 1_000)).toEqual({
          kind: 'wait',
          run_id: run.run_id,
          op_id: 'op-1',
        });
      });

      it('lists the children linked to a parent in run id order, and none for a run without children', async () => {
        const parent = await storedRun(s.store);
        const ids = ['child-c', 'child-a', 'child-b'].map((id) => `${id}-${randomUUID()}`);
        for (const run_id of ids)
          await storedRun(
            s.store,
            { run_id, parent_run_id: parent.run_id, depth: 1 },
            { parentLink: parent.run_id },
          );
        expect(await s.store.listChildren(parent.run_id)).toEqual([...ids].sort());
        expect(await s.store.listChildren(ids[0] as string)).toEqual([]);
      });

      it('frees the subject of a run that ended, before and after its release lands', async () => {
        const run = await storedRun(s.store);
        // A commit of the live run keeps its subject, and a create on it is refused.
        const { record } = await append(s.store, run, [{ a: 1 }]);
        expect(await s.store.findBySubject(run.subject)).toBe(run.run_id);
        const early = draft({ subject: run.subject });
        expect(
          (
            await refusal(
              s.store.commit({ record: early.record, expectedVersion: null, events: early.events }),
            )
          ).code,
        ).toBe('subject_taken');
        const ended = failRun(record, 'test_ended', Date.now());
        if (!ended.ok) throw new Error(ended.code);
        const writesBefore = s.store.metrics.writeRequests;
        const stored = await s.store.commit({
          record: ended.record,
          expectedVersion: record.version,
          events: ended.events,
        });
        expect(stored.status).toBe('failed');
        // The ending commit is one write: the subject's release is the stream consumer's.
        expect(s.store.metrics.writeRequests - writesBefore).toBe(1);
        expect(await s.store.findBySubject(run.subject)).toBe(run.run_id);
        // Before the release lands, a create takes the subject over from the ended run.
        const next = await storedRun(s.store, { subject: run.subject });
        expect(await s.store.findBySubject(run.subject)).toBe(next.run_id);
        // The ended run's release, late, leaves the new run's subject alone.
        await s.store.releaseSubject(stored);
        expect(await s.store.findBySubject(run.subject)).toBe(next.run_id);
        // A subject held by the new (live) run is refused as before.
        const third = draft({ subject: run.subject });
        expect(
          (
            await refusal(
              s.store.commit({ record: third.record, expectedVersion: null, events: third.events }),
            )
          ).code,
        ).toBe('subject_taken');
        expect(await s.store.getRun(third.record.run_id)).toBeNull();
      });

      it("releases an ended run's subject, once and idempotently", async () => {
        const run = await storedRun(s.store);
        const ended = failRun(run, 'test_ended', Date.now());
        if (!ended.ok) throw new Error(ended.code);
        const stored = await s.store.commit({
          record: ended.record,
          expectedVersion: run.version,
          events: ended.events,
        });
        await s.store.releaseSubject(stored);
        expect(await s.store.findBySubject(run.subject)).toBeNull();
        await s.store.releaseSubject(stored);
        expect(await s.store.findBySubject(run.subject)).toBeNull();
      });

      it("lets only one of two creates take over an ended run's subject", async () => {
        const run = await storedRun(s.store);
        const ended = failRun(run, 'test_ended', Date.now());
        if (!ended.ok) throw new Error(ended.code);
        await s.store.commit({ record: ended.record, expectedVersion: run.version, events: ended.events });
        const [a, b] = [draft({ subject: run.subject }), draft({ subject: run.subject })];
        const outcomes = await Promise.allSettled([
          s.store.commit({ record: a.record, expectedVersion: null, events: a.events }),
          s.store.commit({ record: b.record, expectedVersion: null, events: b.events }),
        ]);
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        expect(won).toHaveLength(1);
        const lost = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
        expect((lost.reason as CommitRejected).code).toBe('subject_taken');
        const winner = (won[0] as PromiseFulfilledResult<RunRecord>).value;
        expect(await s.store.findBySubject(run.subject)).toBe(winner.run_id);
        const loser = winner.run_id === a.record.run_id ? b : a;
        expect(await s.store.getRun(loser.record.run_id)).toBeNull();
      });
    });

    describe('admission quota items', () => {
      freshStoreEach(false);
      const window = 1_700_000_040_000;

      it('holds a live-run slot from the create to the commit that ends the run', async () => {
        // The slot is released under the ending record's own principal: the create claims it there.
        const principal = { kind: 'user' as const, id: `quota-${randomUUID()}` };
        const principalKey = principalKeyOf(principal);
        expect(await s.store.readQuota(principalKey, window)).toEqual({ held_slots: [], window_count: 0 });
        const first = await storedRun(s.store, { principal, quota_slot: 0 }, { quota: { principalKey } });
        await storedRun(s.store, { principal, quota_slot: 1 }, { quota: { principalKey } });
        expect((await s.store.readQuota(principalKey, window)).held_slots).toEqual([0, 1]);
        // A second claim of a held slot is refused whole: no record, no subject.
        const clash = draft({ principal, quota_slot: 1 });
        expect(
          (
            await refusal(
              s.store.commit({
                record: clash.record,
                expectedVersion: null,
                events: clash.events,
                quota: { principalKey },
              }),
            )
          ).code,
        ).toBe('quota_moved');
        expect(await s.store.getRun(clash.record.run_id)).toBeNull();
        expect(await s.store.findBySubject(clash.record.subject)).toBeNull();
        // Ending the run frees its slot in the same commit.
        const ended = failRun(first, 'test_ended', Date.now());
        if (!ended.ok) throw new Error(ended.code);
        await s.store.commit({ record: ended.record, expectedVersion: first.version, events: ended.events });
        expect((await s.store.readQuota(principalKey, window)).held_slots).toEqual([1]);
      });

      it('counts creates per window, each claim conditioned on the count it read', async () => {
        const principalKey = `user:rate-${randomUUID()}`;
        await storedRun(s.store, {}, { quota: { principalKey, window: { start: window, count: 1 } } });
        await storedRun(s.store, {}, { quota: { principalKey, window: { start: window, count: 2 } } });
        expect(await s.store.readQuota(principalKey, window)).toEqual({ held_slots: [], window_count: 2 });
        // A create that read the count before the second one landed is refused.
        const late = draft();
        const refused = await refusal(
          s.store.commit({
            record: late.record,
            expectedVersion: null,
            events: late.events,
            quota: { principalKey, window: { start: window, count: 2 } },
          }),
        );
        expect(refused.code).toBe('quota_moved');
        expect(await s.store.getRun(late.record.run_id)).toBeNull();
        // The next window starts from zero.
        expect((await s.store.readQuota(principalKey, window + 60_000)).window_count).toBe(0);
      });
    });

    describe('sweep candidates', () => {
      freshStoreEach(true);
      it('lists the runs of one shard that are due by now, soonest first, up to the limit', async () => {
        const t0 = 1_700_000_000_000;
        const shard = 5;
        // Queued runs are due at their wake deadline (their creation); a leased run at the lease's expiry.
        const early = await storedRun(s.store, { run_id: runIdInShard(shard) }, {}, t0);
        const late = await storedRun(s.store, { run_id: runIdInShard(shard) }, {}, t0 + 10);
        const held = await leased(
          s.store,
          await storedRun(s.store, { run_id: runIdInShard(shard) }, {}, t0),
          'w',
          t0,
        );
        const lease = held.lease?.expires_at ?? 0;
        const elsewhere = await storedRun(s.store, { run_id: runIdInShard(shard + 1) }, {}, t0);
        // An ended run owes the sweeper nothing.
        const done = await storedRun(s.store, { run_id: runIdInShard(shard) }, {}, t0);
        const failed = failRun(done, 'test_ended', t0 + 1);
        if (!failed.ok) throw new Error(failed.code);
        await s.store.commit({ record: failed.record, expectedVersion: done.version, events: failed.events });

        expect(await s.store.sweepCandidates(shard, t0 - 1, 10)).toEqual([]);
        expect(await s.store.sweepCandidates(shard, t0 + 10, 10)).toEqual([early.run_id, late.run_id]);
        expect(await s.store.sweepCandidates(shard, t0 + 10, 1)).toEqual([early.run_id]);
        expect(await s.store.sweepCandidates(shard, lease - 1, 10)).toEqual([early.run_id, late.run_id]);
        expect(await s.store.sweepCandidates(shard, lease, 10)).toEqual([
          early.run_id,
          late.run_id,
          held.run_id,
        ]);
        expect(await s.store.sweepCandidates(shard + 1, lease, 10)).toEqual([elsewhere.run_id]);
        expect(await s.store.sweepCandidates(shard + 2, lease, 10)).toEqual([]);
      });

      it('refuses a shard outside [0, SWEEP_SHARDS) with a RangeError', async () => {
        await expect(s.store.sweepCandidates(SWEEP_SHARDS, Date.now(), 10)).rejects.toBeInstanceOf(
          RangeError,
        );
        await expect(s.store.sweepCandidates(-1, Date.now(), 10)).rejects.toBeInstanceOf(RangeError);
      });
    });

    describe('listing by status', () => {
      freshStoreEach(true);
      it('pages every run of a status exactly once, for any page size, following the cursor', async () => {
        const t0 = 1_700_000_000_000;
        const queued: string[] = [];
        // Several runs share a creation time; ids of mixed case (code-unit order is not locale order).
        for (let i = 0; i < 9; i += 1) {
          const run_id = `list-${'aBcD'[i % 4]}-${randomUUID()}`;
          queued.push((await storedRun(s.store, { run_id }, {}, t0 + (i % 3))).run_id);
        }
        const running = await leased(s.store, await storedRun(s.store, {}, {}, t0), 'w', t0);
        // Newest first over every shard; runs created in the same millisecond by run id, descending.
        const newestFirst = queued
          .map((run_id, i) => ({ run_id, created_at: t0 + (i % 3) }))
          .sort((a, b) => b.created_at - a.created_at || (a.run_id < b.run_id ? 1 : -1))
          .map((r) => r.run_id);
        for (const limit of [1, 2, 4, 9, 10, 50]) {
          const { ids, pages } = await listAll(s.store, 'queued', limit);
          expect(ids).toEqual(newestFirst);
          expect(pages).toBeGreaterThanOrEqual(Math.ceil(queued.length / limit));
        }
        expect((await listAll(s.store, 'running', 3)).ids).toEqual([running.run_id]);
        expect((await listAll(s.store, 'paused', 3)).ids).toEqual([]);
      });

      it('lists runs created in one millisecond by run id, whatever order the index keeps them in', async () => {
        const t0 = 1_700_000_000_000;
        const ids: string[] = [];
        // Enough runs that every listing shard holds a tie longer than a small page.
        for (let i = 0; i < 40; i += 1) {
          const run_id = `tie-${'zAmB'[i % 4]}${String(i).padStart(2, '0')}-${randomUUID()}`;
          ids.push((await storedRun(s.store, { run_id }, {}, t0)).run_id);
        }
        const byIdDescending = [...ids].sort((a, b) => (a < b ? 1 : -1));
        for (const limit of [1, 3, 7])
          expect((await listAll(s.store, 'queued', limit)).ids).toEqual(byIdDescending);
      });

      it('keeps paging where it was when a newer run is created between pages', async () => {
        const t0 = 1_700_000_000_000;
        const older: string[] = [];
        for (let i = 0; i < 5; i += 1) older.unshift((await storedRun(s.store, {}, {}, t0 + i)).run_id);
        const first = await s.store.listByStatus('queued', 2);
        await storedRun(s.store, {}, {}, t0 + 10);
        const rest = await s.store.listByStatus('queued', 10, first.cursor);
        expect([...first.run_ids, ...rest.run_ids]).toEqual(older);
        expect(rest.cursor).toBeUndefined();
      });

      it('moves a run to the listing of its new status', async () => {
        const run = await storedRun(s.store);
        expect((await listAll(s.store, 'queued', 5)).ids).toEqual([run.run_id]);
        const held = await leased(s.store, run, 'w');
        expect((await listAll(s.store, 'queued', 5)).ids).toEqual([]);
        expect((await listAll(s.store, 'running', 5)).ids).toEqual([held.run_id]);
      });

      it('refuses a cursor it did not issue with a SyntaxError', async () => {
        await storedRun(s.store);
        for (const cursor of [
          'garbage',
          '3|garbage',
          '99|',
          '-1|',
          Buffer.from('{}').toString('base64url'),
          '',
          `0|${Buffer.from(JSON.stringify({ not: 'a key' })).toString('base64url')}`,
          `0|${Buffer.from('null').toString('base64url')}`,
        ]) {
          await expect(s.store.listByStatus('queued', 5, cursor), cursor).rejects.toBeInstanceOf(SyntaxError);
        }
      });
    });

    describe('listing by principal', () => {
      freshStoreEach(true);
      it("pages one principal's runs of every status newest first, and none of anyone else's", async () => {
        const t0 = 1_700_000_000_000;
        const bob = { kind: 'user' as const, id: 'bob' };
        const agent = { kind: 'agent' as const, id: 'planner', on_behalf_of: 'alice' };
        const alices: string[] = [];
        for (let i = 0; i < 7; i += 1) {
          const run_id = `list-${'aBcD'[i % 4]}-${randomUUID()}`;
          alices.push((await storedRun(s.store, { run_id }, {}, t0 + (i % 3))).run_id);
        }
        const running = await leased(s.store, await storedRun(s.store, {}, {}, t0 + 5), 'w', t0 + 5);
        alices.push(running.run_id);
        const bobs: string[] = [];
        for (let i = 0; i < 3; i += 1)
          bobs.push((await storedRun(s.store, { principal: bob }, {}, t0 + i)).run_id);
        const agents = [(await storedRun(s.store, { principal: agent }, {}, t0)).run_id];
        const newestFirst = async (ids: string[]) => {
          const records = await Promise.all(ids.map((id) => s.store.getRun(id)));
          return records
            .map((r) => ({ run_id: r?.run_id as string, created_at: r?.created_at as number }))
            .sort((a, b) => b.created_at - a.created_at || (a.run_id < b.run_id ? 1 : -1))
            .map((r) => r.run_id);
        };
        const listAllOf = async (key: string, limit: number) => {
          const ids: string[] = [];
          let cursor: string | undefined;
          let pages = 0;
          do {
            const page = await s.store.listByPrincipal(key, limit, cursor);
            expect(page.run_ids.length).toBeLessThanOrEqual(limit);
            ids.push(...page.run_ids);
            cursor = page.cursor;
            pages += 1;
            if (pages > 100) throw new Error('the cursor never ends');
          } while (cursor !== undefined);
          return ids;
        };
        for (const limit of [1, 2, 3, 8, 50]) {
          expect(await listAllOf(principalKeyOf(alice), limit)).toEqual(await newestFirst(alices));
          expect(await listAllOf(principalKeyOf(bob), limit)).toEqual(await newestFirst(bobs));
        }
        // An agent acting for alice is a principal of its own: its runs are under its key only.
        expect(await listAllOf(principalKeyOf(agent), 2)).toEqual(agents);
        expect(await listAllOf('user:nobody', 2)).toEqual([]);
        for (const cursor of ['garbage', Buffer.from('{}').toString('base64url')]) {
          await expect(s.store.listByPrincipal(principalKeyOf(bob), 5, cursor)).rejects.toBeInstanceOf(
            SyntaxError,
          );
        }
      });
    });

    describe('the listing key', () => {
      freshStoreEach(false);
      it('is 32 bytes, created once and then the same on every call, by one read', async () => {
        const first = await s.store.listingKey();
        expect(first).toBeInstanceOf(Uint8Array);
        expect(first.length).toBe(32);
        expect(new Set(first).size).toBeGreaterThan(1);
        const writes = s.store.metrics.writeRequests;
        const reads = s.store.metrics.reads;
        const again = await s.store.listingKey();
        expect(Buffer.from(again).equals(Buffer.from(first))).toBe(true);
        expect(s.store.metrics.writeRequests).toBe(writes);
        expect(s.store.metrics.reads).toBe(reads + 1);
      });
    });

    describe('payloads', () => {
      freshStoreEach(false);
      it('keeps a 450 KB event data and a 450 KB domain state in the blob store and reads both back intact', async () => {
        const big = { text: 'e'.repeat(450_000), n: [1, 2, 3] };
        const state = { text: 's'.repeat(450_000), nested: { ok: true } };
        const { record, events } = await append(
          s.store,
          await storedRun(s.store),
          [{ small: 1 }, big, { small: 2 }],
          {
            state: { rev: 1, value: state },
          },
        );
        expect([...s.blobPuts].sort()).toEqual([JSON.stringify(big), JSON.stringify(state)].sort());
        expect((await s.store.readEvents(record.run_id, 1, 10)).map((e) => e.data)).toEqual([
          { small: 1 },
          big,
          { small: 2 },
        ]);
        expect(await s.store.readEvents(record.run_id, 1, 10)).toEqual(events);
        expect(await s.store.getState(record.run_id, 1, record.state_at)).toEqual(state);
      });

      it('keeps a payload of INLINE_LIMIT bytes out of the blob store, and one byte more goes in', async () => {
        const exactly = { t: 'i'.repeat(INLINE_LIMIT - JSON.stringify({ t: '' }).length) };
        const above = { t: `${exactly.t}i` };
        expect(Buffer.byteLength(JSON.stringify(exactly))).toBe(INLINE_LIMIT);
        const { record } = await append(s.store, await storedRun(s.store), [exactly]);
        expect(s.blobPuts).toEqual([]);
        await append(s.store, record, [above]);
        expect(s.blobPuts).toEqual([JSON.stringify(above)]);
        expect((await s.store.readEvents(record.run_id, 1, 10)).map((e) => e.data)).toEqual([exactly, above]);
      });

      it('stores values nested past DynamoDB’s 32-level limit (record, event data, state, checkpoint) and reads them back', async () => {
        let deep: unknown = 'bottom';
        for (let i = 0; i < 200; i += 1) deep = { d: deep };
        const run = await storedRun(s.store);
        const nested = { ...run, executor_config: { deep } } as RunRecord;
        const { record, events } = await append(s.store, nested, [{ deep }], {
          state: { rev: 1, value: { deep } },
          checkpoints: [checkpoint(1, 1)].map((c) => ({ ...c, core: { deep } })),
        });
        expect(record.executor_config).toEqual({ deep });
        expect((await s.store.getRun(record.run_id))?.executor_config).toEqual({ deep });
        expect(await s.store.readEvents(record.run_id, 1, 10)).toEqual(events);
        expect(await s.store.getState(record.run_id, 1, record.state_at)).toEqual({ deep });
        expect((await s.store.getCheckpoint(record.run_id, 1))?.core).toEqual({ deep });
      });
    });

    describe('commits too large', () => {
      freshStoreEach(false);
      it(`refuses a commit of more than ${MAX_TRANSACT_ITEMS} writes whole, never truncated`, async () => {
        const run = await storedRun(s.store);
        // With the record's update: one write over the limit (the event rides in the record's tail).
        const checkpoints = Array.from({ length: MAX_TRANSACT_ITEMS }, (_, i) => checkpoint(i + 1, 0));
        await expect(append(s.store, run, [{ x: 1 }], { checkpoints })).rejects.toBeInstanceOf(
          CommitTooLarge,
        );
        expect(await s.store.getRun(run.run_id)).toEqual(run);
        expect(await s.store.readEvents(run.run_id, 0, 10)).toHaveLength(1);
        expect(await s.store.listCheckpoints(run.run_id)).toEqual([]);
      });

      // What DynamoDB would refuse as a ValidationException the planner refuses first, so both
      // adapters classify it alike.
      it('refuses a commit with an item above DynamoDB’s 400 KB item limit whole (a checkpoint) as CommitTooLarge', async () => {
        const run = await storedRun(s.store);
        const big = { ...checkpoint(1, 0), core: { text: 'c'.repeat(450_000) } };
        await expect(append(s.store, run, [{ x: 1 }], { checkpoints: [big] })).rejects.toBeInstanceOf(
          CommitTooLarge,
        );
        expect(await s.store.getRun(run.run_id)).toEqual(run);
        expect(await s.store.readEvents(run.run_id, 0, 10)).toHaveLength(1);
        expect(await s.store.listCheckpoints(run.run_id)).toEqual([]);
      });

      it('refuses a commit above DynamoDB’s 4 MB transaction size whole (many inline events) as CommitTooLarge', async () => {
        const run = await storedRun(s.store);
        const data = Array.from({ length: 150 }, (_, i) => ({ i, text: 'z'.repeat(30_000) }));
        await expect(append(s.store, run, data)).rejects.toBeInstanceOf(CommitTooLarge);
        expect(await s.store.getRun(run.run_id)).toEqual(run);
        expect(await s.store.readEvents(run.run_id, 0, 200)).toHaveLength(1);
      });

      it('refuses a commit that writes one item twice whole (one checkpoint number twice) as validation', async () => {
        const run = await storedRun(s.store);
        const events: RunEvent[] = [{ seq: 2, kind: 'steer_queued', at: 1, data: {} }];
        await expect(
          s.store.commit({
            record: { ...run, last_seq: 2 } as RunRecord,
            expectedVersion: run.version,
            events,
            checkpoints: [checkpoint(1, 0), checkpoint(1, 0)],
          }),
        ).rejects.toMatchObject({ name: 'CommitRejected', code: 'validation' });
        expect(await s.store.getRun(run.run_id)).toEqual(run);
        expect(await s.store.readEvents(run.run_id, 1, 10)).toEqual([]);
        expect(await s.store.getCheckpoint(run.run_id, 1)).toBeNull();
      });

      it('stores a record just under RECORD_LIMIT (quote-heavy, so its JSON text is full of escapes) and reads it back', async () => {
        const run = await storedRun(s.store);
        const size = Buffer.byteLength(JSON.stringify(run));
        // Each '"' is two bytes of the record's JSON text.
        const quotes = { q: '"'.repeat(Math.floor((RECORD_LIMIT - size - 1_024) / 2)) };
        const { record } = await append(s.store, { ...run, executor_config: quotes } as RunRecord, [
          { x: 1 },
        ]);
        expect(Buffer.byteLength(JSON.stringify(record))).toBeGreaterThan(RECORD_LIMIT - 2_048);
        expect(await s.store.getRun(run.run_id)).toEqual(record);
      });

      it('refuses an update or a create whose record exceeds RECORD_LIMIT whole, never truncated', async () => {
        const run = await storedRun(s.store);
        const huge = { blob: 'r'.repeat(RECORD_LIMIT) };
        await expect(
          append(s.store, { ...run, executor_config: huge } as RunRecord, [{ x: 1 }], {
            state: { rev: 1, value: { v: 1 } },
            checkpoints: [checkpoint(1, 1)],
          }),
        ).rejects.toBeInstanceOf(CommitTooLarge);
        expect(await s.store.getRun(run.run_id)).toEqual(run);
        expect(await s.store.readEvents(run.run_id, 0, 10)).toHaveLength(1);
        expect(await s.store.listCheckpoints(run.run_id)).toEqual([]);

        const created = draft({ executor_config: huge });
        await expect(
          s.store.commit({
            record: created.record,
            expectedVersion: null,
            events: created.events,
            createKey: { principalKey: 'user:alice', key: 'k-huge' },
          }),
        ).rejects.toBeInstanceOf(CommitTooLarge);
        expect(await s.store.getRun(created.record.run_id)).toBeNull();
        expect(await s.store.findBySubject(created.record.subject)).toBeNull();
        expect(await s.store.findByCreateKey('user:alice', 'k-huge')).toBeNull();
      });
    });

    describe('metering: each commit charges the run its own units', () => {
      freshStoreEach(false);
      const units = (r: RunRecord) => r.metered?.dynamodb_write_units ?? 0;

      it('charges every commit its write units, the record item charged at its larger size', async () => {
        // Prepare: the write units the store counts itself (the memory store from the items as
        // stored, exact before-sizes) before each commit, where it counts them item by item.
        const counted = () => s.store.metrics.writeCapacity;
        const exact = s.countsTransactionUnits === true;
        let before = counted();
        const check = (charged: number) => {
          if (exact) expect(charged).toBe(counted() - before);
          before = counted();
        };
        // Act + Assess: a create, a record grown past 5 KB, shrunk back, events, an end. A
        // commit of the record alone is one plain UpdateItem (charged once,
        // lib/store/commit-protocol.ts). The notes are random: the
        // record is stored compressed, and 5 KB of one letter would not grow it.
        const run = await storedRun(s.store);
        // A create claiming only its subject is two plain puts: the record with its three index
        // entries, and the subject item.
        expect(units(run)).toBeGreaterThanOrEqual(5);
        check(units(run));
        const notes = randomBytes(3_750).toString('base64');
        const grown = await s.store.commit({
          record: { ...run, executor_config: { notes } } as RunRecord,
          expectedVersion: run.version,
          events: [],
        });
        expect(units(grown) - units(run)).toBeGreaterThanOrEqual(5);
        check(units(grown) - units(run));
        // The update of a 5 KB record to a small one is charged at its size before.
        const shrunk = await s.store.commit({
          record: { ...grown, executor_config: {} } as RunRecord,
          expectedVersion: grown.version,
          events: [],
        });
        expect(units(shrunk) - units(grown)).toBeGreaterThanOrEqual(5);
        check(units(shrunk) - units(grown));
        expect(shrunk.metered?.record_item_bytes).toBeLessThan(grown.metered?.record_item_bytes ?? 0);
        const appended = await append(s.store, shrunk, [{ text: 'e'.repeat(1_500) }, { text: 'f' }]);
        check(units(appended.record) - units(shrunk));
        const failed = failRun(appended.record, 'test_end', 2_000);
        if (!failed.ok) throw new Error('failRun refused');
        const ended = await s.store.commit({
          record: failed.record,
          expectedVersion: appended.record.version,
          events: failed.events,
        });
        // The ending commit also charges the subject release the stream consumer makes for it.
        await s.store.releaseSubject(ended);
        check(units(ended) - units(appended.record));
        expect((await s.store.getRun(run.run_id))?.metered).toEqual(ended.metered);
      });

      it('charges the reads of a run made since its last commit in its next commit, once', async () => {
        const run = await storedRun(s.store);
        const before = s.store.metrics.readCapacity;
        await s.store.getRun(run.run_id);
        await s.store.getStatus(run.run_id);
        await s.store.readEvents(run.run_id, 0, 10);
        const read = s.store.metrics.readCapacity - before;
        expect(read).toBeGreaterThanOrEqual(2.5);
        const next = await append(s.store, run, [{ x: 1 }]);
        expect(next.record.metered?.dynamodb_read_units).toBe(read);
        // Charged once: the commit after it carries no read it did not make.
        const again = await append(s.store, next.record, [{ x: 2 }]);
        expect(again.record.metered?.dynamodb_read_units).toBe(read);
      });

      it('adds the charge a commit carries, and counts the S3 puts of its large payloads', async () => {
        const run = await storedRun(s.store);
        const charge = { sqs_requests: 2, lambda_invocations: 1, lambda_ms: 12.5, lambda_gb_seconds: 0.0125 };
        const next = await append(s.store, run, [{ big: 'b'.repeat(INLINE_LIMIT + 10) }], { charge });
        expect(next.record.metered).toMatchObject({ ...charge, s3_put_requests: 1 });
        expect((await s.store.getRun(run.run_id))?.metered).toEqual(next.record.metered);
      });
    });
  });
}
