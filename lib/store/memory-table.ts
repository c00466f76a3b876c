/**
 * The memory store's table (memory-run-store.ts): items by partition and sort key, stored as
 * DynamoDB's document client stores them and cloned in and out, with DynamoDB's write
 * conditions and its write and read units counted as it counts them (metering.ts).
 * A test aid, never a production option: docs/guides/local-stack.md, "How it stands in for AWS".
 */
import type { RunRecord } from '../contracts/index.ts';
import type { StoreMetrics } from '../engine/ports.ts';
import { PendingCharges } from '../engine/ports.ts';
import { type Condition, type Item, itemSize, type PlannedWrite } from './commit-plan.ts';
import { TailCache } from './event-tail.ts';
import { recordAndTailOf } from './item-codec.ts';
import { indexKeysOf, itemReadUnits, transactWriteUnits } from './metering.ts';
import { ATTR } from './table.ts';

/**
 * An item as DynamoDB's document client (removeUndefinedValues) stores it, as a deep copy:
 * undefined attributes dropped, binary values (Uint8Array) kept as binary.
 */
export function storable<T>(value: T): T {
  if (value instanceof Uint8Array) return new Uint8Array(value) as T;
  if (Array.isArray(value)) return value.filter((v) => v !== undefined).map((v) => storable(v)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = storable(v);
  return out as T;
}

/** One turn of the event loop, as a network round trip would take. */
export const yieldOnce = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Plain code-unit order, as DynamoDB orders string keys (never locale order). */
export const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The table: pk → sk → item, with the reads and writes the adapter makes. Items are cloned in and out, so no caller can alias stored state. */
export class MemoryTable {
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
export function seenIn(table: MemoryTable, item: Item | undefined): RunRecord | null {
  const read = recordAndTailOf(item);
  if (read === null) return null;
  table.tails.set(read.record.run_id, read.record.version, read.tail);
  return read.record;
}

export const keyOf = (w: PlannedWrite) => (w.op === 'put' ? { pk: w.item.pk, sk: w.item.sk } : w.key);

export function conditionHolds(condition: Condition | undefined, existing: Item | undefined): boolean {
  if (condition === undefined) return true;
  switch (condition.kind) {
    case 'absent':
      return existing === undefined;
    case 'absent_or_held_by':
      return existing === undefined || existing.run_id === condition.run_id;
    case 'count_is':
      return condition.count === 0 ? existing === undefined : existing?.count === condition.count;
    case 'resume_key_claim':
      if (existing === undefined) return true;
      if (existing.run_id !== undefined)
        return (
          existing.run_id === condition.run_id ||
          existing.principal_key === condition.principal_key ||
          existing.principal_key === undefined ||
          Number(existing[ATTR.expiresAtTtl]) <= Math.floor(condition.now / 1000)
        );
      return existing.early_json === undefined || Number(existing.early_expires_at) <= condition.now;
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
