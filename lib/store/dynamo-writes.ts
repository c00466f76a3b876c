/**
 * The write side of the DynamoDB RunStore: a commit's plan (commit-plan.ts) rendered as
 * DynamoDB requests and executed, as two plain writes (the event page Put, then the record's
 * fenced UpdateItem) when commit-protocol.ts allows, else as one TransactWriteItems; refusals
 * classified by the role of the write that failed, one documented reaction per reason
 * (engine/ports.ts). docs/reference/storage.md; docs/architecture.md,
 * "The commit".
 *
 * Conditions are built from named parts (commit-plan.ts `Condition`): the record's update
 * carries `#version = :expected_version` and, for a lease holder, the fence (owner + epoch) in
 * its own ConditionExpression (never a separate ConditionCheck on the same item: DynamoDB
 * rejects that transaction), with ReturnValuesOnConditionCheckFailure ALL_OLD so that a refusal
 * explains itself.
 */
import { randomBytes } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type ConsumedCapacity,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  type PutCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { RunRecord } from '../contracts/index.ts';
import {
  CommitRejected,
  type PendingCharges,
  type RunStore,
  type StoreMetrics,
  StoreUnavailable,
} from '../engine/ports.ts';
import type { CommitPlan } from './commit-plan.ts';
import {
  type PlainCommit,
  type PlainCreate,
  pageTaken,
  plainCommitOf,
  plainCreateOf,
} from './commit-protocol.ts';
import { classifyRefusal } from './commit-refusal.ts';
import type { TailCache } from './event-tail.ts';
import { recordAndTailOf } from './item-codec.ts';
import type { Condition, Item, ItemKey, PlannedWrite } from './planned-write.ts';
import { ATTR } from './table.ts';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A condition as a ConditionExpression with its names and values. */
function renderCondition(condition: Condition): {
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
} {
  switch (condition.kind) {
    case 'absent':
      return { expression: 'attribute_not_exists(pk)' };
    case 'absent_or_held_by':
      return {
        expression: 'attribute_not_exists(pk) OR run_id = :rid',
        values: { ':rid': condition.run_id },
      };
    case 'resume_key_claim':
      return {
        expression:
          'attribute_not_exists(pk) OR (attribute_exists(run_id) AND (run_id = :rid OR principal_key = :pkey OR attribute_not_exists(principal_key) OR #ttl <= :now_s)) OR (attribute_not_exists(run_id) AND (attribute_not_exists(early_json) OR early_expires_at <= :now))',
        names: { '#ttl': ATTR.expiresAtTtl },
        values: {
          ':rid': condition.run_id,
          ':pkey': condition.principal_key,
          ':now': condition.now,
          ':now_s': Math.floor(condition.now / 1000),
        },
      };
    case 'early_held':
      return { expression: 'attribute_exists(early_json)' };
    case 'absent_or_early_expired':
      return {
        expression: 'attribute_not_exists(pk) OR early_expires_at <= :now',
        values: { ':now': condition.now },
      };
    case 'record_version': {
      // From named parts: the version read (no one committed since) AND, for a lease holder,
      // the fence (owner + epoch) in the same expression.
      const parts = ['#version = :expected_version'];
      const names: Record<string, string> = { '#version': 'version' };
      const values: Record<string, unknown> = { ':expected_version': condition.version };
      if (condition.fence !== undefined) {
        parts.push('#lease_owner_c = :fence_owner', '#epoch = :fence_epoch');
        names['#lease_owner_c'] = 'lease_owner';
        names['#epoch'] = 'epoch';
        values[':fence_owner'] = condition.fence.owner;
        values[':fence_epoch'] = condition.fence.epoch;
      }
      return { expression: parts.join(' AND '), names, values };
    }
    case 'page_open':
      return {
        expression: 'attribute_not_exists(pk) OR #commit_version < :commit_version',
        names: { '#commit_version': 'commit_version' },
        values: { ':commit_version': condition.commit_version },
      };
    case 'count_is':
      return condition.count === 0
        ? { expression: 'attribute_not_exists(pk)' }
        : {
            expression: '#count = :count',
            names: { '#count': 'count' },
            values: { ':count': condition.count },
          };
  }
}

/** A put's or delete's ExpressionAttributeNames, when its condition names any. */
const namesOf = (c: ReturnType<typeof renderCondition> | undefined) =>
  c?.names !== undefined ? { ExpressionAttributeNames: c.names } : {};

/** One planned write as a TransactWriteItems action. */
function toTransactItem(write: PlannedWrite, TableName: string): TransactItem {
  const c = write.condition === undefined ? undefined : renderCondition(write.condition);
  const condition =
    c === undefined
      ? {}
      : {
          ConditionExpression: c.expression,
          ...(c.values !== undefined ? { ExpressionAttributeValues: c.values } : {}),
          // A refused create names what was taken; a refused record update returns the record.
          ...(write.role !== 'page' ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
        };
  switch (write.op) {
    case 'put':
      return { Put: { TableName, Item: write.item, ...condition, ...namesOf(c) } };
    case 'delete':
      return { Delete: { TableName, Key: write.key, ...condition, ...namesOf(c) } };
    case 'update': {
      // SET every stored attribute, REMOVE the absent optional ones.
      const names: Record<string, string> = { ...(c?.names ?? {}) };
      const values: Record<string, unknown> = { ...(c?.values ?? {}) };
      const sets: string[] = [];
      for (const [k, v] of Object.entries(write.set)) {
        names[`#${k}`] = k;
        values[`:${k}`] = v;
        sets.push(`#${k} = :${k}`);
      }
      for (const k of write.remove) names[`#${k}`] = k;
      const remove = write.remove.length > 0 ? ` REMOVE ${write.remove.map((k) => `#${k}`).join(', ')}` : '';
      return {
        Update: {
          TableName,
          Key: write.key,
          UpdateExpression: `SET ${sets.join(', ')}${remove}`,
          ...(c !== undefined ? { ConditionExpression: c.expression } : {}),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      };
    }
  }
}

function isThrottle(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name ?? '';
  return (
    name === 'ThrottlingException' ||
    name === 'ProvisionedThroughputExceededException' ||
    name === 'RequestLimitExceeded'
  );
}

/** ALL_OLD comes back in DynamoDB's wire format on the raw exception. */
function oldRecordOf(io: DynamoIo, item: Record<string, AttributeValue> | undefined): RunRecord | null {
  if (item === undefined) return null;
  try {
    return seenRecord(io, unmarshall(item));
  } catch {
    return null;
  }
}

/** What the adapter's functions share: the client, the table, the blob store, the counters. */
export interface DynamoIo {
  doc: DynamoDBDocumentClient;
  table: string;
  blobs: BlobStore;
  maxAttempts: number;
  sleep: (ms: number) => Promise<void>;
  metrics: StoreMetrics;
  /** Read units of each run's partition not yet charged to the run. */
  reads: PendingCharges;
  afterPage?: (runId: string) => void | Promise<void>;
  /** Crash hook between a plain create's subject put and its record put (tests only). */
  afterClaim?: (runId: string) => void | Promise<void>;
  /** The store's clock (ms since the epoch): stamps and ages subject claims (commit-protocol.ts). */
  now: () => number;
  /** The inline tails this adapter has seen, by run and version (event-tail.ts). */
  tails: TailCache;
}

/**
 * The run record of a stored record item, its tail remembered in `io.tails` on the way (every
 * full read of a record item tells the tail of its version). Throws on a corrupt item.
 */
export function seenRecord(io: Pick<DynamoIo, 'tails'>, item: Item | undefined): RunRecord | null {
  const read = recordAndTailOf(item);
  if (read === null) return null;
  io.tails.set(read.record.run_id, read.record.version, read.tail);
  return read.record;
}

/**
 * Counts the capacity a request consumed in the store's metrics; a read of a run's partition
 * (`runId`) is also owed by the run, charged in its next commit (metering.ts).
 */
export function countCapacity(
  io: DynamoIo,
  c: ConsumedCapacity | ConsumedCapacity[] | undefined,
  kind: 'read' | 'write' = 'read',
  runId?: string,
): void {
  let read = 0;
  for (const x of Array.isArray(c) ? c : c ? [c] : []) {
    if (x.ReadCapacityUnits === undefined && x.WriteCapacityUnits === undefined) {
      // At TOTAL, DynamoDB may report only CapacityUnits: attribute them by call kind.
      if (kind === 'read') read += x.CapacityUnits ?? 0;
      else io.metrics.writeCapacity += x.CapacityUnits ?? 0;
      continue;
    }
    read += x.ReadCapacityUnits ?? 0;
    io.metrics.writeCapacity += x.WriteCapacityUnits ?? 0;
  }
  io.metrics.readCapacity += read;
  if (runId !== undefined && read > 0) io.reads.add(runId, { dynamodb_read_units: read });
}

/** A conditional Put or Update refused, with the item as it was (ALL_OLD), unmarshalled. */
function refusedItem(err: unknown): Item | null {
  if (!(err instanceof ConditionalCheckFailedException)) return null;
  return err.Item === undefined ? {} : unmarshall(err.Item);
}

/**
 * A plain commit (commit-protocol.ts): the page Put, then the record's fenced UpdateItem, each
 * stamped with the plan's `commit_token` (one of its own when the plan has none) so that a write
 * retried after it landed (its answer lost) is known as this plan's own, not as someone else's.
 * 'page_taken' when the page's condition failed. A refused record update deletes the attempt's
 * page (an uncommitted page in the way costs the next commit a version step) and is classified
 * as a transaction's would be, with the record DynamoDB returned (ALL_OLD).
 */
async function executePlain(
  io: DynamoIo,
  plan: CommitPlan,
  commit: Parameters<RunStore['commit']>[0],
  plain: PlainCommit,
): Promise<'committed' | 'page_taken'> {
  io.metrics.transactions += 1;
  const token =
    typeof plain.record.set.commit_token === 'string'
      ? plain.record.set.commit_token
      : randomBytes(8).toString('hex');
  const page =
    plain.page === undefined
      ? undefined
      : { ...plain.page, item: { ...plain.page.item, commit_token: token } };
  if (page !== undefined) {
    const put = toTransactItem(page, io.table).Put as PutCommandInput;
    try {
      io.metrics.writeRequests += 1;
      const out = await io.doc.send(
        new PutCommand({
          ...put,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ReturnConsumedCapacity: 'TOTAL',
        }),
      );
      countCapacity(io, out.ConsumedCapacity, 'write');
    } catch (err) {
      const old = refusedItem(err);
      if (old === null) throw err;
      if (old.commit_token !== token) return 'page_taken';
    }
    await io.afterPage?.(commit.record.run_id);
  }
  const record = { ...plain.record, set: { ...plain.record.set, commit_token: token } };
  try {
    io.metrics.writeRequests += 1;
    const out = await io.doc.send(
      new UpdateCommand({
        ...(toTransactItem(record, io.table).Update as UpdateCommandInput),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    countCapacity(io, out.ConsumedCapacity, 'write');
    return 'committed';
  } catch (err) {
    const old = refusedItem(err);
    if (old === null) throw err;
    if (old.commit_token === token) return 'committed';
    if (page !== undefined) await dropPage(io, page.item, token);
    const codes = plan.writes.map((w) => (w === plain.record ? 'ConditionalCheckFailed' : 'None'));
    throw classifyRefusal(commit, plan, codes, [], seenRecord(io, old), err);
  }
}

/**
 * A plain create (commit-protocol.ts plainCreateOf): the subject put, then the record put.
 * Retried after a lost answer, each write knows its own landing: the subject names this run,
 * the record carries this plan's commit_token. A record put refused by a tombstone means
 * another create gave this one up and took the subject: subject_taken (the engine reads
 * again); by another run's record (the same run id), the subject is given back: stale_version.
 */
async function executeCreate(
  io: DynamoIo,
  plan: CommitPlan,
  commit: Parameters<RunStore['commit']>[0],
  create: PlainCreate,
): Promise<'committed'> {
  io.metrics.transactions += 1;
  const runId = commit.record.run_id;
  const subject = { ...create.subject, item: { ...create.subject.item, claimed_at: io.now() } };
  const holder = await writeOrOld(io, subject);
  if (holder !== null && holder.run_id !== runId) {
    const codes = plan.writes.map((w) => (w === create.subject ? 'ConditionalCheckFailed' : 'None'));
    throw classifyRefusal(commit, plan, codes, [], null);
  }
  await io.afterClaim?.(runId);
  const old = await writeOrOld(io, create.record);
  if (old === null || old.commit_token === create.record.item.commit_token) return 'committed';
  if (recordAndTailOf(old) === null)
    throw new CommitRejected('subject_taken', 'the create was given up: another create took its subject');
  // Another run has this run id: give the subject back, write nothing of this create.
  await writeOne(io, {
    op: 'delete',
    role: 'subject_release',
    key: { pk: create.subject.item.pk, sk: create.subject.item.sk },
    condition: { kind: 'absent_or_held_by', run_id: runId },
  });
  throw new CommitRejected('stale_version', 'the run already exists');
}

/**
 * Deletes a refused attempt's page while it is still that attempt's (its commit_token). Best
 * effort: a page left behind is uncommitted and never read; the next commit steps past it.
 */
async function dropPage(io: DynamoIo, page: Item & ItemKey, token: string): Promise<void> {
  try {
    io.metrics.writeRequests += 1;
    const out = await io.doc.send(
      new DeleteCommand({
        TableName: io.table,
        Key: { pk: page.pk, sk: page.sk },
        ConditionExpression: 'commit_token = :token',
        ExpressionAttributeValues: { ':token': token },
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    countCapacity(io, out.ConsumedCapacity, 'write');
  } catch (err) {
    // Someone stepped past it already, or the delete failed: either way the page is invisible.
    if (!(err instanceof ConditionalCheckFailedException) && !isThrottle(err)) throw err;
  }
}

/**
 * Executes one plan: as plain writes when plainCommitOf allows, else as one TransactWriteItems;
 * retried on conflicts and throttling. 'page_taken' when only an event page's condition failed
 * (commit-protocol.ts decides what then); throws CommitRejected for every other refusal, and
 * StoreUnavailable for throttling that outlasted the retries.
 */
export async function execute(
  io: DynamoIo,
  plan: CommitPlan,
  commit: Parameters<RunStore['commit']>[0],
): Promise<'committed' | 'page_taken'> {
  const plain = plainCommitOf(plan);
  const create = plainCreateOf(plan);
  const items = plan.writes.map((w) => toTransactItem(w, io.table));
  for (let attempt = 1; ; attempt += 1) {
    try {
      if (plain !== null) return await executePlain(io, plan, commit, plain);
      if (create !== null) return await executeCreate(io, plan, commit, create);
      io.metrics.transactions += 1;
      io.metrics.writeRequests += 1;
      const out = await io.doc.send(
        new TransactWriteCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }),
      );
      countCapacity(io, out.ConsumedCapacity, 'write');
      return 'committed';
    } catch (err) {
      let rejected: CommitRejected | StoreUnavailable;
      if (err instanceof CommitRejected || err instanceof StoreUnavailable) rejected = err;
      else if (err instanceof TransactionCanceledException) {
        const reasons = err.CancellationReasons ?? [];
        const codes = reasons.map((r) => r.Code ?? 'None');
        if (pageTaken(plan, codes)) return 'page_taken';
        const recordIndex = plan.writes.findIndex((w) => w.role === 'record');
        rejected = classifyRefusal(
          commit,
          plan,
          codes,
          reasons.map((r) => r.Message ?? ''),
          oldRecordOf(io, reasons[recordIndex]?.Item),
          err,
        );
      } else if (err instanceof ConditionalCheckFailedException)
        rejected = new CommitRejected('stale_version', err.message, null, { cause: err });
      else if (err instanceof TransactionConflictException)
        // A plain write to an item a transaction is writing.
        rejected = new CommitRejected('transaction_conflict', err.message, null, { cause: err });
      else if (isThrottle(err))
        rejected = new StoreUnavailable('DynamoDB throttled the commit', { cause: err });
      else throw err;
      // A conflict or throttling is retried with backoff; exhausted, it is thrown (retryable).
      if (!rejected.retryable || attempt >= io.maxAttempts) throw rejected;
      io.metrics.transactionRetries += 1;
      await io.sleep(Math.min(1_000, 20 * 2 ** attempt) * (0.5 + Math.random() / 2));
    }
  }
}

/**
 * One planned put or delete on its own (not a transaction): true when written, false when its
 * condition did not hold. Other errors are thrown.
 */
export async function writeOne(io: DynamoIo, write: PlannedWrite): Promise<boolean> {
  return (await writeOrOld(io, write)) === null;
}

/**
 * One planned put or delete on its own: null when written, the item in its way (ALL_OLD) when
 * its condition did not hold. Other errors are thrown.
 */
async function writeOrOld(io: DynamoIo, write: PlannedWrite): Promise<Item | null> {
  const item = toTransactItem(write, io.table);
  try {
    io.metrics.writeRequests += 1;
    const out =
      item.Put !== undefined
        ? await io.doc.send(
            new PutCommand({ ...(item.Put as PutCommandInput), ReturnConsumedCapacity: 'TOTAL' }),
          )
        : item.Delete !== undefined
          ? await io.doc.send(new DeleteCommand({ ...item.Delete, ReturnConsumedCapacity: 'TOTAL' }))
          : undefined;
    if (out === undefined) throw new Error(`writeOne takes a put or a delete, not a ${write.op}`);
    countCapacity(io, out.ConsumedCapacity, 'write');
    return null;
  } catch (err) {
    const old = refusedItem(err);
    if (old === null) throw err;
    return old;
  }
}
