/**
 * The pure half of the run store: the item layout of one table and the plan of every write one
 * commit makes (with its conditions as data). Both RunStore adapters execute these plans by one
 * protocol (commit-protocol.ts), the DynamoDB adapter on the table (dynamo-writes.ts), the memory
 * adapter against maps (memory-run-store.ts), so the two cannot drift on layout or conditions;
 * reading items back is item-codec.ts, a refusal's reason commit-refusal.ts, the charge
 * metering.ts. docs/reference/storage.md; docs/architecture.md,
 * "The commit".
 *
 * Items (pk / sk):
 *   RUN#{id} / R            the run record (closed schema, parsed before every write) and its
 *                           inline event tail, compressed together as body_z (record-codec.ts
 *                           format 2; event-tail.ts): the newest events and the domain states
 *                           they wrote, seq tail.first_seq..last_seq; and beside them its
 *                           version, epoch, status, last_seq, the index attributes and the
 *                           record's charge counters (`metered`, record-codec.ts
 *                           METERED_COUNTERS: outside the body, so metering.ts settles a
 *                           commit's own charge without compressing the record again)
 *   RUN#{id} / E#{seq:12}   one event page, keyed by the seq of its FIRST event, stamped with
 *                           the record version that wrote it (commit_version), read only below
 *                           the record's tail (seq < tail.first_seq):
 *                           {events: [{...head, data_json} | {...head, data_blob}], or, a fork's
 *                           link page, [{link_run, first_seq, last_seq}]: those events are the
 *                           origin run's, read through (never copied), first_seq, last_seq};
 *                           a flushed tail's page also holds its domain states
 *                           {states: [{state_rev, state_json | state_blob}]}, a page of a
 *                           commit too large for the tail the state that commit wrote
 *                           {state_rev, state_json | state_blob}. Events above PAGE_LIMIT
 *                           serialized bytes split into several pages.
 *   RUN#{id} / D#{rev}      domain state written by a commit without events
 *   RUN#{id} / C#{n}        checkpoint (with state_at when its state_rev is the record's)
 *   RUN#{id} / K#{control}  control ack {digest, ack, seq}
 *   RUN#{id} / CH#{child}   link to a child run this run delegated to {run_id, created_at}
 *   SUBJ#{sha256} / S       the subject's live run
 *   CKEY#{sha256} / K       create key → run
 *   RKEY#{sha256} / K       resume key: the wait {run_id, op_id}; or a result that arrived
 *                           before its wait, held {early_json, delivery_id?, early_expires_at}
 *                           (bounded: EARLY_RESULT_LIMIT bytes, until early_expires_at); or,
 *                           once a delivery with a delivery_id was applied, {run_id, op_id,
 *                           delivered_id, delivered_digest?, delivered_seq} kept
 *                           DELIVERY_MEMORY_MS for duplicates (same id and body)
 *   QUOTA#{sha256} / L#{n}  live-run slot n of a principal, held by a live run {run_id}
 *   QUOTA#{sha256} / W#{ms} a principal's create count in the minute starting at ms {count}
 *
 * Writers of one run and the version: every commit is conditioned on the record's version (and
 * a lease holder's fence), so controls and the step worker race for it. No control can starve
 * the worker: a worker whose commit is stale gets the record that won from the refusal itself
 * (ALL_OLD, no extra read) and, while the lease is still its own, replays its staged moves on it
 * (the reducer's answer, the operation's recorded result, the next start: core transitions
 * over the fresh record, seqs renumbered after the control's events) and commits again at once,
 * without calling the reducer or the tool again; only when a move no longer applies does it
 * re-read and recompute. Controls, which are cheap to redo, retry after a jittered pause. A run
 * that ended takes no writes from controls at all, so its log is final.
 *
 * A fused commit (an operation's result + the next one's start) is therefore, in the common
 * case, ONE conditional UpdateItem of the record item with the events in its tail; every few
 * commits the tail is flushed to a page first (a page Put, then the UpdateItem). The record's
 * `state_at` names the item holding the state of its `state_rev` (the store sets it, like
 * `version`). Event data and domain state above INLINE_LIMIT bytes go to the blob store.
 */
import { createHash } from 'node:crypto';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { Metered } from '../contracts/index.ts';
import {
  isAcceptedRunRecord,
  overLimitMessage,
  type RunEvent,
  type RunRecord,
  type Subject,
  safeParseRunRecord,
} from '../contracts/index.ts';
import { canonicalJson } from '../core/canonical.ts';
import { principalKeyOf } from '../core/principal.ts';
import { sweepDue } from '../core/sweeper.ts';
import { type Commit, CommitRejected, CommitTooLarge } from '../engine/ports.ts';
import { layoutOf, pageItemOf, stateSk } from './commit-layout.ts';
import type { CommitBodies, StoredBody } from './event-pages.ts';
import { type EventTail, emptyTail, eventSk, TAIL_TEXT_LIMIT } from './event-tail.ts';
import type { Item, ItemKey, PlannedWrite } from './planned-write.ts';
import { quotaReleaseWrites, quotaWrites } from './quota-plan.ts';
import { packBody, packMetered } from './record-codec.ts';
import { eventIndexWrites } from './resume-key-plan.ts';
import { ATTR, principalShardKey, statusShardKey, sweepShardKey } from './table.ts';

/** Payloads above this many bytes (UTF-8 JSON) go to the blob store. */
export const INLINE_LIMIT = 32 * 1024;
/**
 * The run record's largest JSON size (bytes): below DynamoDB's 400 KB item limit with room for
 * the index attributes. A commit that would make it larger is refused whole (CommitTooLarge).
 */
export const RECORD_LIMIT = 350 * 1024;
/** DynamoDB's limit on actions per TransactWriteItems. */
export const MAX_TRANSACT_ITEMS = 100;
export { PAGE_LIMIT } from './event-pages.ts';

/** DynamoDB's largest item (bytes). */
export const ITEM_LIMIT = 400 * 1024;
/** DynamoDB's largest TransactWriteItems payload (bytes). */
export const TRANSACTION_LIMIT = 4 * 1024 * 1024;

/**
 * An item's size as DynamoDB counts it ("Item sizes and formats"): per attribute its name's
 * UTF-8 bytes plus its value's size; a string its UTF-8 bytes, a number 1 byte per two
 * significant digits plus 1, a boolean or null 1, a map or list 3 plus 1 per element plus the
 * elements (a map's keys counted like attribute names).
 */
export function itemSize(item: Item): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueSize(value);
  return bytes;
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number')
    return Math.ceil(String(Math.abs(value)).replace(/[.e+-]/g, '').length / 2) + 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value)) return 3 + value.reduce((n: number, v) => n + 1 + valueSize(v), 0);
  if (value !== null && typeof value === 'object') {
    return 3 + Object.entries(value).reduce((n, [k, v]) => n + 1 + Buffer.byteLength(k) + valueSize(v), 0);
  }
  return 1;
}

export type { Condition, Item, ItemKey, PlannedWrite, WriteRole } from './planned-write.ts';

// ---------------------------------------------------------------- keys

export const runPk = (runId: string) => `RUN#${runId}`;
export { eventSk };
/** The sort key above every event page (the upper bound of an event range). */
export const LAST_EVENT_SK = 'E#999999999999';
export const ackSk = (controlId: string) => `K#${controlId}`;
export const checkpointSk = (n: number) => `C#${n}`;
export { stateSk };

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
export const subjectKey = (subject: Subject) =>
  `SUBJ#${sha(canonicalJson({ workspace: subject.workspace, path: subject.path }))}`;
export const createKeyPk = (principalKey: string, key: string) =>
  `CKEY#${sha(canonicalJson([principalKey, key]))}`;

export { quotaPk, quotaWindowSk } from './quota-plan.ts';
export {
  DELIVERY_MEMORY_MS,
  EARLY_RESULT_LIMIT,
  planEarlyResult,
  resumeKeyPk,
} from './resume-key-plan.ts';

// ---------------------------------------------------------------- the plan of a commit

/** Everything one commit writes, in order, and the record as it will be stored. */
export interface CommitPlan {
  writes: PlannedWrite[];
  /**
   * Writes made after the commit by the table's stream consumer, not by it (the subject release
   * of a run that just ended, subjectReleaseWrites): not executed with the plan, but charged in
   * it, as plain writes, so that the run's meter holds them.
   */
  released: PlannedWrite[];
  /** The record as stored: `version` and `state_at` set. */
  record: RunRecord;
  /** The inline event tail the record item holds once the commit landed (event-tail.ts). */
  tail: EventTail;
  /**
   * The same plan with the record's `metered` replaced (metering.ts settles the charge in a few
   * rounds): only the record item's `metered` attribute is written again, its body (compressed
   * without the charge), the layout and everything else kept.
   */
  withMetered(metered: Metered): CommitPlan;
}

export type { CommitBodies, StoredBody } from './event-pages.ts';

/** JSON text inline (up to INLINE_LIMIT bytes), else stored in `blobs` and referenced. */
export async function storeBody(value: unknown, blobs: BlobStore): Promise<StoredBody> {
  const text = JSON.stringify(value ?? null);
  if (Buffer.byteLength(text) <= INLINE_LIMIT) return { inline: text };
  return { blob: await blobs.put(text, 'application/json') };
}

/** Moves a commit's large payloads (event data, domain state) to the blob store first. */
export async function storeCommitBodies(commit: Commit, blobs: BlobStore): Promise<CommitBodies> {
  const bodies: CommitBodies = { events: new Map() };
  await Promise.all(commit.events.map(async (e) => bodies.events.set(e.seq, await storeBody(e.data, blobs))));
  if (commit.state !== undefined) bodies.state = await storeBody(commit.state.value, blobs);
  return bodies;
}

/**
 * The record's item, holding `tail` (event-tail.ts); throws CommitTooLarge when the record's JSON
 * exceeds RECORD_LIMIT. Stored as JSON text compressed with the tail's (record-codec.ts format
 * 2), not a map: DynamoDB refuses maps nested deeper than 32 levels, and a tool's args or a
 * model's output may be that deep. The index attributes (status, principal and sweep shards)
 * are derived from the record here and nowhere else. `tailText` is the tail's JSON when known.
 */
export function recordItem(
  record: RunRecord,
  tail: EventTail = emptyTail(record.last_seq),
  tailText: string = JSON.stringify(tail),
): Item & ItemKey {
  // The charge lives beside the body (record-codec.ts METERED_COUNTERS): settling it never
  // compresses the record again.
  const { metered, ...rest } = record;
  const text = JSON.stringify(rest);
  const bytes = Buffer.byteLength(text);
  if (bytes > RECORD_LIMIT) {
    throw new CommitTooLarge(
      `${overLimitMessage('the run record', RECORD_LIMIT, bytes)} (queued steers, open requests and the operation's effect live in it)`,
    );
  }
  const item: Item & ItemKey = {
    pk: runPk(record.run_id),
    sk: 'R',
    body_z: packBody(text, tailText),
    version: record.version,
    epoch: record.epoch,
    status: record.status,
    last_seq: record.last_seq,
    [ATTR.createdAt]: record.created_at,
    [ATTR.statusShard]: statusShardKey(record.status, record.run_id),
    [ATTR.principalShard]: principalShardKey(principalKeyOf(record.principal), record.run_id),
  };
  if (metered !== undefined) item.metered = packMetered(metered);
  if (record.lease !== null) item.lease_owner = record.lease.owner;
  // Beside status, for the stop watch's projected read (RunStore.getStatus).
  if (
    'interrupt_requested' in record &&
    record.interrupt_requested !== undefined &&
    record.operation?.started_at != null
  )
    item.interrupt_requested = record.interrupt_requested;
  const due = sweepDue(record);
  if (due !== null) {
    item[ATTR.sweepShard] = sweepShardKey(record.run_id);
    item[ATTR.sweepDue] = due;
  }
  return item;
}

/** Attributes of the record item that are absent when they do not apply (REMOVEd by an update). */
const OPTIONAL_RECORD_ATTRS = [
  'lease_owner',
  'metered',
  'interrupt_requested',
  ATTR.sweepShard,
  ATTR.sweepDue,
  // The record's earlier stored forms (plain JSON, format 1): body_z replaces them.
  'record',
  'record_z',
];

function isEndingEvent(e: RunEvent): boolean {
  return e.kind === 'run_completed' || e.kind === 'run_failed' || e.kind === 'stopped';
}

/** The writes that create a run: its record (stamped `token`), the subject index, the create key, the parent's link. */
function createWrites(
  commit: Commit,
  record: RunRecord,
  stored: Item & ItemKey,
  token?: string,
): PlannedWrite[] {
  const writes: PlannedWrite[] = [];
  const item = token === undefined ? stored : { ...stored, commit_token: token };
  writes.push({ op: 'put', role: 'record', item, condition: { kind: 'absent' } });
  writes.push({
    op: 'put',
    role: 'subject',
    item: { pk: subjectKey(record.subject), sk: 'S', run_id: record.run_id },
    condition: { kind: 'absent' },
  });
  if (commit.createKey !== undefined) {
    writes.push({
      op: 'put',
      role: 'create_key',
      item: {
        pk: createKeyPk(commit.createKey.principalKey, commit.createKey.key),
        sk: 'K',
        run_id: record.run_id,
        ...(commit.createKey.request_digest !== undefined
          ? { request_digest: commit.createKey.request_digest }
          : {}),
      },
      condition: { kind: 'absent' },
    });
  }
  writes.push(...quotaWrites(commit, record));
  if (commit.parentLink !== undefined) {
    writes.push({
      op: 'put',
      role: 'parent_link',
      item: {
        pk: runPk(commit.parentLink),
        sk: `CH#${record.run_id}`,
        run_id: record.run_id,
        created_at: record.created_at,
      },
    });
  }
  return writes;
}

/**
 * A fork's link page: keyed like an event page by its first seq, its one entry
 * `{link_run, first_seq, last_seq}` stands for those events of the run it was forked from.
 */
function linkPage(pk: string, link: NonNullable<Commit['eventLink']>): Item & ItemKey {
  return {
    pk,
    sk: eventSk(link.first_seq),
    first_seq: link.first_seq,
    last_seq: link.last_seq,
    events: [{ link_run: link.run_id, first_seq: link.first_seq, last_seq: link.last_seq }],
  };
}

/** Index items derived from the events they belong to: a result request's resume key, opened and released. */
const keyOfWrite = (w: PlannedWrite): ItemKey => (w.op === 'put' ? { pk: w.item.pk, sk: w.item.sk } : w.key);

/**
 * Refuses, before anything is sent, what DynamoDB would refuse as a ValidationException: more
 * than MAX_TRANSACT_ITEMS writes, an item above ITEM_LIMIT, a transaction above
 * TRANSACTION_LIMIT (CommitTooLarge), one item written twice (CommitRejected validation, a bug).
 */
function refuseWhatDynamoRefuses(writes: PlannedWrite[]): void {
  if (writes.length > MAX_TRANSACT_ITEMS) {
    throw new CommitTooLarge(
      `a commit of ${writes.length} items exceeds the ${MAX_TRANSACT_ITEMS}-item transaction limit`,
    );
  }
  const keys = writes.map((w) => `${keyOfWrite(w).pk}\u0000${keyOfWrite(w).sk}`);
  if (new Set(keys).size !== keys.length) {
    throw new CommitRejected('validation', 'one item is written twice in one commit');
  }
  let total = 0;
  for (const w of writes) {
    const size = w.op === 'delete' ? 0 : itemSize(w.op === 'put' ? w.item : { ...w.key, ...w.set });
    if (size > ITEM_LIMIT) {
      throw new CommitTooLarge(overLimitMessage(`a ${w.role} item`, ITEM_LIMIT, size));
    }
    total += size;
  }
  if (total > TRANSACTION_LIMIT) {
    throw new CommitTooLarge(
      overLimitMessage('a commit (one DynamoDB transaction)', TRANSACTION_LIMIT, total),
    );
  }
}

/** The checkpoints, the control ack, and the live-run slot release of a run that just ended. */
function bookkeepingWrites(commit: Commit, record: RunRecord, pk: string): PlannedWrite[] {
  const writes: PlannedWrite[] = [];
  for (const cp of commit.checkpoints ?? []) {
    // The engine builds checkpoints before the commit: the state's place is known only here.
    const withStateAt =
      cp.state_rev === record.state_rev && record.state_at !== undefined
        ? { ...cp, state_at: record.state_at }
        : cp;
    writes.push({
      op: 'put',
      role: 'checkpoint',
      item: { pk, sk: checkpointSk(cp.n), n: cp.n, checkpoint_json: JSON.stringify(withStateAt) },
      condition: { kind: 'absent' },
    });
  }
  if (commit.controlAck !== undefined) {
    writes.push({
      op: 'put',
      role: 'control_ack',
      item: { pk, sk: ackSk(commit.controlAck.control_id), ...commit.controlAck },
      condition: { kind: 'absent' },
    });
  }
  // A run that just ended frees its live-run slot in the same commit. Unconditional: only the
  // run holding a slot ever frees it. Its subject is freed after the commit (releaseWrites).
  if (endsRun(commit, record)) writes.push(...quotaReleaseWrites(record));
  return writes;
}

/** True when `commit` is the one that ends the run (its ending event, on a stored run). */
function endsRun(commit: Commit, record: RunRecord): boolean {
  const terminal = record.status === 'completed' || record.status === 'failed' || record.status === 'stopped';
  return terminal && commit.expectedVersion !== null && commit.events.some((e) => isEndingEvent(e));
}

/**
 * The subject release of a run that just ended: one delete, conditioned on the subject still
 * naming the run, made after the commit by the table's stream consumer (the outbox), not by the
 * commit: the ending commit stays one plain write. Until it lands, the subject names an ended
 * run, which frees it all the same (commit-protocol.ts: a create takes a subject over from an
 * ended run). Empty for every other commit.
 */
export function subjectReleaseWrites(record: RunRecord): PlannedWrite[] {
  return [
    {
      op: 'delete',
      role: 'subject_release',
      key: { pk: subjectKey(record.subject), sk: 'S' },
      condition: { kind: 'absent_or_held_by', run_id: record.run_id },
    },
  ];
}

/** The record's update (or, on create, nothing: createWrites puts it) for `stored`. */
function recordUpdate(commit: Commit, stored: Item & ItemKey, token?: string): PlannedWrite {
  const { pk: _pk, sk: _sk, ...set } = stored;
  if (token !== undefined) set.commit_token = token;
  return {
    op: 'update',
    role: 'record',
    key: { pk: stored.pk, sk: 'R' },
    set,
    remove: OPTIONAL_RECORD_ATTRS.filter((k) => set[k] === undefined),
    condition: {
      kind: 'record_version',
      version: commit.expectedVersion as number,
      ...(commit.fence !== undefined ? { fence: commit.fence } : {}),
    },
  };
}

/** The record as it will be stored: the commit's, with `version` and `state_at` set. Unparsed. */
function storedRecord(commit: Commit, version: number, stateAt: string | undefined): RunRecord {
  const { state_at: _previous, ...rest } = commit.record;
  return { ...rest, version, ...(stateAt !== undefined ? { state_at: stateAt } : {}) } as RunRecord;
}

/**
 * Every write of one commit, in this order: the record (update, or on create its put + subject +
 * create key + parent link), the event page(s), the index items the events call for, the D#
 * state of a commit without events, checkpoints, the control ack, the subject release. `tail`
 * is the record's inline tail at `commit.expectedVersion` (the store knows it: event-tail.ts
 * TailCache); where the events go is event-tail.ts's rule. The record is parsed by the closed
 * schema first: an illegal record is never planned. Throws CommitTooLarge above
 * MAX_TRANSACT_ITEMS writes or RECORD_LIMIT bytes; never truncates. `token`, when given, is
 * stamped on the record update and the event pages as `commit_token`: the commit protocol's
 * mark of one attempt's own writes (commit-protocol.ts), part of the plan so that the items'
 * sizes (and the run's charge, metering.ts) are those written.
 */
export function planCommit(
  commit: Commit,
  bodies: CommitBodies,
  token?: string,
  tail: EventTail = emptyTail(commit.record.last_seq - commit.events.length),
): CommitPlan {
  const nextVersion = commit.expectedVersion === null ? 1 : commit.expectedVersion + 1;
  const pk = runPk(commit.record.run_id);
  // Parsed once, without state_at: where the state lives (a plain optional string) is the
  // layout's to say, and each candidate layout's record is this one with it set.
  // A record sealed by the run machine (core seal) was parsed there; its stored form differs only
  // by its version and the state_at this plan sets. Any other record is parsed here.
  const unparsed = storedRecord(commit, nextVersion, undefined);
  const parsed = isAcceptedRunRecord(commit.record) ? null : safeParseRunRecord(unparsed);
  if (parsed !== null && !parsed.success)
    throw new Error(`refusing to store an illegal run record: ${parsed.error.issues[0]?.message}`);
  const base = parsed === null ? unparsed : parsed.data;
  // state_at names the item holding the state of the record's state_rev: this commit's place
  // for it when it wrote that revision, else whatever the record already pointed at.
  const recordAt = (own: string | undefined): RunRecord => {
    const at =
      commit.state !== undefined && commit.state.rev === commit.record.state_rev
        ? own
        : commit.record.state_at;
    return at === undefined ? base : { ...base, state_at: at };
  };
  // The candidates packed to be sized: the layout chosen reuses its item, one DEFLATE less.
  const packed: { record: RunRecord; tail: EventTail; text: string; item: Item & ItemKey }[] = [];
  const layout = layoutOf(commit, bodies, tail, (candidate, at) => {
    const text = JSON.stringify(candidate);
    if (Buffer.byteLength(text) > TAIL_TEXT_LIMIT) return Number.POSITIVE_INFINITY;
    const record = recordAt(at);
    const item = recordItem(record, candidate, text);
    packed.push({ record, tail: candidate, text, item });
    return itemSize(item);
  });
  const chosen = packed.find((p) => p.tail === layout.tail);
  const record = chosen?.record ?? recordAt(layout.stateAt);
  const tailText = chosen?.text ?? JSON.stringify(layout.tail);
  const pageItems = layout.pages.map((page) => pageItemOf(pk, page, nextVersion, token));
  const rest: PlannedWrite[] = [];
  for (const item of pageItems)
    rest.push({
      op: 'put',
      role: 'page',
      item,
      condition:
        commit.expectedVersion === null
          ? { kind: 'absent' }
          : { kind: 'page_open', commit_version: nextVersion },
    });
  if (commit.eventLink !== undefined && commit.expectedVersion === null)
    rest.push({
      op: 'put',
      role: 'page',
      item: linkPage(pk, commit.eventLink),
      condition: { kind: 'absent' },
    });
  rest.push(...eventIndexWrites(commit.events, record));
  // Write-once: a revision's state never changes once written.
  if (layout.bare !== undefined)
    rest.push({
      op: 'put',
      role: 'state',
      item: { pk, sk: stateSk(layout.bare.state_rev), ...layout.bare },
      condition: { kind: 'absent' },
    });
  rest.push(...bookkeepingWrites(commit, record, pk));

  const assemble = (stored: RunRecord, item: Item & ItemKey): CommitPlan => {
    const writes =
      commit.expectedVersion === null
        ? [...createWrites(commit, stored, item, token), ...rest]
        : [recordUpdate(commit, item, token), ...rest];
    refuseWhatDynamoRefuses(writes);
    return {
      writes,
      released: endsRun(commit, stored) ? subjectReleaseWrites(stored) : [],
      record: stored,
      tail: layout.tail,
      withMetered: (metered) => assemble({ ...stored, metered }, { ...item, metered: packMetered(metered) }),
    };
  };
  return assemble(
    record,
    chosen?.record === record ? { ...chosen.item } : recordItem(record, layout.tail, tailText),
  );
}
