/**
 * How a commit charges the run it writes for its own DynamoDB write units, inside the same fenced
 * record write: the units are ESTIMATED before the write from the planned items' sizes by
 * DynamoDB's rules (core/prices.ts `writeUnits`: 1 per KB of the larger of the item's size before
 * and after, twice in a transaction, once for the plain writes of the commit protocol,
 * commit-protocol.ts), and stored in the record's `metered` with whatever else the
 * commit carries (the engine's owed charge, the store's own reads of the run since its last
 * commit, the S3 puts of the commit's large payloads). Chosen over charging a commit's measured
 * units in the next commit: the last commit of a run would never be charged, and the next commit
 * may be made by another process.
 *
 * Before-sizes: the record item's is carried in the record itself (`metered.record_item_bytes`,
 * the size its last commit wrote, or, read back, the item's own size: item-codec.ts), every new item (condition `absent`, or an event page whose
 * key is free, `page_open`: an uncommitted page left there is taken to be absent) has none, and the small
 * index items a commit overwrites or deletes (subject, quota slot, resume key) are taken to be
 * under 1 KB. The estimate is checked against DynamoDB's own ConsumedCapacity by the store
 * contract suite (test/contract/run-store.contract.ts) on DynamoDB Local.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Metered } from '../contracts/index.ts';
import { addCharge, type MeterCharge, readUnits, writeUnits } from '../core/prices.ts';
import type { Commit } from '../engine/ports.ts';
import {
  type CommitBodies,
  type CommitPlan,
  type Item,
  itemSize,
  type PlannedWrite,
  planCommit,
} from './commit-plan.ts';
import type { EventTail } from './event-tail.ts';
import { TABLE_DEFINITION } from './table.ts';

/** The item a write leaves (the record update's attributes are all SET), or null for a delete. */
export function writtenItem(w: PlannedWrite): Item | null {
  if (w.op === 'delete') return null;
  return w.op === 'put' ? w.item : { ...w.key, ...w.set };
}

/** The key attribute names of the table's indexes (GSIs), each index's pair. */
const INDEX_KEYS: [string, string][] = TABLE_DEFINITION.globalSecondaryIndexes.map((g) => [
  g.partitionKey.name,
  g.sortKey.name,
]);

/** The index key attributes an item holds (only run records hold any). */
export function indexKeysOf(item: Item | null | undefined): Record<string, string | number> {
  const keys: Record<string, string | number> = {};
  for (const name of new Set(INDEX_KEYS.flat())) {
    const v = item?.[name];
    if (typeof v === 'string' || typeof v === 'number') keys[name] = v;
  }
  return keys;
}

/**
 * Index entries a write makes, by DynamoDB's rules for an index: one when the item enters it (its
 * keys appear), one when it leaves it, two (delete + put) when its keys change, none otherwise.
 * The entries are KEYS_ONLY, well under 1 KB: a write unit each (two in a transaction).
 */
export function indexWrites(
  before: Record<string, string | number>,
  after: Record<string, string | number>,
): number {
  let writes = 0;
  for (const [p, s] of INDEX_KEYS) {
    const had = before[p] !== undefined && before[s] !== undefined;
    const has = after[p] !== undefined && after[s] !== undefined;
    if (had && has) writes += before[p] !== after[p] || before[s] !== after[s] ? 2 : 0;
    else if (had || has) writes += 1;
  }
  return writes;
}

/** What the record item was before `w` as the plan knows it: its carried size and index keys. */
interface RecordBefore {
  bytes: number;
  keys: Record<string, string | number>;
}

/**
 * Write units of one write whose item was `before` (size and index keys): its table write and
 * its index entries, each doubled when the write is part of a transaction.
 */
export function transactWriteUnits(
  w: PlannedWrite,
  before: RecordBefore | null,
  transactional = true,
): number {
  const after = writtenItem(w);
  const table = writeUnits(before?.bytes ?? 0, after === null ? 0 : itemSize(after), transactional);
  return table + (transactional ? 2 : 1) * indexWrites(before?.keys ?? {}, indexKeysOf(after));
}

/**
 * How a plan reaches the table: true when as one TransactWriteItems, false when as plain writes
 * (the commit protocol passes its rule, commit-protocol.ts `plainCommitOf`).
 */
export type IsTransaction = (plan: CommitPlan) => boolean;

/**
 * Write units of a planned commit, estimated as the module header says: the record update
 * against the record item as carried, new items against nothing, the small index items a commit
 * overwrites or deletes as under 1 KB.
 */
export function plannedWriteUnits(
  plan: CommitPlan,
  recordBefore: RecordBefore,
  transactional = true,
): number {
  let units = 0;
  for (const w of plan.writes) {
    const before = w.role === 'record' && w.op === 'update' ? recordBefore : null;
    units += transactWriteUnits(w, before, transactional);
  }
  for (const w of plan.released) units += transactWriteUnits(w, null, false);
  return units;
}

/** S3 PUTs a commit's bodies made (payloads above the inline limit). */
export function blobPutsOf(bodies: CommitBodies): number {
  let puts = bodies.state !== undefined && 'blob' in bodies.state ? 1 : 0;
  for (const body of bodies.events.values()) if ('blob' in body) puts += 1;
  return puts;
}

/** Rounds of settling the charge before it is taken as it stands (see planMetered). */
const SETTLE_ROUNDS = 4;

/**
 * The plan of `commit` with the run charged: its record's `metered` is the stored one plus
 * `owed`, the commit's S3 puts and its own write units, and `record_item_bytes` /
 * `record_index_keys` the record item as written (kept in memory for the next commit; the item
 * stores neither, item-codec.ts reads them off the item). The units depend on the size of the
 * record item, which holds them: the record is planned and compressed once, then only its short
 * `metered` attribute is written again (CommitPlan.withMetered) until the units settle (once,
 * rarely twice); should they still move after SETTLE_ROUNDS (a size oscillating at a KB
 * boundary), the last plan is kept, its charge off by at most that boundary's unit: metering
 * never refuses a commit. `token` and `tail` are planCommit's. Throws what planCommit throws.
 */
export function planMetered(
  commit: Commit,
  bodies: CommitBodies,
  owed: MeterCharge,
  isTransaction: IsTransaction = () => true,
  token?: string,
  tail?: EventTail,
): CommitPlan {
  const carried = commit.record.metered;
  const recordBefore: RecordBefore =
    commit.expectedVersion === null || carried === undefined
      ? { bytes: 0, keys: {} }
      : { bytes: carried.record_item_bytes, keys: carried.record_index_keys };
  const base = addCharge(commit.record.metered, {
    ...owed,
    s3_put_requests: (owed.s3_put_requests ?? 0) + blobPutsOf(bodies),
  });
  const charged = (units: number): Metered => ({
    ...base,
    dynamodb_write_units: addCharge(base, { dynamodb_write_units: units }).dynamodb_write_units,
  });
  let units = 0;
  let plan = planCommit(
    { ...commit, record: { ...commit.record, metered: charged(0) } },
    bodies,
    token,
    tail,
  );
  for (let round = 1; round <= SETTLE_ROUNDS; round += 1) {
    const next = plannedWriteUnits(plan, recordBefore, isTransaction(plan));
    if (next === units) break;
    units = next;
    plan = plan.withMetered(charged(units));
  }
  const recordWrite = plan.writes.find((w) => w.role === 'record');
  const written = recordWrite === undefined ? null : writtenItem(recordWrite);
  return plan.withMetered({
    ...charged(units),
    record_item_bytes: written === null ? 0 : itemSize(written),
    record_index_keys: indexKeysOf(written),
  });
}

/**
 * Read units of items read, by DynamoDB's rules: a GetItem per item (at least 1), a Query over the
 * sum of the items it read (none: 0), a BatchGetItem per item found; half when eventually
 * consistent.
 */
export function itemReadUnits(
  items: readonly (Item | undefined)[],
  how: 'get' | 'query' | 'batch',
  consistent = true,
): number {
  const sizes = items.map((i) => (i === undefined ? 0 : itemSize(i)));
  if (how === 'query')
    return readUnits(
      sizes.reduce((a, b) => a + b, 0),
      consistent,
      false,
    );
  if (how === 'get') return readUnits(sizes[0] ?? 0, consistent, true);
  return sizes.reduce((n, s) => n + (s === 0 ? 0 : readUnits(s, consistent, false)), 0);
}

/** `blobs` with each get counted by `onGet` (an S3 GET charged to the run being read). */
export function countingGets(blobs: BlobStore, onGet: () => void): BlobStore {
  return {
    put: (body, mediaType) => blobs.put(body, mediaType),
    get(ref) {
      onGet();
      return blobs.get(ref);
    },
  };
}
