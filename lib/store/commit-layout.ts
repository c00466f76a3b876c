/**
 * Where a commit's events and domain state go (the layout half of commit-plan.ts): into the run
 * record's inline tail, into the event page a flushed tail becomes, into pages of their own, or a
 * D# item for a state without events. The rule is event-tail.ts's; the units it keeps a commit
 * to are metering.ts's. docs/reference/storage.md; docs/architecture.md, "The commit".
 */
import { isTerminalStatus } from '../contracts/index.ts';
import type { Commit } from '../engine/ports.ts';
import { type CommitBodies, packPages, pageEntry } from './event-pages.ts';
import {
  type EventTail,
  emptyTail,
  eventSk,
  LARGE_TAIL_ITEM_LIMIT,
  TAIL_ITEM_LIMIT,
  type TailState,
  tailPageSk,
  UNIT_TAIL_COMMITS,
  UNIT_TAIL_ITEM_LIMIT,
} from './event-tail.ts';
import type { Item, ItemKey } from './planned-write.ts';
import { packPageBody } from './record-codec.ts';

/** The sort key of the write-once item of a domain state written without events. */
export const stateSk = (rev: number) => `D#${rev}`;

/** Where a commit's events and domain state go (event-tail.ts): the tail, pages, or a D# item. */
export interface Layout {
  tail: EventTail;
  pages: { entries: Item[]; seqs: number[]; states?: TailState[]; state?: TailState }[];
  /** The D# item's state: a state written without events. */
  bare?: TailState;
  /** Where the commit's own state lies (state_at), when it writes one. */
  stateAt?: string;
}

/** The state attributes a commit writes, or undefined. */
function stateOfCommit(commit: Commit, bodies: CommitBodies): TailState | undefined {
  if (commit.state === undefined || bodies.state === undefined) return undefined;
  return 'blob' in bodies.state
    ? { state_rev: commit.state.rev, state_blob: bodies.state.blob }
    : { state_rev: commit.state.rev, state_json: bodies.state.inline };
}

/** The page a flush of `base` writes (none for an empty tail): its events and states as they were. */
function flushOf(base: EventTail): Layout['pages'] {
  return base.events.length === 0
    ? []
    : [{ entries: base.events, seqs: [base.first_seq], states: base.states }];
}

/**
 * The layout of a commit's events and state over the record's tail `base` (event-tail.ts):
 * inline when the record item (`sizeOf`, bytes; Infinity for a tail text past TAIL_TEXT_LIMIT)
 * stays within TAIL_ITEM_LIMIT, else the old tail flushed to its page and the events starting a
 * new tail (LARGE_TAIL_ITEM_LIMIT for a record too large for either), else (too large for any tail, or a fork's create
 * with its link page) pages of their own.
 */
export function layoutOf(
  commit: Commit,
  bodies: CommitBodies,
  base: EventTail,
  sizeOf: (tail: EventTail, stateAt: string | undefined) => number,
): Layout {
  const state = stateOfCommit(commit, bodies);
  if (commit.events.length === 0) {
    // A record-only commit keeps the tail; a state without events gets its own D# item.
    return state === undefined
      ? { tail: base, pages: [] }
      : { tail: base, pages: [], bare: state, stateAt: stateSk(state.state_rev) };
  }
  const events = [...commit.events].sort((a, b) => a.seq - b.seq);
  const first = events[0]?.seq as number;
  const entries = events.map((e) => {
    const body = bodies.events.get(e.seq);
    if (body === undefined) throw new Error(`no stored body for event ${e.seq}`);
    return pageEntry(e, body).entry;
  });
  const inlineAllowed = commit.eventLink === undefined;
  if (inlineAllowed) {
    if (first !== base.first_seq + base.events.length)
      throw new Error(
        `event ${first} does not follow the tail ending at ${base.first_seq + base.events.length - 1}`,
      );
    const grown: EventTail = {
      first_seq: base.first_seq,
      events: [...base.events, ...entries],
      states: state === undefined ? base.states : [...base.states, state],
    };
    const grownAt = state === undefined ? undefined : tailPageSk(base);
    const inGrown = { tail: grown, pages: [], ...(grownAt ? { stateAt: grownAt } : {}) };
    const grownSize = sizeOf(grown, grownAt);
    if (grownSize <= UNIT_TAIL_ITEM_LIMIT) return inGrown;
    // The old tail's events and states are committed: flushed to the page its states point at.
    const fresh: EventTail = {
      first_seq: first,
      events: entries,
      states: state === undefined ? [] : [state],
    };
    const freshAt = state === undefined ? undefined : tailPageSk(fresh);
    const inFresh = { tail: fresh, pages: flushOf(base), ...(freshAt ? { stateAt: freshAt } : {}) };
    // An empty tail grown is the fresh one: nothing to flush, nothing else to try.
    const freshSize = base.events.length === 0 ? Number.POSITIVE_INFINITY : sizeOf(fresh, freshAt);
    // A small record: flushed at one unit when the fresh tail holds a few more commits like this
    // one (what this commit adds, estimated from the share of its events in the grown tail).
    // Not in the commit that ends the run: no commit after it would gain, and the page would cost.
    const perCommit = ((grownSize - freshSize) * entries.length) / Math.max(1, base.events.length);
    if (
      !isTerminalStatus(commit.record.status) &&
      freshSize + UNIT_TAIL_COMMITS * perCommit <= UNIT_TAIL_ITEM_LIMIT
    )
      return inFresh;
    if (grownSize <= TAIL_ITEM_LIMIT) return inGrown;
    if (freshSize <= TAIL_ITEM_LIMIT) return inFresh;
    // A record too large for one unit: its tail grows to the larger limit before a flush.
    if (grownSize <= LARGE_TAIL_ITEM_LIMIT) return inGrown;
    if (freshSize <= LARGE_TAIL_ITEM_LIMIT) return inFresh;
  }
  const flush = flushOf(base);
  const own = packPages(events, bodies, state === undefined ? 0 : Buffer.byteLength(JSON.stringify(state)));
  const last = own.at(-1);
  if (last !== undefined && state !== undefined) Object.assign(last, { state });
  return {
    tail: emptyTail(commit.record.last_seq),
    pages: [...flush, ...own],
    ...(state !== undefined && last !== undefined ? { stateAt: eventSk(last.seqs[0] as number) } : {}),
  };
}

/** A layout page as its item: keyed by its first seq, stamped with the version that writes it. */
export function pageItemOf(
  pk: string,
  page: Layout['pages'][number],
  version: number,
  token?: string,
): Item & ItemKey {
  const item: Item & ItemKey = {
    pk,
    sk: eventSk(page.seqs[0] as number),
    first_seq: page.seqs[0],
    last_seq: Number(page.entries.at(-1)?.seq),
    commit_version: version,
    ...(token !== undefined ? { commit_token: token } : {}),
  };
  // A flushed tail (it has `states`, maybe none) is stored compressed as it was in the record;
  // a commit's own pages (large payloads, sized against the item limit) stay plain.
  if (page.states !== undefined)
    item.events_z = packPageBody(JSON.stringify(page.entries), JSON.stringify(page.states));
  else item.events = page.entries;
  if (page.state !== undefined) Object.assign(item, page.state);
  return item;
}
