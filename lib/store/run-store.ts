/**
 * RunStore on one DynamoDB table: strongly consistent reads of the run record, its events, its
 * domain state and its control acks, and ONE commit function that builds every
 * TransactWriteItems. DESIGN sections 4 and 5; seed agent-runs, "Storage and cluster behaviour".
 *
 * Items (pk / sk):
 *   RUN#{id} / R            the run record (closed schema, parsed before every write)
 *   RUN#{id} / E#{seq:12}   one event (data inline, or a blob ref above INLINE_LIMIT bytes)
 *   RUN#{id} / D#{rev}      write-once domain state (canonical JSON, or a blob ref)
 *   RUN#{id} / C#{n}        checkpoint
 *   RUN#{id} / K#{control}  control ack {digest, ack, seq}
 *   RUN#{id} / O#{op_id}    operation record {kind, attempt, flags, outcome}
 *   SUBJ#{sha256} / S       the subject's live run
 *   CKEY#{sha256} / K       create key → run
 *   RKEY#{sha256} / K       resume key → run, op
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
import {
  type ControlAck,
  type RunEvent,
  RunEvent as RunEventSchema,
  RunRecord,
  type Subject,
} from '../contracts/index.ts';
import type { BlobRef, BlobStore } from '../blobs/blob-store.ts';
import { canonicalJson } from '../core/canonical.ts';
import type { Fence } from '../core/run-machine.ts';
import { ATTR, principalShardKey, statusShardKey, SWEEP_SHARDS, sweepShardKey } from './table.ts';

/** Payloads above this many bytes (UTF-8 JSON) go to the blob store. */
export const INLINE_LIMIT = 32 * 1024;
/** DynamoDB's limit on actions per TransactWriteItems. */
export const MAX_TRANSACT_ITEMS = 100;

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

export interface OperationItem {
  op_id: string;
  kind: string;
  attempt: number;
  replay_safe: boolean;
  mutating: boolean;
  /** null while in flight. */
  outcome: string | null;
  at: number;
}

export interface CheckpointItem {
  n: number;
  reason: string;
  /** What core owns, copied; the domain state and transcript are referenced. */
  core: Record<string, unknown>;
  state_rev: number;
  transcript_cutoff_seq: number;
  at: number;
}

/** Everything one commit writes. */
export interface Commit {
  /** The record as it will be stored (its `version` is set by the commit). */
  record: RunRecord;
  /** The version read; null creates the run. */
  expectedVersion: number | null;
  /** The committer's fence, when it holds (or held) the lease. */
  fence?: Fence;
  events: RunEvent[];
  state?: { rev: number; value: unknown };
  checkpoints?: CheckpointItem[];
  controlAck?: ControlAckItem;
  operations?: OperationItem[];
  /** Create only: the create key to claim. */
  createKey?: { principalKey: string; key: string };
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
  getState(runId: string, rev: number): Promise<unknown>;
  /** Events with seq > after, up to limit, in order, strongly consistent: never a gap. */
  readEvents(runId: string, after: number, limit: number): Promise<RunEvent[]>;
  getCheckpoint(runId: string, n: number): Promise<CheckpointItem | null>;
  listCheckpoints(runId: string): Promise<CheckpointItem[]>;
  getOperation(runId: string, opId: string): Promise<OperationItem | null>;
  findBySubject(subject: Subject): Promise<string | null>;
  findByCreateKey(principalKey: string, key: string): Promise<string | null>;
  findByResumeKey(resumeKey: string): Promise<{ run_id: string; op_id: string } | null>;
  /** Runs whose sweep_due ≤ now in one shard (GSI, eventually consistent: re-read before acting). */
  sweepCandidates(shard: number, now: number, limit: number): Promise<string[]>;
  /** Runs by status (newest first), paged by an opaque cursor. */
  listByStatus(
    status: string,
    limit: number,
    cursor?: string,
  ): Promise<{ run_ids: string[]; cursor?: string }>;
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
    record.inbox.length > 0
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
    const parsed = RunRecord.safeParse(item.record);
    if (!parsed.success)
      throw new Error(`stored run record does not parse: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  async function inlineOrBlob(
    value: unknown,
    mediaType = 'application/json',
  ): Promise<{ inline?: unknown; blob?: BlobRef }> {
    const text = JSON.stringify(value);
    if (Buffer.byteLength(text) <= INLINE_LIMIT) return { inline: value };
    return { blob: await blobs.put(text, mediaType) };
  }

  async function resolve(item: Item, field: string): Promise<unknown> {
    if (item[field] !== undefined) return item[field];
    const ref = item[`${field}_blob`] as BlobRef | undefined;
    if (ref === undefined) return undefined;
    return JSON.parse(await blobs.get(ref));
  }

  async function decodeEvent(item: Item): Promise<RunEvent> {
    const data = await resolve(item, 'data');
    const parsed = RunEventSchema.safeParse({ ...(item.event as Item), data });
    if (!parsed.success) throw new Error(`stored event does not parse: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  function recordItem(record: RunRecord): Item {
    const item: Item = {
      pk: runPk(record.run_id),
      sk: 'R',
      record,
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
  function recordUpdate(
    commit: Commit,
    nextVersion: number,
  ): NonNullable<TransactWriteCommandInput['TransactItems']>[number] {
    const stored = recordItem({ ...commit.record, version: nextVersion } as RunRecord);
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

  async function buildItems(
    commit: Commit,
    nextVersion: number,
  ): Promise<NonNullable<TransactWriteCommandInput['TransactItems']>> {
    const record = { ...commit.record, version: nextVersion } as RunRecord;
    const parsed = RunRecord.safeParse(record);
    if (!parsed.success)
      throw new Error(`refusing to store an illegal run record: ${parsed.error.issues[0]?.message}`);
    const pk = runPk(record.run_id);
    const items: NonNullable<TransactWriteCommandInput['TransactItems']> = [];
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
    } else {
      items.push(recordUpdate(commit, nextVersion));
    }
    for (const event of commit.events) {
      const { data, ...head } = event;
      const body = await inlineOrBlob(data);
      items.push({
        Put: {
          TableName,
          Item: {
            pk,
            sk: eventSk(event.seq),
            event: head,
            ...(body.blob ? { data_blob: body.blob } : { data: body.inline }),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
      // Index items derived from the events they belong to.
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
    if (commit.state !== undefined) {
      const body = await inlineOrBlob(commit.state.value);
      items.push({
        Put: {
          TableName,
          Item: {
            pk,
            sk: `D#${commit.state.rev}`,
            ...(body.blob ? { state_blob: body.blob } : { state: body.inline ?? null }),
          },
        },
      });
    }
    for (const cp of commit.checkpoints ?? []) {
      items.push({
        Put: {
          TableName,
          Item: { pk, sk: `C#${cp.n}`, checkpoint: cp },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
    }
    if (commit.controlAck !== undefined) {
      items.push({
        Put: {
          TableName,
          Item: { pk, sk: `K#${commit.controlAck.control_id}`, ...commit.controlAck },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      });
    }
    for (const op of commit.operations ?? []) {
      items.push({ Put: { TableName, Item: { pk, sk: `O#${op.op_id}`, ...op } } });
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
    return items;
  }

  function classify(err: TransactionCanceledException, commit: Commit): CommitRejected {
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
    const ackIndex = commit.controlAck !== undefined ? findAckIndex(commit, reasons.length) : -1;
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
    async getState(runId, rev) {
      if (rev === 0) return null;
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({
          TableName,
          Key: { pk: runPk(runId), sk: `D#${rev}` },
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      countCapacity(out.ConsumedCapacity);
      if (out.Item === undefined) throw new Error(`domain state ${rev} of run ${runId} is missing`);
      return (await resolve(out.Item, 'state')) ?? null;
    },
    async readEvents(runId, after, limit) {
      const events: RunEvent[] = [];
      let startKey: Record<string, unknown> | undefined;
      do {
        metrics.queries += 1;
        const out = await doc.send(
          new QueryCommand({
            TableName,
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: {
              ':pk': runPk(runId),
              ':from': eventSk(after + 1),
              ':to': 'E#999999999999',
            },
            ConsistentRead: true,
            Limit: limit - events.length,
            ExclusiveStartKey: startKey,
            ReturnConsumedCapacity: 'TOTAL',
          }),
        );
        countCapacity(out.ConsumedCapacity);
        for (const item of out.Items ?? []) {
          const event = await decodeEvent(item);
          // A Query is read-committed, not a snapshot: it may see part of a commit still landing.
          // Stop before the first gap; the next page (after = last seq returned) gets the rest.
          if (event.seq !== after + events.length + 1) return events;
          events.push(event);
        }
        startKey = out.LastEvaluatedKey;
      } while (startKey !== undefined && events.length < limit);
      return events;
    },
    async getCheckpoint(runId, n) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({ TableName, Key: { pk: runPk(runId), sk: `C#${n}` }, ConsistentRead: true }),
      );
      return (out.Item?.checkpoint as CheckpointItem | undefined) ?? null;
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
      return (out.Items ?? []).map((i) => i.checkpoint as CheckpointItem).sort((a, b) => a.n - b.n);
    },
    async getOperation(runId, opId) {
      metrics.reads += 1;
      const out = await doc.send(
        new GetCommand({ TableName, Key: { pk: runPk(runId), sk: `O#${opId}` }, ConsistentRead: true }),
      );
      if (out.Item === undefined) return null;
      const { pk: _pk, sk: _sk, ...op } = out.Item;
      return op as OperationItem;
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
      const items = await buildItems(commit, nextVersion);
      for (let attempt = 1; ; attempt += 1) {
        try {
          metrics.transactions += 1;
          const out = await doc.send(
            new TransactWriteCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }),
          );
          countCapacity(out.ConsumedCapacity, 'write');
          return { ...commit.record, version: nextVersion } as RunRecord;
        } catch (err) {
          let rejected: CommitRejected;
          if (err instanceof TransactionCanceledException) rejected = classify(err, commit);
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

function findAckIndex(commit: Commit, total: number): number {
  // The ack Put follows the record, events (+ their index items), state and checkpoints; it is
  // the only conditional Put among the trailing items, so search from the end of the fixed part.
  let index = 1;
  for (const e of commit.events) {
    index += 1;
    if (e.kind === 'request_opened' && e.data.kind === 'result') index += 1;
    if (e.kind === 'result_delivered') index += 1;
  }
  if (commit.state !== undefined) index += 1;
  index += commit.checkpoints?.length ?? 0;
  return index < total ? index : -1;
}

/** ALL_OLD comes back in DynamoDB's wire format on the raw exception. */
function unmarshallRecord(item: Record<string, AttributeValue> | undefined): RunRecord | null {
  if (item === undefined) return null;
  const parsed = RunRecord.safeParse(unmarshall(item).record);
  return parsed.success ? parsed.data : null;
}
