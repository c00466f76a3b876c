/**
 * RunStore on one DynamoDB table: strongly consistent reads of the run record, its events, its
 * domain state and its control acks, and ONE commit function that builds every
 * TransactWriteItems. DESIGN sections 4 and 5; seed agent-runs, "Storage and cluster behaviour".
 *
 * Items (pk / sk):
 *   RUN#{id} / R            the run record (closed schema, parsed before every write)
 *   RUN#{id} / E#{seq:12}   one event page: every event of one commit, keyed by the seq of its
 *                           LAST event: {events: [{...head, data_json} | {...head, data_blob}],
 *                           first_seq, last_seq}; the commit's last page also holds the domain
 *                           state it wrote: {state_rev, state_json | state_blob}. A commit's events
 *                           above PAGE_LIMIT serialized bytes split into several pages.
 *   RUN#{id} / D#{rev}      domain state written by a commit without events (legacy layout too)
 *   RUN#{id} / C#{n}        checkpoint (with state_at when its state_rev is the record's)
 *   RUN#{id} / K#{control}  control ack {digest, ack, seq}
 *   RUN#{id} / CH#{child}   link to a child run this run delegated to {run_id, created_at}
 *   SUBJ#{sha256} / S       the subject's live run
 *   CKEY#{sha256} / K       create key → run
 *   RKEY#{sha256} / K       resume key → run, op
 *
 * A fused commit (an operation's result + the next one's start) is therefore TWO items: the
 * record Update and one event page. The record's `state_at` names the item holding the state
 * of its `state_rev` (the store sets it, like `version`). Event data and domain state above
 * INLINE_LIMIT bytes go to the blob store, one blob each.
 */
import { createHash } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type ConsumedCapacity,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { BlobRef, BlobStore } from '../blobs/blob-store.ts';
import {
  type ControlAck,
  type RunEvent,
  RunEvent as RunEventSchema,
  RunRecord,
  type Subject,
} from '../contracts/index.ts';
import { canonicalJson } from '../core/canonical.ts';
import type { Fence } from '../core/run-machine.ts';
import { ATTR, principalShardKey, SWEEP_SHARDS, statusShardKey, sweepShardKey } from './table.ts';

/** Payloads above this many bytes (UTF-8 JSON) go to the blob store. */
export const INLINE_LIMIT = 32 * 1024;
/**
 * The run record's largest JSON size (bytes): below DynamoDB's 400 KB item limit with room for
 * the index attributes. A commit that would make it larger is refused whole (CommitTooLarge).
 */
export const RECORD_LIMIT = 350 * 1024;
/** DynamoDB's limit on actions per TransactWriteItems. */
export const MAX_TRANSACT_ITEMS = 100;
/**
 * Most serialized bytes (UTF-8 JSON of its events, plus the domain state on the last page) one
 * event page holds; DynamoDB's item limit is 400 KB. A page takes at least one event.
 */
export const PAGE_LIMIT = 300 * 1024;

// ---------------------------------------------------------------- errors

/** Why a commit was refused, each with one reaction (see {@link CommitRejected}). */
export type CommitFailure =
  /** The run record's lease owner or epoch is not the committer's: stop, write nothing more. */
  | 'fenced_out'
  /** The run record changed since it was read: re-read and recompute. */
  | 'stale_version'
  /** Another transaction touched the same items: retried with backoff here; thrown when exhausted. */
  | 'transaction_conflict'
  /** Throttled: retried with backoff here; thrown when exhausted (retryable by the caller). */
  | 'throttled'
  /** The subject already has a live run (create only). */
  | 'subject_taken'
  /** The create key was already used (create only). */
  | 'create_key_taken'
  /** The control id already has an ack (a concurrent duplicate): re-read the ack. */
  | 'control_ack_exists'
  /** A bug: the request itself is invalid (too many items, a bad expression). Fail loudly. */
  | 'validation';

/**
 * A refused commit. Reactions: fenced_out → the worker stops; stale_version → re-read the run
 * and recompute; transaction_conflict / throttled → already retried with backoff, the caller
 * treats it as retryable; subject_taken / create_key_taken → return the existing run;
 * control_ack_exists → answer from the stored ack; validation → a bug, surfaced as is.
 * `current` is the run record as DynamoDB returned it (ReturnValuesOnConditionCheckFailure).
 */
export class CommitRejected extends Error {
  override name = 'CommitRejected';
  readonly reason: CommitFailure;
  readonly current: RunRecord | null;
  constructor(
    reason: CommitFailure,
    message: string,
    current: RunRecord | null = null,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.reason = reason;
    this.current = current;
  }
}

/** A commit too large for one transaction: it is refused whole, never truncated. */
export class CommitTooLarge extends Error {
  override name = 'CommitTooLarge';
  readonly code = 'commit_too_large';
}

// ---------------------------------------------------------------- commit shape

export interface ControlAckItem {
  control_id: string;
  digest: string;
  ack: ControlAck;
  seq: number;
}

export interface CheckpointItem {
  n: number;
  reason: string;
  /** What core owns, copied; the domain state and transcript are referenced. */
  core: Record<string, unknown>;
  state_rev: number;
  /**
   * The sort key of the item holding the domain state of `state_rev` (for
   * `getState(runId, state_rev, state_at)`); set by the store when `state_rev` is the committed
   * record's, absent otherwise (and for state 0).
   */
  state_at?: string;
  transcript_cutoff_seq: number;
  at: number;
}

/** Everything one commit writes. */
export interface Commit {
  /** The record as it will be stored (its `version` and `state_at` are set by the commit). */
  record: RunRecord;
  /** The version read; null creates the run. */
  expectedVersion: number | null;
  /** The committer's fence, when it holds (or held) the lease. */
  fence?: Fence;
  events: RunEvent[];
  state?: { rev: number; value: unknown };
  checkpoints?: CheckpointItem[];
  controlAck?: ControlAckItem;
  /** Create only: the create key to claim. */
  createKey?: { principalKey: string; key: string };
  /** Create only: the parent run of a child run; writes the link `RUN#{parent} / CH#{child}`. */
  parentLink?: string;
}

export interface StoredRun {
  record: RunRecord;
}

/** Request counters, for the benchmark (DynamoDB requests and consumed capacity). */
export interface StoreMetrics {
  reads: number;
  queries: number;
  transactions: number;
  transactionRetries: number;
  readCapacity: number;
  writeCapacity: number;
}

export interface RunStore {
  getRun(runId: string): Promise<RunRecord | null>;
  /** Run record and one control ack in one consistent BatchGetItem. */
  getRunAndAck(
    runId: string,
    controlId: string,
  ): Promise<{ record: RunRecord | null; ack: ControlAckItem | null }>;
  /**
   * The domain state of revision `rev` (null for rev 0). `at` is the sort key of the item
   * holding it (the record's or a checkpoint's `state_at`); without it the legacy `D#{rev}`
   * item is read. Throws when the item is missing or holds another revision.
   */
  getState(runId: string, rev: number, at?: string): Promise<unknown>;
  /**
   * Events with seq > after, up to limit, in order, strongly consistent: never a gap (a read
   * that meets one, as a read-committed Query may while a commit lands, stops before it).
   */
  readEvents(runId: string, after: number, limit: number): Promise<RunEvent[]>;
  getCheckpoint(runId: string, n: number): Promise<CheckpointItem | null>;
  listCheckpoints(runId: string): Promise<CheckpointItem[]>;
  findBySubject(subject: Subject): Promise<string | null>;
  findByCreateKey(principalKey: string, key: string): Promise<string | null>;
  /** The ids of the child runs linked to `parentRunId` (strongly consistent), in id order. */
  listChildren(parentRunId: string): Promise<string[]>;
  findByResumeKey(resumeKey: string): Promise<{ run_id: string; op_id: string } | null>;
  /** Runs whose sweep_due ≤ now in one shard (GSI, eventually consistent: re-read before acting). */
  sweepCandidates(shard: number, now: number, limit: number): Promise<string[]>;
  /** Runs by status (newest first), paged by an opaque cursor. */
  listByStatus(
    status: string,
    limit: number,
    cursor?: string,
  ): Promise<{ run_ids: string[]; cursor?: string }>;
  /** Writes one commit in one TransactWriteItems; returns the stored record (new version, state_at). */
  commit(commit: Commit): Promise<RunRecord>;
  readonly metrics: StoreMetrics;
}

// ---------------------------------------------------------------- keys

const runPk = (runId: string) => `RUN#${runId}`;
const eventSk = (seq: number) => `E#${String(seq).padStart(12, '0')}`;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
export const subjectKey = (subject: Subject) =>
  `SUBJ#${sha(canonicalJson({ workspace: subject.workspace, path: subject.path }))}`;
const createKeyPk = (principalKey: string, key: string) => `CKEY#${sha(canonicalJson([principalKey, key]))}`;
const resumeKeyPk = (key: string) => `RKEY#${sha(key)}`;
export const principalKeyOf = (p: RunRecord['principal']) => `${p.kind}:${p.id}`;

/** When the sweeper should next look at the run, or null when it owes nothing. */
export function sweepDue(record: RunRecord): number | null {
  if (record.lease !== null) return record.lease.expires_at;
  if (record.status === 'queued') return record.wake_at ?? record.updated_at;
  if (record.status === 'waiting') return record.wake_at;
  if (
    (record.status === 'completed' || record.status === 'failed' || record.status === 'stopped') &&
    (record.inbox.length > 0 || record.owed.length > 0)
  ) {
    return record.updated_at;
  }
  return null;
}

// ---------------------------------------------------------------- implementation

export interface DynamoRunStoreOptions {
  doc: DynamoDBDocumentClient;
  tableName: string;
  blobs: BlobStore;
  /** Attempts for a transaction that meets a conflict or throttling (default 5). */
  maxAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

type Item = Record<string, unknown>;
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export function createDynamoRunStore(options: DynamoRunStoreOptions): RunStore {
  const { doc, tableName: TableName, blobs } = options;
  const maxAttempts = options.maxAttempts ?? 5;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const metrics: StoreMetrics = {
    reads: 0,
    queries: 0,
    transactions: 0,
    transactionRetries: 0,
    readCapacity: 0,
    writeCapacity: 0,
  };

  function countCapacity(
    c: ConsumedCapacity | ConsumedCapacity[] | undefined,
    kind: 'read' | 'write' = 'read',
  ): void {
    for (const x of Array.isArray(c) ? c : c ? [c] : []) {
      if (x.ReadCapacityUnits === undefined && x.WriteCapacityUnits === undefined) {
        // At TOTAL, DynamoDB may report only CapacityUnits: attribute them by call kind.
        if (kind === 'read') metrics.readCapacity += x.CapacityUnits ?? 0;
        else metrics.writeCapacity += x.CapacityUnits ?? 0;
        continue;
      }
      metrics.readCapacity += x.ReadCapacityUnits ?? 0;
      metrics.writeCapacity += x.WriteCapacityUnits ?? 0;
    }
  }

  function parseRecord(item: Item | undefined): RunRecord | null {
    if (item === undefined || item.record === undefined) return null;
    const parsed = RunRecord.safeParse(fromJsonText(item.record));
    if (!parsed.success)
      throw new Error(`stored run record does not parse: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  /** JSON text inline (up to INLINE_LIMIT bytes), else a blob reference. */
  async function inlineOrBlob(
    value: unknown,
    mediaType = 'application/json',
  ): Promise<{ inline?: string; blob?: BlobRef }> {
    const text = JSON.stringify(value ?? null);
    if (Buffer.byteLength(text) <= INLINE_LIMIT) return { inline: text };
    return { blob: await blobs.put(text, mediaType) };
  }

  /** A payload stored as `{field}_json` (text), `{field}` (a map, older items) or `{field}_blob`. */
  async function resolve(item: Item, field: string): Promise<unknown> {
    const text = item[`${field}_json`];
    if (typeof text === 'string') return JSON.parse(text);
    if (item[field] !== undefined) return item[field];
    const ref = item[`${field}_blob`] as BlobRef | undefined;
    if (ref === undefined) return undefined;
    return JSON.parse(await blobs.get(ref));
  }

  /** One stored page entry ({...head, data} or {...head, data_blob}) back to a parsed event. */
  async function decodeEntry(entry: Item): Promise<RunEvent> {
    const { data_blob: _blob, data_json: _json, ...head } = entry;
    const data = await resolve(entry, 'data');
    const parsed = RunEventSchema.safeParse({ ...head, data });
    if (!parsed.success) throw new Error(`stored event does not parse: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  /** The entries of an event item: a page's `events`, or the one event of a legacy E# item. */
  function entriesOf(item: Item): Item[] {
    if (Array.isArray(item.events)) return item.events as Item[];
    if (item.event !== undefined) {
      const legacy: Item = { ...(item.event as Item) };
      if (item.data_blob !== undefined) legacy.data_blob = item.data_blob;
      else legacy.data = item.data;
      return [legacy];
    }
    return [];
  }

  /** The record item; throws CommitTooLarge when the record's JSON exceeds RECORD_LIMIT. */
  function recordItem(record: RunRecord): Item {
    // JSON text, not a map: DynamoDB refuses maps nested deeper than 32 levels, and a tool's
    // args or a model's output may be that deep.
    const text = JSON.stringify(record);
    const bytes = Buffer.byteLength(text);
    if (bytes > RECORD_LIMIT) {
      throw new CommitTooLarge(
        `the run record would be ${bytes} bytes, above its ${RECORD_LIMIT}-byte limit (queued steers, open requests and the operation's effect live in it)`,
      );
    }
    const item: Item = {
      pk: runPk(record.run_id),
      sk: 'R',
      record: text,
      version: record.version,
      epoch: record.epoch,
      status: record.status,
      [ATTR.createdAt]: record.created_at,
      [ATTR.statusShard]: statusShardKey(record.status, record.run_id),
      [ATTR.principalShard]: principalShardKey(principalKeyOf(record.principal), record.run_id),
    };
    if (record.lease !== null) item.lease_owner = record.lease.owner;
    const due = sweepDue(record);
    if (due !== null) {
      item[ATTR.sweepShard] = sweepShardKey(record.run_id);
      item[ATTR.sweepDue] = due;
    }
    return item;
  }

  /** Builds the run record's Update: SET every stored attribute, REMOVE the absent optional ones. */
  function recordUpdate(commit: Commit, record: RunRecord): TransactItem {
    const stored = recordItem(record);
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets: string[] = [];
    for (const [k, v] of Object.entries(stored)) {
      if (k === 'pk' || k === 'sk') continue;
      names[`#${k}`] = k;
      values[`:${k}`] = v;
      sets.push(`#${k} = :${k}`);
    }
    const removes = ['lease_owner', ATTR.sweepShard, ATTR.sweepDue].filter((k) => stored[k] === undefined);
    for (const k of removes) names[`#${k}`] = k;
    // Condition, from named parts: the version read (no one committed since) AND, for a lease
    // holder, the fence (owner + epoch) in the same expression, never a separate ConditionCheck.
    const conditions = ['#version = :expected_version'];
    values[':expected_version'] = commit.expectedVersion;
    if (commit.fence !== undefined) {
      conditions.push('#lease_owner_c = :fence_owner', '#epoch = :fence_epoch');
      names['#lease_owner_c'] = 'lease_owner';
      names['#epoch'] = 'epoch';
      values[':fence_owner'] = commit.fence.owner;
      values[':fence_epoch'] = commit.fence.epoch;
    }
    return {
      Update: {
        TableName,
        Key: { pk: stored.pk, sk: 'R' },
        UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.map((k) => `#${k}`).join(', ')}` : ''}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /**
   * The entries of a commit's events, packed into pages of at most PAGE_LIMIT serialized bytes
   * (`reserve` bytes of the last page are kept for the domain state): greedily from the last
   * event back, so the last page is the fullest; a page always takes at least one event.
   */
  async function pagesOf(
    events: RunEvent[],
    reserve: number,
  ): Promise<{ entries: Item[]; seqs: number[] }[]> {
    const ordered = [...events].sort((a, b) => a.seq - b.seq);
    const entries = await Promise.all(
      ordered.map(async (event) => {
        const { data, ...head } = event;
        const body = await inlineOrBlob(data);
        const entry: Item = body.blob
          ? { ...head, data_blob: body.blob }
          : { ...head, data_json: body.inline };
        // The data is already text: measure it as is rather than serializing it a second time.
        const bytes =
          Buffer.byteLength(JSON.stringify(body.blob ? entry : head)) +
          (body.inline !== undefined ? Buffer.byteLength(body.inline) + 16 : 0);
        return { entry, seq: event.seq, bytes };
      }),
    );
    const pages: { entries: Item[]; seqs: number[] }[] = [];
    let page: { entries: Item[]; seqs: number[] } = { entries: [], seqs: [] };
    let bytes = reserve;
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const e = entries[i] as (typeof entries)[number];
      if (page.entries.length > 0 && bytes + e.bytes > PAGE_LIMIT) {
        pages.unshift(page);
        page = { entries: [], seqs: [] };
        bytes = 0;
      }
      page.entries.unshift(e.entry);
      page.seqs.unshift(e.seq);
      bytes += e.bytes;
    }
    if (page.entries.length > 0) pages.unshift(page);
    return pages;
  }

  /**
   * Every item of one commit, in this order: the record (Update, or on create its Put + subject
   * + create key), the event page(s), the index items the events call for, the D# state of a
   * commit without events, checkpoints, the control ack, the subject release. Returns the items,
   * the record as stored (version and state_at set) and the index of the ack Put (-1 if none).
   * Throws CommitTooLarge above MAX_TRANSACT_ITEMS; never truncates.
   */
  async function buildItems(
    commit: Commit,
    nextVersion: number,
  ): Promise<{ items: TransactItem[]; record: RunRecord; ackIndex: number }> {
    const pk = runPk(commit.record.run_id);
    const state =
      commit.state === undefined
        ? undefined
        : { rev: commit.state.rev, body: await inlineOrBlob(commit.state.value) };
    const stateAttrs: Item | undefined =
      state === undefined
        ? undefined
        : {
            state_rev: state.rev,
            ...(state.body.blob ? { state_blob: state.body.blob } : { state_json: state.body.inline }),
          };
    const pages = await pagesOf(
      commit.events,
      stateAttrs === undefined ? 0 : Buffer.byteLength(JSON.stringify(stateAttrs)),
    );
    const pageItems: Item[] = pages.map((page) => ({
      pk,
      sk: eventSk(page.seqs.at(-1) as number),
      first_seq: page.seqs[0],
      last_seq: page.seqs.at(-1),
      events: page.entries,
    }));
    const lastPage = pageItems.at(-1);
    let stateItem: Item | undefined;
    if (stateAttrs !== undefined && state !== undefined) {
      if (lastPage !== undefined) Object.assign(lastPage, stateAttrs);
      else stateItem = { pk, sk: `D#${state.rev}`, ...stateAttrs };
    }
    // state_at names the item holding the state of the record's state_rev: this commit's item
    // when it wrote that revision, else whatever the record already pointed at.
    const stateAt =
      state !== undefined && state.rev === commit.record.state_rev
        ? String((lastPage ?? stateItem)?.sk)
        : commit.record.state_at;
    const { state_at: _previous, ...rest } = commit.record;
    const record = {
      ...rest,
      version: nextVersion,
      ...(stateAt !== undefined ? { state_at: stateAt } : {}),
    } as RunRecord;
    const parsed = RunRecord.safeParse(record);
    if (!parsed.success)
      throw new Error(`refusing to store an illegal run record: ${parsed.error.issues[0]?.message}`);

    const items: TransactItem[] = [];
    if (commit.expectedVersion === null) {
      items.push({
        Put: { TableName, Item: recordItem(record), ConditionExpression: 'attribute_not_exists(pk)' },
      });
      items.push({
        Put: {
          TableName,
          Item: { pk: subjectKey(record.subject), sk: 'S', run_id: record.run_id },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      });
      if (commit.createKey !== undefined) {
        items.push({
          Put: {
            TableName,
            Item: {
              pk: createKeyPk(commit.createKey.principalKey, commit.createKey.key),
              sk: 'K',
              run_id: record.run_id,
            },
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        });
      }
      if (commit.parentLink !== undefined) {
        items.push({
          Put: {
            TableName,
            Item: {
              pk: runPk(commit.parentLink),
              sk: `CH#${record.run_id}`,
              run_id: record.run_id,
              created_at: record.created_at,
            },
          },
        });
      }
    } else {
      items.push(recordUpdate(commit, record));
    }
    for (const Item of pageItems) {
      items.push({ Put: { TableName, Item, ConditionExpression: 'attribute_not_exists(pk)' } });
    }
    // Index items derived from the events they belong to.
    for (const event of commit.events) {
      if (
        event.kind === 'request_opened' &&
        event.data.kind === 'result' &&
        typeof event.data.resume_key === 'string'
      ) {
        items.push({
          Put: {
            TableName,
            Item: {
              pk: resumeKeyPk(event.data.resume_key),
              sk: 'K',
              run_id: record.run_id,
              op_id: event.data.op_id,
            },
          },
        });
      }
      if (event.kind === 'result_delivered' && typeof event.data.resume_key === 'string') {
        items.push({ Delete: { TableName, Key: { pk: resumeKeyPk(event.data.resume_key), sk: 'K' } } });
      }
    }
    if (stateItem !== undefined) items.push({ Put: { TableName, Item: stateItem } });
    for (const cp of commit.checkpoints ?? []) {
      // The engine builds checkpoints before the commit: the state's place is known only here.
      const stored: CheckpointItem =
        cp.state_rev === record.state_rev && record.state_at !== undefined
          ? { ...cp, state_at: record.state_at }
          : cp;
      items.push({
        Put: {
          TableName,
          Item: { pk, sk: `C#${cp.n}`, n: cp.n, checkpoint_json: JSON.stringify(stored) },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
    }
    let ackIndex = -1;
    if (commit.controlAck !== undefined) {
      ackIndex = items.length;
      items.push({
        Put: {
          TableName,
          Item: { pk, sk: `K#${commit.controlAck.control_id}`, ...commit.controlAck },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
    }
    // A run that just ended releases its subject in the same transaction.
    const terminal =
      record.status === 'completed' || record.status === 'failed' || record.status === 'stopped';
    if (terminal && commit.expectedVersion !== null && commit.events.some((e) => isEndingEvent(e))) {
      items.push({
        Delete: {
          TableName,
          Key: { pk: subjectKey(record.subject), sk: 'S' },
          ConditionExpression: 'attribute_not_exists(pk) OR run_id = :rid',
          ExpressionAttributeValues: { ':rid': record.run_id },
        },
      });
    }
    if (items.length > MAX_TRANSACT_ITEMS) {
      throw new CommitTooLarge(
        `a commit of ${items.length} items exceeds the ${MAX_TRANSACT_ITEMS}-item transaction limit`,
      );
    }
    return { items, record, ackIndex };
  }

  /** Maps a cancelled transaction to its CommitFailure by the code of each item (record = item 0). */
  function classify(err: TransactionCanceledException, commit: Commit, ackIndex: number): CommitRejected {
    const reasons = err.CancellationReasons ?? [];
    const codes = reasons.map((r) => r.Code ?? 'None');
    const first = reasons[0];
    if (codes.includes('ThrottlingError') || codes.includes('ProvisionedThroughputExceeded')) {
      return new CommitRejected('throttled', `commit throttled: ${codes.join(',')}`, null, { cause: err });
    }
    if (codes.includes('TransactionConflict')) {
      return new CommitRejected('transaction_conflict', 'commit met a concurrent transaction', null, {
        cause: err,
      });
    }
    if (codes.includes('ValidationError')) {
      return new CommitRejected(
        'validation',
        `invalid transaction: ${reasons.map((r) => r.Message).join('; ')}`,
        null,
        { cause: err },
      );
    }
    if (commit.expectedVersion === null) {
      if (codes[1] === 'ConditionalCheckFailed')
        return new CommitRejected('subject_taken', 'the subject already has a live run', null, {
          cause: err,
        });
      if (codes[2] === 'ConditionalCheckFailed')
        return new CommitRejected('create_key_taken', 'the create key was already used', null, {
          cause: err,
        });
      return new CommitRejected('stale_version', 'the run already exists', null, { cause: err });
    }
    if (first?.Code === 'ConditionalCheckFailed') {
      const current = unmarshallRecord(first.Item);
      if (commit.fence !== undefined && current !== null) {
        const stillOurs =
          current.lease !== null &&
          current.lease.owner === commit.fence.owner &&
          current.epoch === commit.fence.epoch;
        if (!stillOurs)
          return new CommitRejected('fenced_out', 'the lease is no longer ours', current, { cause: err });
      }
      return new CommitRejected('stale_version', 'the run changed since it was read', current, {
        cause: err,
      });
    }
    if (ackIndex >= 0 && codes[ackIndex] === 'ConditionalCheckFailed') {
      return new CommitRejected('control_ack_exists', 'the control id already has an ack', null, {
        cause: err,
      });
    }
    return new CommitRejected('validation', `commit refused: ${codes.join(',')}`, null, { cause: err });
  }

  return {
    metrics,
    async getRun(runId) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({
          TableName,
          Key: { pk: runPk(runId), sk: 'R' },
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      countCapacity(out.ConsumedCapacity);
      return parseRecord(out.Item);
    },
    async getRunAndAck(runId, controlId) {
      metrics.reads += 1;
      const out = await doc.send(
        new BatchGetCommand({
          RequestItems: {
            [TableName]: {
              Keys: [
                { pk: runPk(runId), sk: 'R' },
                { pk: runPk(runId), sk: `K#${controlId}` },
              ],
              ConsistentRead: true,
            },
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      countCapacity(out.ConsumedCapacity);
      const items = out.Responses?.[TableName] ?? [];
      const rec = items.find((i) => i.sk === 'R');
      const ack = items.find((i) => i.sk === `K#${controlId}`);
      return {
        record: parseRecord(rec),
        ack: ack === undefined ? null : (ack as unknown as ControlAckItem),
      };
    },
    async getState(runId, rev, at) {
      if (rev === 0) return null;
      const sk = at ?? `D#${rev}`;
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({
          TableName,
          Key: { pk: runPk(runId), sk },
          ConsistentRead: true,
          ProjectionExpression: '#state, state_json, state_blob, state_rev',
          ExpressionAttributeNames: { '#state': 'state' },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      countCapacity(out.ConsumedCapacity);
      if (out.Item === undefined) throw new Error(`domain state ${rev} of run ${runId} is missing (${sk})`);
      if (at !== undefined && out.Item.state_rev !== rev) {
        throw new Error(
          `item ${sk} of run ${runId} holds domain state ${String(out.Item.state_rev)}, not ${rev}`,
        );
      }
      return (await resolve(out.Item, 'state')) ?? null;
    },
    async readEvents(runId, after, limit) {
      const entries: Item[] = [];
      let startKey: Record<string, unknown> | undefined;
      collect: while (entries.length < limit) {
        metrics.queries += 1;
        const out = await doc.send(
          new QueryCommand({
            TableName,
            // Pages are keyed by their last seq: every page holding a seq > after sorts at or
            // above E#{after + 1}; C#, D#, K# and R sort outside the range.
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: {
              ':pk': runPk(runId),
              ':from': eventSk(after + 1),
              ':to': 'E#999999999999',
            },
            // Only the events: a page's domain state is read by getState.
            ProjectionExpression: '#events, #event, #data, data_blob',
            ExpressionAttributeNames: { '#events': 'events', '#event': 'event', '#data': 'data' },
            ConsistentRead: true,
            // Limit counts pages; each page in range holds at least one wanted event.
            Limit: limit - entries.length,
            ExclusiveStartKey: startKey,
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        countCapacity(out.ConsumedCapacity);
        for (const item of out.Items ?? []) {
          for (const entry of entriesOf(item)) {
            const seq = Number(entry.seq);
            if (seq <= after) continue;
            // A Query is read-committed, not a snapshot: it may see part of a commit still
            // landing. Stop before the first gap; the next read (after = last seq) gets the rest.
            if (seq !== after + entries.length + 1) break collect;
            entries.push(entry);
            if (entries.length >= limit) break collect;
          }
        }
        startKey = out.LastEvaluatedKey;
        if (startKey === undefined) break;
      }
      return Promise.all(entries.map((entry) => decodeEntry(entry)));
    },
    async getCheckpoint(runId, n) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({ TableName, Key: { pk: runPk(runId), sk: `C#${n}` }, ConsistentRead: true }),
      );
      return out.Item === undefined ? null : checkpointOf(out.Item);
    },
    async listCheckpoints(runId) {
      metrics.queries += 1;
      const out = await doc.send(
        new QueryCommand({
          TableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :c)',
          ExpressionAttributeValues: { ':pk': runPk(runId), ':c': 'C#' },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? []).map((i) => checkpointOf(i)).sort((a, b) => a.n - b.n);
    },
    async findBySubject(subject) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({ TableName, Key: { pk: subjectKey(subject), sk: 'S' }, ConsistentRead: true }),
      );
      return (out.Item?.run_id as string | undefined) ?? null;
    },
    async findByCreateKey(principalKey, key) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({
          TableName,
          Key: { pk: createKeyPk(principalKey, key), sk: 'K' },
          ConsistentRead: true,
        }),
      );
      return (out.Item?.run_id as string | undefined) ?? null;
    },
    async listChildren(parentRunId) {
      const ids: string[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        metrics.queries += 1;
        const out = await doc.send(
          new QueryCommand({
            TableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :ch)',
            ExpressionAttributeValues: { ':pk': runPk(parentRunId), ':ch': 'CH#' },
            ProjectionExpression: 'run_id',
            ConsistentRead: true,
            ...(start !== undefined ? { ExclusiveStartKey: start } : {}),
          }),
        );
        for (const item of out.Items ?? []) ids.push(item.run_id as string);
        start = out.LastEvaluatedKey;
      } while (start !== undefined);
      return ids;
    },
    async findByResumeKey(resumeKey) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({ TableName, Key: { pk: resumeKeyPk(resumeKey), sk: 'K' }, ConsistentRead: true }),
      );
      if (out.Item === undefined) return null;
      return { run_id: out.Item.run_id as string, op_id: out.Item.op_id as string };
    },
    async sweepCandidates(shard, now, limit) {
      if (shard < 0 || shard >= SWEEP_SHARDS) throw new RangeError(`shard must be in [0, ${SWEEP_SHARDS})`);
      metrics.queries += 1;
      const out = await doc.send(
        new QueryCommand({
          TableName,
          IndexName: 'sweep',
          KeyConditionExpression: '#s = :s AND #d <= :now',
          ExpressionAttributeNames: { '#s': ATTR.sweepShard, '#d': ATTR.sweepDue },
          ExpressionAttributeValues: { ':s': String(shard), ':now': now },
          Limit: limit,
        }),
      );
      return (out.Items ?? []).map((i) => String(i.pk).slice(4));
    },
    async listByStatus(status, limit, cursor) {
      // One shard per page keeps the cursor simple: cursor = `${shard}|${lastKey json}`.
      const [shardText, keyText] = cursor ? cursor.split('|', 2) : ['0', ''];
      let shard = Number(shardText);
      if (
        !Number.isInteger(shard) ||
        shard < 0 ||
        shard >= 8 ||
        (cursor !== undefined && !cursor.includes('|'))
      ) {
        throw new SyntaxError('not a cursor this store issued');
      }
      let startKey = keyText
        ? (JSON.parse(Buffer.from(keyText, 'base64url').toString()) as Record<string, unknown>)
        : undefined;
      const runIds: string[] = [];
      while (shard < 8 && runIds.length < limit) {
        metrics.queries += 1;
        const out = await doc.send(
          new QueryCommand({
            TableName,
            IndexName: 'by_status',
            KeyConditionExpression: '#s = :s',
            ExpressionAttributeNames: { '#s': ATTR.statusShard },
            ExpressionAttributeValues: { ':s': `${status}#${shard}` },
            ScanIndexForward: false,
            Limit: limit - runIds.length,
            ExclusiveStartKey: startKey,
          }),
        );
        runIds.push(...(out.Items ?? []).map((i) => String(i.pk).slice(4)));
        if (out.LastEvaluatedKey !== undefined) {
          startKey = out.LastEvaluatedKey;
          if (runIds.length >= limit) {
            return {
              run_ids: runIds,
              cursor: `${shard}|${Buffer.from(JSON.stringify(startKey)).toString('base64url')}`,
            };
          }
        } else {
          shard += 1;
          startKey = undefined;
        }
      }
      return shard < 8 ? { run_ids: runIds, cursor: `${shard}|` } : { run_ids: runIds };
    },
    async commit(commit) {
      const nextVersion = commit.expectedVersion === null ? 1 : commit.expectedVersion + 1;
      const { items, record, ackIndex } = await buildItems(commit, nextVersion);
      for (let attempt = 1; ; attempt += 1) {
        try {
          metrics.transactions += 1;
          const out = await doc.send(
            new TransactWriteCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }),
          );
          countCapacity(out.ConsumedCapacity, 'write');
          return record;
        } catch (err) {
          let rejected: CommitRejected;
          if (err instanceof TransactionCanceledException) rejected = classify(err, commit, ackIndex);
          else if (err instanceof ConditionalCheckFailedException)
            rejected = new CommitRejected('stale_version', err.message, null, { cause: err });
          else if (isThrottle(err))
            rejected = new CommitRejected('throttled', 'DynamoDB throttled the commit', null, { cause: err });
          else throw err;
          const retryable = rejected.reason === 'transaction_conflict' || rejected.reason === 'throttled';
          if (!retryable || attempt >= maxAttempts) throw rejected;
          metrics.transactionRetries += 1;
          await sleep(Math.min(1_000, 20 * 2 ** attempt) * (0.5 + Math.random() / 2));
        }
      }
    },
  };
}

function isEndingEvent(e: RunEvent): boolean {
  return e.kind === 'run_completed' || e.kind === 'run_failed' || e.kind === 'stopped';
}

function isThrottle(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name ?? '';
  return (
    name === 'ThrottlingException' ||
    name === 'ProvisionedThroughputExceededException' ||
    name === 'RequestLimitExceeded'
  );
}

/** A stored value kept as JSON text (or, in older items, as a map). */
function fromJsonText(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

/** A checkpoint item: `checkpoint_json` (text), or `checkpoint` (a map, older items). */
function checkpointOf(item: Record<string, unknown>): CheckpointItem {
  return fromJsonText(item.checkpoint_json ?? item.checkpoint) as CheckpointItem;
}

/** ALL_OLD comes back in DynamoDB's wire format on the raw exception. */
function unmarshallRecord(item: Record<string, AttributeValue> | undefined): RunRecord | null {
  if (item === undefined) return null;
  const parsed = RunRecord.safeParse(fromJsonText(unmarshall(item).record));
  return parsed.success ? parsed.data : null;
}
