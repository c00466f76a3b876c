/**
 * Reading the run store's items back: the record, event page entries, domain state, checkpoints
 * and acks, with the payloads the blob store holds. Shared by both RunStore adapters; the layout
 * is documented in commit-plan.ts.
 */
import type { BlobRef, BlobStore } from '../blobs/blob-store.ts';
import {
  type RunEvent,
  RunEvent as RunEventSchema,
  type RunRecord,
  safeParseRunRecord,
} from '../contracts/index.ts';
import type { QuotaUsage } from '../core/admission.ts';
import type {
  CheckpointItem,
  ControlAckItem,
  CreateKeyItem,
  HeldVersion,
  ResumeKeyEntry,
} from '../engine/ports.ts';
import { type Item, itemSize } from './commit-plan.ts';
import { type EventTail, emptyTail, pagedSeq, parseTail, type TailCache } from './event-tail.ts';
import { indexKeysOf } from './metering.ts';
import { unpackBody, unpackMetered, unpackPageBody, unpackRecord } from './record-codec.ts';

/**
 * The last committed seq of a stored record item (its `last_seq` attribute, or its record's for
 * an item written before the attribute existed); 0 when there is no record.
 */
export function committedLastSeq(item: Item | undefined): number {
  if (item === undefined) return 0;
  if (typeof item.last_seq === 'number') return item.last_seq;
  return recordOf(item)?.last_seq ?? 0;
}

/**
 * The record's and the tail's JSON text of a stored record item: `body_z` (format 2, both),
 * `record_z` (format 1, record only) or `record` (plain JSON, record only); null for none.
 */
function textsOf(item: Item): { record: string; tail: string | null } | null {
  if (item.body_z instanceof Uint8Array) return unpackBody(item.body_z);
  if (typeof item.record_z === 'string') return { record: unpackRecord(item.record_z), tail: null };
  if (typeof item.record === 'string') return { record: item.record, tail: null };
  return null;
}

/** The run record of a stored record item, or null when there is none. Throws on a corrupt item. */
export function recordOf(item: Item | undefined): RunRecord | null {
  return recordAndTailOf(item)?.record ?? null;
}

/**
 * The run record of a stored record item and its inline event tail (event-tail.ts; an item
 * written before the tail existed has an empty one), or null. The record's `metered` is the
 * item's `metered` counters (record-codec.ts METERED_COUNTERS) with the item's own size and
 * index keys as `record_item_bytes` / `record_index_keys`; an item written before the counters
 * moved out of the body keeps the body's. The item must be read whole (no projection). Throws
 * on a corrupt item.
 */
export function recordAndTailOf(item: Item | undefined): { record: RunRecord; tail: EventTail } | null {
  if (item === undefined) return null;
  const texts = textsOf(item);
  if (texts === null) return null;
  const parsed = safeParseRunRecord(JSON.parse(texts.record));
  if (!parsed.success)
    throw new Error(`stored run record does not parse: ${parsed.error.issues[0]?.message}`);
  const record =
    typeof item.metered === 'string'
      ? {
          ...parsed.data,
          metered: {
            ...unpackMetered(item.metered),
            record_item_bytes: itemSize(item),
            record_index_keys: indexKeysOf(item),
          },
        }
      : parsed.data;
  const tail = texts.tail === null ? emptyTail(record.last_seq) : parseTail(texts.tail);
  return { record, tail };
}

/**
 * The inline event tail of a stored record item and its last committed seq, without parsing the
 * record by its schema (a reader of events needs only these); null when there is no record.
 */
export function tailOf(item: Item | undefined): { tail: EventTail; last_seq: number } | null {
  if (item === undefined) return null;
  const texts = textsOf(item);
  if (texts === null) return null;
  const lastSeq = committedLastSeq(item);
  return { tail: texts.tail === null ? emptyTail(lastSeq) : parseTail(texts.tail), last_seq: lastSeq };
}

/** A payload stored as `{field}_json` (text) or `{field}_blob`; undefined when neither. */
export async function bodyOf(item: Item, field: string, blobs: BlobStore): Promise<unknown> {
  const text = item[`${field}_json`];
  if (typeof text === 'string') return JSON.parse(text);
  const ref = item[`${field}_blob`] as BlobRef | undefined;
  if (ref === undefined) return undefined;
  return JSON.parse(await blobs.get(ref));
}

/** One stored page entry back to a parsed event. Throws on a corrupt entry. */
export async function eventOf(entry: Item, blobs: BlobStore): Promise<RunEvent> {
  const { data_blob: _blob, data_json: _json, ...head } = entry;
  const data = await bodyOf(entry, 'data', blobs);
  const parsed = RunEventSchema.safeParse({ ...head, data });
  if (!parsed.success) throw new Error(`stored event does not parse: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/**
 * A page item's entries: from `events_z` (a flushed tail, compressed: record-codec.ts
 * packPageBody) or its plain `events` list. Throws on a corrupt `events_z`.
 */
export function pageEntries(page: Item): Item[] {
  if (page.events_z instanceof Uint8Array) return JSON.parse(unpackPageBody(page.events_z).events) as Item[];
  return (page.events as Item[] | undefined) ?? [];
}

/** A page item's states (a flushed tail's, event-tail.ts), or undefined when it holds none. */
function pageStates(item: Item): Item[] | undefined {
  if (item.events_z instanceof Uint8Array) {
    const states = JSON.parse(unpackPageBody(item.events_z).states) as Item[];
    return states.length > 0 ? states : undefined;
  }
  return Array.isArray(item.states) ? (item.states as Item[]) : undefined;
}

/**
 * Appends to `into` the entries of `pages` (in sort-key order) with after < seq <= upTo, up to
 * `limit`, stopping before the first gap. Returns false once it stopped (gap, upTo or limit), true
 * when the caller may read further pages. `upTo` is the record's last_seq, read before the pages:
 * a page past it is not committed (a page written whose record update has not landed, or never
 * will) and is never read. Stopping before a gap keeps every read contiguous.
 */
export function takeContiguous(
  pages: Item[],
  after: number,
  limit: number,
  into: Item[],
  upTo: number,
): boolean {
  for (const page of pages) {
    for (const entry of pageEntries(page)) {
      for (const one of entriesOf(entry)) {
        const seq = Number(one.seq);
        if (seq <= after) continue;
        if (seq > upTo || seq !== after + into.length + 1) return false;
        into.push(one);
        if (into.length >= limit) return false;
      }
    }
  }
  return true;
}

/**
 * A page entry as one entry per seq: an event entry as is; a link entry (a fork's shared prefix,
 * `{link_run, first_seq, last_seq}`) as one placeholder `{link_run, seq}` per seq it covers.
 */
function entriesOf(entry: Item): Item[] {
  if (typeof entry.link_run !== 'string') return [entry];
  const out: Item[] = [];
  for (let seq = Number(entry.first_seq); seq <= Number(entry.last_seq); seq += 1)
    out.push({ link_run: entry.link_run, seq });
  return out;
}

/** Reads `limit` events of another run after `after` (the store's own readEvents). */
export type LinkedRead = (runId: string, after: number, limit: number) => Promise<RunEvent[]>;

/**
 * The events of contiguous entries (takeContiguous's): event entries parsed (payloads from the
 * blob store), each run of link placeholders read from the run it links to with `readLinked`
 * (which follows that run's own links: a fork of a fork). Throws when a linked run does not
 * hold every event its link covers.
 */
export async function eventsOf(
  entries: Item[],
  blobs: BlobStore,
  readLinked: LinkedRead,
): Promise<RunEvent[]> {
  const parts: Promise<RunEvent[]>[] = [];
  for (let i = 0; i < entries.length; ) {
    const first = entries[i] as Item;
    if (typeof first.link_run !== 'string') {
      parts.push(eventOf(first, blobs).then((e) => [e]));
      i += 1;
      continue;
    }
    let j = i;
    while (entries[j + 1]?.link_run === first.link_run) j += 1;
    const from = Number(first.seq);
    const count = j - i + 1;
    const linkRun = first.link_run;
    parts.push(
      readLinked(linkRun, from - 1, count).then((events) => {
        if (events.length !== count || events[0]?.seq !== from)
          throw new Error(`run ${linkRun} does not hold events ${from}..${from + count - 1} a fork links to`);
        return events;
      }),
    );
    i = j + 1;
  }
  return (await Promise.all(parts)).flat();
}

/**
 * The domain state held by `item` for revision `rev` (null for rev 0). Throws when the item is
 * missing or holds another revision: the record's `state_at` always names the right item.
 */
export async function stateOf(
  item: Item | undefined,
  runId: string,
  rev: number,
  sk: string,
  blobs: BlobStore,
): Promise<unknown> {
  if (item === undefined) throw new Error(`domain state ${rev} of run ${runId} is missing (${sk})`);
  // A flushed tail's page holds several states (event-tail.ts).
  const states = pageStates(item);
  if (states !== undefined) {
    const held = states.find((s) => s.state_rev === rev);
    if (held !== undefined) return (await bodyOf(held, 'state', blobs)) ?? null;
  }
  if (item.state_rev !== rev) {
    throw new Error(`item ${sk} of run ${runId} holds domain state ${String(item.state_rev)}, not ${rev}`);
  }
  return (await bodyOf(item, 'state', blobs)) ?? null;
}

/** A stored checkpoint item back to its checkpoint. */
export function checkpointOf(item: Item): CheckpointItem {
  return JSON.parse(String(item.checkpoint_json)) as CheckpointItem;
}

/** A stored control ack item back to its ack. */
export function controlAckOf(item: Item): ControlAckItem {
  return {
    control_id: String(item.control_id),
    digest: String(item.digest),
    ack: item.ack as ControlAckItem['ack'],
    seq: Number(item.seq),
  };
}

/** A stored create key item back to what it names (null when there is none). */
export function createKeyItemOf(item: Item | undefined): CreateKeyItem | null {
  if (item === undefined || typeof item.run_id !== 'string') return null;
  return typeof item.request_digest === 'string'
    ? { run_id: item.run_id, request_digest: item.request_digest }
    : { run_id: item.run_id };
}

/** A principal's quota items (its `L#{n}` slot items and its window's `W#{ms}` item) as usage. */
export function quotaUsageOf(slots: Item[], window: Item | undefined): QuotaUsage {
  return {
    held_slots: slots.map((i) => Number(String(i.sk).slice(2))).sort((a, b) => a - b),
    window_count: typeof window?.count === 'number' ? window.count : 0,
  };
}

/** A resume key item at `now` as the port reads it; an expired early result is nothing. */
export function resumeKeyEntryOf(item: Item | undefined, now: number): ResumeKeyEntry | null {
  if (item === undefined) return null;
  if (typeof item.early_json === 'string') {
    const expiresAt = Number(item.early_expires_at);
    if (!(expiresAt > now)) return null;
    return {
      kind: 'early',
      body: item.early_json,
      ...(typeof item.delivery_id === 'string' ? { delivery_id: item.delivery_id } : {}),
      received_at: Number(item.received_at),
      expires_at: expiresAt,
    };
  }
  return {
    kind: 'wait',
    run_id: String(item.run_id),
    op_id: String(item.op_id),
    ...(typeof item.delivered_seq === 'number'
      ? {
          delivered: {
            ...(typeof item.delivered_id === 'string' ? { delivery_id: item.delivered_id } : {}),
            ...(typeof item.delivered_digest === 'string' ? { body_digest: item.delivered_digest } : {}),
            seq: item.delivered_seq,
          },
        }
      : {}),
  };
}

/** The wait a resume key item names (findByResumeKey), or null for none, an early result or a used key. */
export function waitOf(item: Item | undefined): { run_id: string; op_id: string } | null {
  if (item === undefined || typeof item.run_id !== 'string' || item.delivered_seq !== undefined) return null;
  return { run_id: item.run_id, op_id: String(item.op_id) };
}

/**
 * The entries after `after` (at most `limit`, up to `held.last_seq`) that the remembered inline
 * tail of the held version holds, read without a request (RunStore.readEvents `held`): null when
 * that version's tail is not remembered or starts after `after + 1` (pages hold what comes first).
 */
export function heldTailEntries(
  tails: TailCache,
  runId: string,
  after: number,
  limit: number,
  held: HeldVersion | undefined,
): Item[] | null {
  if (held === undefined) return null;
  const tail = tails.get(runId, held.version);
  if (tail === undefined || after < pagedSeq(tail)) return null;
  const entries: Item[] = [];
  if (after < held.last_seq) takeContiguous([{ events: tail.events }], after, limit, entries, held.last_seq);
  return entries;
}
