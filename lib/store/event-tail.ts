/**
 * The run record's inline event tail: the newest committed events (and the domain states they
 * wrote) travel inside the run record item, compressed with it (record-codec.ts format 2), and
 * move to an event page only when the record item would pass TAIL_ITEM_LIMIT bytes. So the
 * common commit (an operation's result, the reducer's answer, the next operation's start) is ONE
 * conditional UpdateItem of the record, and one page write is amortized over several commits.
 * docs/reference/storage.md; docs/architecture.md, "The commit".
 *
 * The tail is `{first_seq, events, states}`: `events` are page entries (commit-plan.ts) with seq
 * first_seq..last_seq, `states` the domain states `{state_rev, state_json | state_blob}` those
 * commits wrote. Every seq below first_seq is in a committed event page ("paged"); a reader
 * reads pages only up to first_seq - 1 and the rest from the tail, never past last_seq.
 *
 * Where a commit puts its events (layoutOf):
 *   - into the tail when the record item stays within UNIT_TAIL_ITEM_LIMIT (one write unit), or
 *     within TAIL_ITEM_LIMIT when a fresh tail would not hold a few more commits under one unit
 *     (a record too large for that): one plain write;
 *   - else the old tail is FLUSHED (when the commit's own events then fit TAIL_ITEM_LIMIT, or,
 *     for a record too large for that, once the tail passes LARGE_TAIL_ITEM_LIMIT): its events and states become one page keyed E#{first_seq},
 *     stored compressed as they were in the record (`events_z`, record-codec.ts packPageBody)
 *     (they are committed already, so the page's content is final whoever writes it), and the
 *     commit's own events start the new tail: a page Put, then the record's UpdateItem;
 *   - a commit whose own events do not fit a tail at all (large payloads) writes them as pages
 *     after the flush page, the domain state on its last page, and leaves the tail empty.
 * Every page a plain (non-transactional) commit writes is keyed by the first seq of the tail it
 * read, so a writer that lost the race (or died between its two writes) can only have left a
 * page at the CURRENT tail's first seq, which no reader reads and the next flush overwrites
 * (`page_open`: a newer commit_version); a transaction's several pages land all or none.
 *
 * A domain state in the tail is located (`state_at`) by the key of the page its tail will be
 * flushed to, E#{first_seq}: the same key before and after the flush, so the record's and a
 * checkpoint's `state_at` never change. getState reads the record item first (the tail holds
 * it, or has been flushed to that page) and then, only when the tail no longer holds it, the page.
 */
import type { BlobRef } from '../blobs/blob-store.ts';
import type { Item } from './planned-write.ts';

/** The sort key of the event page whose first event is `seq`. */
export const eventSk = (seq: number) => `E#${String(seq).padStart(12, '0')}`;

/**
 * The record item's largest size (bytes, as DynamoDB counts it) that takes events inline: one
 * and a half write units' worth, less room for the charge counters the commit settles after its
 * item is sized (`metered`, metering.ts), whose numbers grow and would otherwise push an item
 * just under a unit boundary over it. Past it the tail is flushed to a page and the commit's own
 * events start a new tail. Measured both ways on the peer bench (2026-12-03): a 1 KB limit cut
 * write units per step from 3.15 to 2.7 but flushed about every second commit (write requests
 * per step 1.2 -> 1.6, steps/s 183 -> 160): a step's round trips come first here.
 */
export const TAIL_ITEM_LIMIT = 1_536 - 64;
/**
 * One write unit's worth, less the same room: a record small enough to stay under it for a few
 * commits more after a flush (UNIT_TAIL_COMMITS) flushes its tail here instead, so that each of
 * its record writes costs one unit rather than two. A larger record keeps TAIL_ITEM_LIMIT (its
 * tail would be flushed about every second commit under one unit: a write request more per
 * step for half a unit less).
 */
export const UNIT_TAIL_ITEM_LIMIT = 1_024 - 64;
/** How many more commits like the flushing one a fresh tail must hold under UNIT_TAIL_ITEM_LIMIT. */
export const UNIT_TAIL_COMMITS = 3;
/**
 * The limit for a record too large to hold even one commit's events within TAIL_ITEM_LIMIT (its
 * own fields pass about 1.5 KB compressed: a model turn's instructions and tool list, many open
 * requests): its tail grows to this size before it is flushed, rather than every commit writing
 * its events to a page of their own.
 */
export const LARGE_TAIL_ITEM_LIMIT = 2_048 - 64;
/**
 * The tail's largest JSON text (bytes) before compression: every read of the record inflates
 * it, so payloads that compress well (but are large) still go to pages.
 */
export const TAIL_TEXT_LIMIT = 32 * 1024;

/** A domain state held by a tail or a flushed page. */
export interface TailState {
  state_rev: number;
  state_json?: string;
  state_blob?: BlobRef;
}

/** The record's inline tail (see the header). */
export interface EventTail {
  first_seq: number;
  events: Item[];
  states: TailState[];
}

/** The empty tail of a record whose last committed seq is `lastSeq`. */
export const emptyTail = (lastSeq: number): EventTail => ({ first_seq: lastSeq + 1, events: [], states: [] });

/** The last seq the committed event pages hold (every seq up to it is paged). */
export const pagedSeq = (tail: EventTail) => tail.first_seq - 1;

/** The key of the page `tail` is flushed to: where its states are located (`state_at`). */
export const tailPageSk = (tail: EventTail) => eventSk(tail.first_seq);

/** The domain state of revision `rev` the tail holds, or undefined. */
export const tailState = (tail: EventTail, rev: number): TailState | undefined =>
  tail.states.find((s) => s.state_rev === rev);

/** A tail parsed back from its JSON text. Throws on a corrupt one. */
export function parseTail(text: string): EventTail {
  const tail = JSON.parse(text) as EventTail;
  if (typeof tail?.first_seq !== 'number' || !Array.isArray(tail.events) || !Array.isArray(tail.states))
    throw new Error('stored event tail does not parse');
  return tail;
}

/**
 * What a store remembers of the tails it last saw, by run: the tail of one record version. A
 * version is committed once, so the tail of (run, version) never changes and a commit built on
 * that version needs no read to know it. Bounded: the least recently used run is forgotten.
 */
export class TailCache {
  readonly #limit: number;
  readonly #tails = new Map<string, { version: number; tail: EventTail }>();

  constructor(limit = 2_000) {
    this.#limit = limit;
  }

  /** The tail of `runId` at `version`, when remembered. */
  get(runId: string, version: number): EventTail | undefined {
    const hit = this.#tails.get(runId);
    if (hit === undefined || hit.version !== version) return undefined;
    this.#tails.delete(runId);
    this.#tails.set(runId, hit);
    return hit.tail;
  }

  /** The newest tail remembered of `runId` (tails only move forward: a newer one starts no earlier). */
  latest(runId: string): EventTail | undefined {
    return this.#tails.get(runId)?.tail;
  }

  /** Remembers the tail of `runId` at `version` (a newer version replaces an older one). */
  set(runId: string, version: number, tail: EventTail): void {
    const had = this.#tails.get(runId);
    if (had !== undefined && had.version > version) return;
    this.#tails.delete(runId);
    this.#tails.set(runId, { version, tail });
    if (this.#tails.size > this.#limit) {
      const oldest = this.#tails.keys().next().value;
      if (oldest !== undefined) this.#tails.delete(oldest);
    }
  }
}

/**
 * Where domain state `rev` located at `sk` is, given the newest tail known of its run: 'tail'
 * (the tail is the one at `sk`: what it holds is all that is committed there; a page at that
 * key is not part of the log yet), 'page' (the tail starts past `sk`: flushed, or an item of
 * another kind such as D#), 'none' (`sk` lies past the tail's start: nothing is committed
 * there) or 'unknown' (no tail known: read the record to tell). Tails only move forward, and a
 * state at a page key is the same in the tail and in the page it is flushed to. `fresh`: the
 * tail was read now (a cached one that lacks `rev` may be older than the commit that wrote it).
 */
export function stateWhere(
  tail: EventTail | undefined,
  rev: number,
  sk: string,
  fresh = false,
): 'tail' | 'page' | 'none' | 'unknown' {
  if (!sk.startsWith('E#')) return 'page';
  if (tail === undefined) return 'unknown';
  const at = tailPageSk(tail);
  if (at === sk) return fresh || tailState(tail, rev) !== undefined ? 'tail' : 'unknown';
  if (at > sk) return 'page';
  return fresh ? 'none' : 'unknown';
}

/** The item standing for what a tail holds at its page key: its states (stateOf reads it). */
export const tailStatesItem = (tail: EventTail): Item => ({
  states: tail.states,
  state_rev: tail.states.at(-1)?.state_rev,
});
