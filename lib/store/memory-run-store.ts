/**
 * RunStore in memory, with the DynamoDB adapter's semantics: it executes the same commit plans
 * (commit-plan.ts) by the same protocol (commit-protocol.ts: a plain commit's page, then its
 * record update; any other plan as one transaction), evaluating their conditions (version,
 * fence, absent items, open pages) against maps and applying every write of a transaction or
 * none, so versions, fences, contiguous seqs, event pages, state_at and the indexes behave alike. The store contract suite
 * (test/contract/run-store.contract.ts) runs against both adapters.
 *
 * It also refuses what DynamoDB refuses beyond the planner's limits: an item above 400 KB or a
 * transaction above 4 MB (sized by DynamoDB's published rules, see `itemSize`), and one item
 * written twice, as CommitRejected 'validation' (the DynamoDB adapter lets DynamoDB's
 * ValidationException through instead; both write nothing). Items are stored as DynamoDB's
 * document client stores them (undefined attributes dropped) and cloned in and out. It counts
 * read and write capacity units as DynamoDB does (metering.ts), the writes from the items as
 * stored (exact before-sizes and index keys; plain writes once, a transaction's twice), and
 * charges them to runs as the DynamoDB adapter does. Every call
 * yields to the event loop once before it touches the maps, as a network call would, so that
 * concurrent callers interleave (and a caller looping on the store never starves timers).
 *
 * A test and local-development aid for engine logic at unit speed, NEVER a production option:
 * nothing is durable, nothing is shared between processes. docs/guides/local-stack.md, "How it
 * stands in for AWS".
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { createMemoryBlobStore } from '../blobs/memory-blob-store.ts';
import type { RunRecord } from '../contracts/index.ts';
import { sumCharges } from '../core/prices.ts';
import {
  type Commit,
  noStoreMetrics,
  PendingCharges,
  type RunStore,
  type StoreMetrics,
  SWEEP_SHARDS,
} from '../engine/ports.ts';
import {
  ackSk,
  type CommitBodies,
  type CommitPlan,
  type Condition,
  checkpointSk,
  createKeyPk,
  eventSk,
  type Item,
  itemSize,
  type PlannedWrite,
  planEarlyResult,
  quotaPk,
  quotaWindowSk,
  resumeKeyPk,
  runPk,
  stateSk,
  storeCommitBodies,
  subjectKey,
  subjectReleaseWrites,
} from './commit-plan.ts';
import { commitPlanned, pageTaken, plainCommitOf } from './commit-protocol.ts';
import { classifyRefusal } from './commit-refusal.ts';
import { type EventTail, pagedSeq, stateWhere, TailCache, tailStatesItem } from './event-tail.ts';
import {
  checkpointOf,
  controlAckOf,
  createKeyItemOf,
  eventsOf,
  heldTailEntries,
  quotaUsageOf,
  recordAndTailOf,
  recordOf,
  resumeKeyEntryOf,
  stateOf,
  tailOf,
  takeContiguous,
  waitOf,
} from './item-codec.ts';
import { LISTING_KEY_ITEM, listingKeyOf, newListingKeyItem } from './listing-key.ts';
import { compareListing, type ListingPosition, listingCursor, listingPosition } from './listing-order.ts';
import { countingGets, indexKeysOf, itemReadUnits, transactWriteUnits } from './metering.ts';
import { ATTR, principalHashOf } from './table.ts';

export interface MemoryRunStoreOptions {
  /** Where large payloads go (default: a fresh in-memory blob store). */
  blobs?: BlobStore;
  /**
   * Fault injection for the crash tests only: called after a plain commit's event page landed and
   * before its record update; what it throws ends the commit there (a dead writer).
   */
  afterPage?: (runId: string) => void | Promise<void>;
}

/**
 * An item as DynamoDB's document client (removeUndefinedValues) stores it, as a deep copy:
 * undefined attributes dropped, binary values (Uint8Array) kept as binary.
 */
function storable<T>(value: T): T {
  if (value instanceof Uint8Array) return new Uint8Array(value) as T;
  if (Array.isArray(value)) return value.filter((v) => v !== undefined).map((v) => storable(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = storable(v);
  return out as T;
}

/** One turn of the event loop, as a network round trip would take. */
const yieldOnce = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Plain code-unit order, as DynamoDB orders string keys (never locale order). */
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A listing cursor of the memory store: the sort position of the last run returned. */
/** Where a run record item sorts in the listing of `status`, or null when it is not listed there. */
function listingKey(item: Item, status: string): ListingPosition | null {
  const [itemStatus] = String(item[ATTR.statusShard]).split('#');
  if (itemStatus !== status) return null;
  return { created_at: Number(item[ATTR.createdAt]), run_id: String(item.pk).slice(4) };
}

/** Where a run record sorts in the listing of the principal whose hash is `hash` (table.ts principalHashOf), or null. */
const principalListingKeys =
  (hash: string) =>
  (item: Item): ListingPosition | null => {
    const [itemHash] = String(item[ATTR.principalShard]).split('#');
    if (itemHash !== hash) return null;
    return { created_at: Number(item[ATTR.createdAt]), run_id: String(item.pk).slice(4) };
  };

/** The table: pk → sk → item, with the reads and writes the adapter makes. Items are cloned in and out, so no caller can alias stored state. */
class MemoryTable {
  readonly #items = new Map<string, Map<string, Item>>();
  readonly metrics: StoreMetrics;

  constructor(metrics: StoreMetrics) {
    this.metrics = metrics;
  }

  get(pk: string, sk: string): Item | undefined {
    const item = this.#items.get(pk)?.get(sk);
    return item === undefined ? undefined : structuredClone(item);
  }

  /** Read units of each run's partition not yet charged to the run (metering.ts). */
  readonly reads = new PendingCharges();

  /** The inline tails the adapter has seen, by run and version (event-tail.ts). */
  readonly tails = new TailCache();

  /** Counts `units` read units, charged to the run when `pk` is a run's partition. */
  charge(pk: string, units: number): void {
    this.metrics.readCapacity += units;
    if (pk.startsWith('RUN#') && units > 0) this.reads.add(pk.slice(4), { dynamodb_read_units: units });
  }

  /** A counted read (GetItem), strongly consistent unless `consistent` is false. */
  read(pk: string, sk: string, consistent = true): Item | undefined {
    this.metrics.reads += 1;
    const item = this.get(pk, sk);
    this.charge(pk, itemReadUnits([item], 'get', consistent));
    return item;
  }

  /**
   * Write units of `w` by DynamoDB's rules, from the item as stored now (its exact size and index
   * keys), doubled when `transactional`. A delete of a missing item costs 1, as DynamoDB Local
   * counts it.
   */
  writeUnitsOf(w: PlannedWrite, transactional: boolean): number {
    const { pk, sk } = keyOf(w);
    const before = this.#items.get(pk)?.get(sk);
    if (before === undefined && w.op === 'delete') return 1;
    return transactWriteUnits(
      w,
      before === undefined ? null : { bytes: itemSize(before), keys: indexKeysOf(before) },
      transactional,
    );
  }

  /** Applies `w` and counts its write units (as part of a transaction, or as a plain write). */
  write(w: PlannedWrite, transactional: boolean): void {
    this.metrics.writeCapacity += this.writeUnitsOf(w, transactional);
    this.apply(w);
  }

  /** The items of one partition with from ≤ sk ≤ to, in sort-key order. */
  range(pk: string, from: string, to: string): Item[] {
    const partition = this.#items.get(pk);
    if (partition === undefined) return [];
    return [...partition.keys()]
      .filter((sk) => sk >= from && sk <= to)
      .sort(byCodeUnits)
      .map((sk) => structuredClone(partition.get(sk) as Item));
  }

  /** The items of one partition whose sort key begins with `prefix` (a counted Query). */
  withPrefix(pk: string, prefix: string): Item[] {
    const items = this.range(pk, prefix, `${prefix}\uffff`);
    this.charge(pk, itemReadUnits(items, 'query'));
    return items;
  }

  /** Every stored run record item (the GSIs' source). */
  recordItems(): Item[] {
    return [...this.#items.values()].flatMap((p) => {
      const r = p.get('R');
      return r === undefined ? [] : [r];
    });
  }

  /** Whether `condition` holds for the item now at the write's key. */
  holds(w: PlannedWrite): boolean {
    const { pk, sk } = keyOf(w);
    return conditionHolds(w.condition, this.get(pk, sk));
  }

  apply(w: PlannedWrite): void {
    const { pk, sk } = keyOf(w);
    let partition = this.#items.get(pk);
    if (partition === undefined) {
      partition = new Map();
      this.#items.set(pk, partition);
    }
    if (w.op === 'put') partition.set(sk, storable(w.item));
    else if (w.op === 'delete') partition.delete(sk);
    else {
      const next: Item = { ...(partition.get(sk) ?? { pk, sk }), ...storable(w.set) };
      for (const k of w.remove) delete next[k];
      partition.set(sk, next);
    }
  }
}

/** The run record of a stored record item, its tail remembered in the table's cache on the way. */
function seenIn(table: MemoryTable, item: Item | undefined): RunRecord | null {
  const read = recordAndTailOf(item);
  if (read === null) return null;
  table.tails.set(read.record.run_id, read.record.version, read.tail);
  return read.record;
}

/** The events of `runId` after `after` (the DynamoDB adapter's readEvents, over the maps). */
function eventEntriesIn(table: MemoryTable, runId: string, after: number, limit: number): Item[] {
  // The record first: only what its last_seq covers is committed, and its tail holds the newest.
  const item = table.read(runPk(runId), 'R');
  const read = tailOf(item);
  if (read === null || read.last_seq <= after) return [];
  if (typeof item?.version === 'number') table.tails.set(runId, item.version, read.tail);
  const paged = pagedSeq(read.tail);
  const entries: Item[] = [];
  if (after < paged) {
    table.metrics.queries += 1;
    const pages = table.range(runPk(runId), 'E#', eventSk(paged));
    // Pages are keyed by their first seq: after + 1 is in the last page starting at or below it.
    const head = pages.findLastIndex((p) => String(p.sk) <= eventSk(after + 1));
    takeContiguous(pages.slice(Math.max(head, 0)), after, limit, entries, paged);
    // Charged as the pages taken (the DynamoDB adapter's Query reads about these).
    table.charge(runPk(runId), itemReadUnits(entries, 'query'));
  }
  if (after + entries.length >= paged && entries.length < limit)
    takeContiguous([{ events: read.tail.events }], after, limit, entries, read.last_seq);
  return entries;
}

/** Domain state `rev` at `at` (the DynamoDB adapter's getState, over the maps). */
function stateItemIn(table: MemoryTable, runId: string, rev: number, sk: string): Item | undefined {
  let where = stateWhere(table.tails.latest(runId), rev, sk);
  if (where === 'unknown') {
    seenIn(table, table.read(runPk(runId), 'R'));
    where = stateWhere(table.tails.latest(runId), rev, sk, true);
  }
  if (where === 'tail') return tailStatesItem(table.tails.latest(runId) as EventTail);
  return where === 'none' ? undefined : table.read(runPk(runId), sk);
}

const keyOf = (w: PlannedWrite) => (w.op === 'put' ? { pk: w.item.pk, sk: w.item.sk } : w.key);

function conditionHolds(condition: Condition | undefined, existing: Item | undefined): boolean {
  if (condition === undefined) return true;
  switch (condition.kind) {
    case 'absent':
      return existing === undefined;
    case 'absent_or_held_by':
      return existing === undefined || existing.run_id === condition.run_id;
    case 'count_is':
      return condition.count === 0 ? existing === undefined : existing?.count === condition.count;
    case 'no_live_early':
      return existing?.early_json === undefined || Number(existing.early_expires_at) <= condition.now;
    case 'early_held':
      return existing?.early_json !== undefined;
    case 'absent_or_early_expired':
      return existing === undefined || Number(existing.early_expires_at) <= condition.now;
    case 'page_open':
      return existing === undefined || Number(existing.commit_version) < condition.commit_version;
    case 'record_version':
      return (
        existing !== undefined &&
        existing.version === condition.version &&
        (condition.fence === undefined ||
          (existing.lease_owner === condition.fence.owner && existing.epoch === condition.fence.epoch))
      );
  }
}

/** The runs of `shard` due at `now`, most overdue first (the DynamoDB adapter's sweep index query). */
function sweepCandidatesIn(table: MemoryTable, shard: number, now: number, limit: number): string[] {
  if (shard < 0 || shard >= SWEEP_SHARDS) throw new RangeError(`shard must be in [0, ${SWEEP_SHARDS})`);
  return table
    .recordItems()
    .filter((i) => i[ATTR.sweepShard] === String(shard) && Number(i[ATTR.sweepDue]) <= now)
    .sort((a, b) => Number(a[ATTR.sweepDue]) - Number(b[ATTR.sweepDue]))
    .slice(0, limit)
    .map((i) => String(i.pk).slice(4));
}

/** A page of the runs `keyOf` places, in the DynamoDB adapter's order: newest first over every shard (one query). */
async function listingIn(
  table: MemoryTable,
  keyOf: (item: Item) => ListingPosition | null,
  limit: number,
  cursor: string | undefined,
): Promise<{ run_ids: string[]; cursor?: string }> {
  await yieldOnce();
  table.metrics.queries += 1;
  // In the DynamoDB adapter's order: newest first over every shard, ties by run id.
  const position = cursor === undefined ? undefined : listingPosition(cursor);
  const entries = table
    .recordItems()
    .map(keyOf)
    .filter((key): key is ListingPosition => key !== null)
    .filter((key) => position === undefined || compareListing(key, position) > 0)
    .sort(compareListing);
  const page = entries.slice(0, limit);
  const last = page.at(-1);
  const runIds = page.map((key) => key.run_id);
  if (entries.length <= limit || last === undefined) return { run_ids: runIds };
  return { run_ids: runIds, cursor: listingCursor(last) };
}

/**
 * One plan, as the DynamoDB adapter executes it (commit-protocol.ts): a plain commit as its page,
 * one turn of the event loop, then its record update; any other plan all or nothing, like a
 * TransactWriteItems (every condition evaluated, then every write applied, nothing awaited in
 * between). Write units are counted as DynamoDB counts them (plain writes once, a transaction's
 * twice) from the items as stored before each write. 'page_taken' when only an event page's
 * condition failed; throws the refusal `classifyRefusal` names.
 */
async function executeIn(
  table: MemoryTable,
  plan: CommitPlan,
  commit: Commit,
  afterPage: MemoryRunStoreOptions['afterPage'],
): Promise<'committed' | 'page_taken'> {
  table.metrics.transactions += 1;
  const runId = commit.record.run_id;
  const plain = plainCommitOf(plan);
  if (plain !== null) {
    table.metrics.writeRequests += plain.page === undefined ? 1 : 2;
    if (plain.page !== undefined) {
      if (!table.holds(plain.page)) return 'page_taken';
      table.write(plain.page, false);
      await afterPage?.(runId);
      await yieldOnce();
    }
    if (!table.holds(plain.record)) {
      // A refused record update deletes the attempt's page while it is still its own (its
      // version and commit_token), as the DynamoDB adapter does.
      const page = plain.page?.item;
      const stored = page === undefined ? undefined : table.get(page.pk, page.sk);
      if (
        page !== undefined &&
        stored?.commit_version === page.commit_version &&
        stored?.commit_token === page.commit_token
      )
        table.write({ op: 'delete', role: 'page', key: { pk: page.pk, sk: page.sk } }, false);
      const codes = plan.writes.map((w) => (w === plain.record ? 'ConditionalCheckFailed' : 'None'));
      throw classifyRefusal(commit, plan, codes, [], seenIn(table, table.get(runPk(runId), 'R')));
    }
    table.write(plain.record, false);
    return 'committed';
  }
  table.metrics.writeRequests += 1;
  const codes = plan.writes.map((w) => (table.holds(w) ? 'None' : 'ConditionalCheckFailed'));
  if (codes.some((c) => c !== 'None')) {
    if (pageTaken(plan, codes)) return 'page_taken';
    throw classifyRefusal(commit, plan, codes, [], seenIn(table, table.get(runPk(runId), 'R')));
  }
  for (const w of plan.writes) table.write(w, true);
  return 'committed';
}

/**
 * Writes one commit by the commit protocol (commit-protocol.ts) over `executeIn`, charging the
 * run the reads it owes (taken for the commit, given back when it fails).
 */
async function commitIn(
  table: MemoryTable,
  commit: Commit,
  bodies: CommitBodies,
  afterPage: MemoryRunStoreOptions['afterPage'],
): Promise<RunRecord> {
  const runId = commit.record.run_id;
  const reads = table.reads.take(runId);
  try {
    return await commitPlanned(
      {
        execute: (plan, c) => executeIn(table, plan, c, afterPage),
        readRecord: async (id) => {
          await yieldOnce();
          return recordAndTailOf(table.read(runPk(id), 'R'));
        },
        tails: table.tails,
        sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
        subjectHolder: async (pk) => {
          await yieldOnce();
          return (table.read(pk, 'S')?.run_id as string | undefined) ?? null;
        },
      },
      commit,
      bodies,
      sumCharges(commit.charge ?? {}, reads),
    );
  } catch (err) {
    table.reads.add(runId, reads);
    throw err;
  }
}

export function createMemoryRunStore(options: MemoryRunStoreOptions = {}): RunStore {
  const blobs = options.blobs ?? createMemoryBlobStore();
  const metrics = noStoreMetrics();
  const table = new MemoryTable(metrics);
  /** The blob store with each get charged to `runId` as an S3 GET. */
  const blobGets = (runId: string) =>
    countingGets(blobs, () => table.reads.add(runId, { s3_get_requests: 1 }));

  return {
    metrics,
    async getRun(runId) {
      await yieldOnce();
      return seenIn(table, table.read(runPk(runId), 'R'));
    },
    async getStatus(runId, opts) {
      await yieldOnce();
      const record = recordOf(table.read(runPk(runId), 'R', opts?.consistent === true));
      if (record === null) return null;
      const interrupt = 'interrupt_requested' in record ? record.interrupt_requested : undefined;
      return { status: record.status, interrupt_requested: interrupt ?? null };
    },
    async getRunAndAck(runId, controlId) {
      await yieldOnce();
      metrics.reads += 1;
      const ack = table.get(runPk(runId), ackSk(controlId));
      const record = table.get(runPk(runId), 'R');
      table.charge(runPk(runId), itemReadUnits([record, ack], 'batch'));
      return {
        record: seenIn(table, record),
        ack: ack === undefined ? null : controlAckOf(ack),
      };
    },
    async getState(runId, rev, at) {
      await yieldOnce();
      if (rev === 0) return null;
      const sk = at ?? stateSk(rev);
      return stateOf(stateItemIn(table, runId, rev, sk), runId, rev, sk, blobGets(runId));
    },
    async readEvents(runId, after, limit, held) {
      await yieldOnce();
      const entries =
        heldTailEntries(table.tails, runId, after, limit, held) ?? eventEntriesIn(table, runId, after, limit);
      return eventsOf(entries, blobGets(runId), (linked, first, count) =>
        this.readEvents(linked, first, count),
      );
    },
    async getCheckpoint(runId, n) {
      await yieldOnce();
      const item = table.read(runPk(runId), checkpointSk(n));
      return item === undefined ? null : checkpointOf(item);
    },
    async listCheckpoints(runId) {
      await yieldOnce();
      metrics.queries += 1;
      return table
        .withPrefix(runPk(runId), 'C#')
        .map((i) => checkpointOf(i))
        .sort((a, b) => a.n - b.n);
    },
    async findBySubject(subject) {
      await yieldOnce();
      return (table.read(subjectKey(subject), 'S')?.run_id as string | undefined) ?? null;
    },
    async findByCreateKey(principalKey, key) {
      await yieldOnce();
      return createKeyItemOf(table.read(createKeyPk(principalKey, key), 'K'));
    },
    async readQuota(principalKey, windowStart) {
      await yieldOnce();
      metrics.queries += 1;
      const pk = quotaPk(principalKey);
      return quotaUsageOf(table.withPrefix(pk, 'L#'), table.read(pk, quotaWindowSk(windowStart)));
    },
    async listChildren(parentRunId) {
      await yieldOnce();
      metrics.queries += 1;
      return table.withPrefix(runPk(parentRunId), 'CH#').map((i) => i.run_id as string);
    },
    async findByResumeKey(resumeKey) {
      await yieldOnce();
      return waitOf(table.read(resumeKeyPk(resumeKey), 'K'));
    },
    async readResumeKey(resumeKey, now) {
      await yieldOnce();
      return resumeKeyEntryOf(table.read(resumeKeyPk(resumeKey), 'K'), now);
    },
    async releaseSubject(record) {
      await yieldOnce();
      for (const w of subjectReleaseWrites(record)) if (table.holds(w)) table.write(w, false);
    },
    async holdEarlyResult(hold) {
      await yieldOnce();
      const write = planEarlyResult(hold);
      if (!table.holds(write)) return false;
      table.apply(write);
      return true;
    },
    async sweepCandidates(shard, now, limit) {
      await yieldOnce();
      metrics.queries += 1;
      return sweepCandidatesIn(table, shard, now, limit);
    },
    listByStatus: (status, limit, cursor) => listingIn(table, (i) => listingKey(i, status), limit, cursor),
    listByPrincipal: (principalKey, limit, cursor) =>
      listingIn(table, principalListingKeys(principalHashOf(principalKey)), limit, cursor),
    async listingKey() {
      await yieldOnce();
      const found = listingKeyOf(table.read(LISTING_KEY_ITEM.pk, LISTING_KEY_ITEM.sk));
      if (found !== null) return found;
      const item = newListingKeyItem();
      table.metrics.writeRequests += 1;
      table.apply({ op: 'put', role: 'record', item });
      return listingKeyOf(item) as Uint8Array;
    },
    async commit(commit) {
      await yieldOnce();
      return commitIn(table, commit, await storeCommitBodies(commit, blobs), options.afterPage);
    },
  };
}
