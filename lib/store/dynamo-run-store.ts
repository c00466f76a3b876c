/**
 * RunStore on one DynamoDB table: strongly consistent reads of the run record, its events, its
 * domain state and its control acks, and ONE commit function that executes a commit's plan
 * (commit-plan.ts) as one TransactWriteItems. DESIGN sections 4 and 5; seed agent-runs,
 * "Storage and cluster behaviour". The item layout is documented in commit-plan.ts.
 *
 * Conditions are built from named parts (commit-plan.ts `Condition`): the record's update
 * carries `#version = :expected_version` and, for a lease holder, the fence (owner + epoch) in
 * its own ConditionExpression (never a separate ConditionCheck on the same item: DynamoDB
 * rejects that transaction), with ReturnValuesOnConditionCheckFailure ALL_OLD so that a refusal
 * explains itself. A cancelled transaction is classified by the role of the write that failed:
 * one documented reaction per reason (commit-errors.ts).
 */
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
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { BlobStore } from '../blobs/blob-store.ts';
import { type RunEvent, type RunRecord, RunStatus } from '../contracts/index.ts';
import { sumCharges } from '../core/prices.ts';
import { CommitRejected } from '../engine/commit-errors.ts';
import { noStoreMetrics, type RunStatusView, type RunStore, type StoreMetrics } from '../engine/ports.ts';
import { PendingCharges } from '../engine/usage-meter.ts';
import {
  ackSk,
  type CommitPlan,
  type Condition,
  checkpointSk,
  classifyRefusal,
  createKeyPk,
  eventSk,
  type Item,
  LAST_EVENT_SK,
  type PlannedWrite,
  planEarlyResult,
  quotaPk,
  quotaWindowSk,
  resumeKeyPk,
  runPk,
  stateSk,
  storeCommitBodies,
  subjectKey,
} from './commit-plan.ts';
import {
  checkpointOf,
  controlAckOf,
  createKeyItemOf,
  eventsOf,
  quotaUsageOf,
  recordOf,
  resumeKeyEntryOf,
  stateOf,
  takeContiguous,
  waitOf,
} from './item-codec.ts';
import { compareListing, type ListingPosition, listingCursor, listingPosition } from './listing-order.ts';
import { countingGets, planMetered } from './metering.ts';
import { ATTR, LISTING_SHARDS, SWEEP_SHARDS } from './table.ts';

export interface DynamoRunStoreOptions {
  doc: DynamoDBDocumentClient;
  tableName: string;
  blobs: BlobStore;
  /** Attempts for a transaction that meets a conflict or throttling (default 5). */
  maxAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

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
    case 'no_live_early':
      return {
        expression: 'attribute_not_exists(early_json) OR early_expires_at <= :now',
        values: { ':now': condition.now },
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
function oldRecordOf(item: Record<string, AttributeValue> | undefined): RunRecord | null {
  if (item === undefined) return null;
  try {
    return recordOf(unmarshall(item));
  } catch {
    return null;
  }
}

/** What the adapter's functions share: the client, the table, the blob store, the counters. */
interface DynamoIo {
  doc: DynamoDBDocumentClient;
  table: string;
  blobs: BlobStore;
  maxAttempts: number;
  sleep: (ms: number) => Promise<void>;
  metrics: StoreMetrics;
  /** Read units of each run's partition not yet charged to the run. */
  reads: PendingCharges;
}

/** The run a partition key belongs to (its reads are charged to it), or undefined. */
const runOfPk = (pk: string) => (pk.startsWith('RUN#') ? pk.slice(4) : undefined);

function countCapacity(
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
  // Reads of a run's partition are charged to the run in its next commit (metering.ts).
  if (runId !== undefined && read > 0) io.reads.add(runId, { dynamodb_read_units: read });
}

async function getItem(io: DynamoIo, pk: string, sk: string, projection?: string): Promise<Item | undefined> {
  io.metrics.reads += 1;
  const out = await io.doc.send(
    new GetCommand({
      TableName: io.table,
      Key: { pk, sk },
      ConsistentRead: true,
      ...(projection !== undefined ? { ProjectionExpression: projection } : {}),
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  countCapacity(io, out.ConsumedCapacity, 'read', runOfPk(pk));
  return out.Item;
}

/** The record item's status attribute, eventually consistent (half the read units of getRun). */
async function getStatus(io: DynamoIo, runId: string): Promise<RunStatusView | null> {
  io.metrics.reads += 1;
  const out = await io.doc.send(
    new GetCommand({
      TableName: io.table,
      Key: { pk: runPk(runId), sk: 'R' },
      ConsistentRead: false,
      ProjectionExpression: '#s, #i',
      ExpressionAttributeNames: { '#s': 'status', '#i': 'interrupt_requested' },
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  countCapacity(io, out.ConsumedCapacity, 'read', runId);
  const parsed = RunStatus.safeParse(out.Item?.status);
  if (!parsed.success) return null;
  const interrupt = out.Item?.interrupt_requested;
  return { status: parsed.data, interrupt_requested: typeof interrupt === 'string' ? interrupt : null };
}

/** Every item of one partition whose sort key begins with `prefix`, strongly consistent. */
async function queryPrefix(io: DynamoIo, pk: string, prefix: string, projection?: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    io.metrics.queries += 1;
    const out = await io.doc.send(
      new QueryCommand({
        TableName: io.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        ...(projection !== undefined ? { ProjectionExpression: projection } : {}),
        ConsistentRead: true,
        ...(start !== undefined ? { ExclusiveStartKey: start } : {}),
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    countCapacity(io, out.ConsumedCapacity, 'read', runOfPk(pk));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

async function execute(
  io: DynamoIo,
  plan: CommitPlan,
  commit: Parameters<RunStore['commit']>[0],
): Promise<void> {
  const items = plan.writes.map((w) => toTransactItem(w, io.table));
  for (let attempt = 1; ; attempt += 1) {
    try {
      io.metrics.transactions += 1;
      const out = await io.doc.send(
        new TransactWriteCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' }),
      );
      countCapacity(io, out.ConsumedCapacity, 'write');
      return;
    } catch (err) {
      let rejected: CommitRejected;
      if (err instanceof TransactionCanceledException) {
        const reasons = err.CancellationReasons ?? [];
        const recordIndex = plan.writes.findIndex((w) => w.role === 'record');
        rejected = classifyRefusal(
          commit,
          plan,
          reasons.map((r) => r.Code ?? 'None'),
          reasons.map((r) => r.Message ?? ''),
          oldRecordOf(reasons[recordIndex]?.Item),
          err,
        );
      } else if (err instanceof ConditionalCheckFailedException)
        rejected = new CommitRejected('stale_version', err.message, null, { cause: err });
      else if (isThrottle(err))
        rejected = new CommitRejected('throttled', 'DynamoDB throttled the commit', null, { cause: err });
      else throw err;
      const retryable = rejected.reason === 'transaction_conflict' || rejected.reason === 'throttled';
      if (!retryable || attempt >= io.maxAttempts) throw rejected;
      io.metrics.transactionRetries += 1;
      await io.sleep(Math.min(1_000, 20 * 2 ** attempt) * (0.5 + Math.random() / 2));
    }
  }
}

async function getRunAndAck(
  io: DynamoIo,
  runId: string,
  controlId: string,
): ReturnType<RunStore['getRunAndAck']> {
  io.metrics.reads += 1;
  const out = await io.doc.send(
    new BatchGetCommand({
      RequestItems: {
        [io.table]: {
          Keys: [
            { pk: runPk(runId), sk: 'R' },
            { pk: runPk(runId), sk: ackSk(controlId) },
          ],
          ConsistentRead: true,
        },
      },
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  countCapacity(io, out.ConsumedCapacity, 'read', runId);
  const items = out.Responses?.[io.table] ?? [];
  const ack = items.find((i) => i.sk === ackSk(controlId));
  return {
    record: recordOf(items.find((i) => i.sk === 'R')),
    ack: ack === undefined ? null : controlAckOf(ack),
  };
}

async function readEvents(io: DynamoIo, runId: string, after: number, limit: number): Promise<RunEvent[]> {
  const entries: Item[] = [];
  let startKey: Record<string, unknown> | undefined;
  for (;;) {
    io.metrics.queries += 1;
    const out = await io.doc.send(
      new QueryCommand({
        TableName: io.table,
        // Pages are keyed by their last seq: every page holding a seq > after sorts at or
        // above E#{after + 1}; C#, D#, K# and R sort outside the range.
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: {
          ':pk': runPk(runId),
          ':from': eventSk(after + 1),
          ':to': LAST_EVENT_SK,
        },
        // Only the events: a page's domain state is read by getState.
        ProjectionExpression: '#events',
        ExpressionAttributeNames: { '#events': 'events' },
        ConsistentRead: true,
        // Limit counts pages; each page in range holds at least one wanted event.
        Limit: limit - entries.length,
        ExclusiveStartKey: startKey,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    countCapacity(io, out.ConsumedCapacity, 'read', runId);
    if (!takeContiguous(out.Items ?? [], after, limit, entries)) break;
    startKey = out.LastEvaluatedKey;
    if (startKey === undefined) break;
  }
  const blobs = countingGets(io.blobs, () => io.reads.add(runId, { s3_get_requests: 1 }));
  return eventsOf(entries, blobs, (linked, from, count) => readEvents(io, linked, from, count));
}

async function sweepCandidates(io: DynamoIo, shard: number, now: number, limit: number): Promise<string[]> {
  if (shard < 0 || shard >= SWEEP_SHARDS) throw new RangeError(`shard must be in [0, ${SWEEP_SHARDS})`);
  io.metrics.queries += 1;
  const out = await io.doc.send(
    new QueryCommand({
      TableName: io.table,
      IndexName: 'sweep',
      KeyConditionExpression: '#s = :s AND #d <= :now',
      ExpressionAttributeNames: { '#s': ATTR.sweepShard, '#d': ATTR.sweepDue },
      ExpressionAttributeValues: { ':s': String(shard), ':now': now },
      Limit: limit,
    }),
  );
  return (out.Items ?? []).map((i) => String(i.pk).slice(4));
}

async function listByStatus(
  io: DynamoIo,
  status: string,
  limit: number,
  cursor?: string,
): ReturnType<RunStore['listByStatus']> {
  const position = cursor === undefined ? undefined : listingPosition(cursor);
  // Each shard is newest first; a page merges the first limit + 1 of every shard past the cursor.
  const shards = await Promise.all(
    Array.from({ length: LISTING_SHARDS }, (_, shard) =>
      listShard(io, `${status}#${shard}`, limit + 1, position),
    ),
  );
  const merged = shards.flat().sort(compareListing);
  const page = merged.slice(0, limit);
  const last = page.at(-1);
  const runIds = page.map((p) => p.run_id);
  if (merged.length <= limit || last === undefined) return { run_ids: runIds };
  return { run_ids: runIds, cursor: listingCursor(last) };
}

/** Up to `want` runs of one listing shard that sort after `after`, newest first. */
async function listShard(
  io: DynamoIo,
  partition: string,
  want: number,
  after: ListingPosition | undefined,
): Promise<ListingPosition[]> {
  const found: ListingPosition[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    io.metrics.queries += 1;
    const out = await io.doc.send(
      new QueryCommand({
        TableName: io.table,
        IndexName: 'by_status',
        KeyConditionExpression: after === undefined ? '#s = :s' : '#s = :s AND #c <= :c',
        ExpressionAttributeNames: {
          '#s': ATTR.statusShard,
          ...(after === undefined ? {} : { '#c': ATTR.createdAt }),
        },
        ExpressionAttributeValues: {
          ':s': partition,
          ...(after === undefined ? {} : { ':c': after.created_at }),
        },
        ScanIndexForward: false,
        Limit: want - found.length,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of out.Items ?? []) {
      const p = { created_at: Number(item[ATTR.createdAt]), run_id: String(item.pk).slice(4) };
      // Runs created in the cursor's millisecond but listed before it were on an earlier page.
      if (after === undefined || compareListing(p, after) > 0) found.push(p);
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined && found.length < want);
  return found;
}

/**
 * One planned put on its own (not a transaction): true when written, false when its condition
 * did not hold. Other errors are thrown.
 */
async function putOne(io: DynamoIo, write: PlannedWrite): Promise<boolean> {
  const action = toTransactItem(write, io.table).Put;
  if (action === undefined) throw new Error(`putOne takes a put, not a ${write.op}`);
  const { ReturnValuesOnConditionCheckFailure: _none, ...put } = action;
  try {
    const out = await io.doc.send(new PutCommand({ ...put, ReturnConsumedCapacity: 'TOTAL' }));
    countCapacity(io, out.ConsumedCapacity, 'write');
    return true;
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return false;
    throw err;
  }
}

/** Builds the DynamoDB RunStore. Does no I/O. */
export function createDynamoRunStore(options: DynamoRunStoreOptions): RunStore {
  const io: DynamoIo = {
    doc: options.doc,
    table: options.tableName,
    blobs: options.blobs,
    maxAttempts: options.maxAttempts ?? 5,
    sleep: options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))),
    metrics: noStoreMetrics(),
    reads: new PendingCharges(),
  };
  return {
    metrics: io.metrics,
    getRun: async (runId) => recordOf(await getItem(io, runPk(runId), 'R')),
    getStatus: (runId) => getStatus(io, runId),
    getRunAndAck: (runId, controlId) => getRunAndAck(io, runId, controlId),
    async getState(runId, rev, at) {
      if (rev === 0) return null;
      const sk = at ?? stateSk(rev);
      return stateOf(
        await getItem(io, runPk(runId), sk, 'state_json, state_blob, state_rev'),
        runId,
        rev,
        sk,
        countingGets(io.blobs, () => io.reads.add(runId, { s3_get_requests: 1 })),
      );
    },
    readEvents: (runId, after, limit) => readEvents(io, runId, after, limit),
    async getCheckpoint(runId, n) {
      const item = await getItem(io, runPk(runId), checkpointSk(n));
      return item === undefined ? null : checkpointOf(item);
    },
    listCheckpoints: async (runId) =>
      (await queryPrefix(io, runPk(runId), 'C#')).map((i) => checkpointOf(i)).sort((a, b) => a.n - b.n),
    findBySubject: async (subject) =>
      ((await getItem(io, subjectKey(subject), 'S'))?.run_id as string | undefined) ?? null,
    findByCreateKey: async (principalKey, key) =>
      createKeyItemOf(await getItem(io, createKeyPk(principalKey, key), 'K')),
    async readQuota(principalKey, windowStart) {
      const pk = quotaPk(principalKey);
      const [slots, window] = await Promise.all([
        queryPrefix(io, pk, 'L#', 'sk'),
        getItem(io, pk, quotaWindowSk(windowStart)),
      ]);
      return quotaUsageOf(slots, window);
    },
    listChildren: async (parentRunId) =>
      (await queryPrefix(io, runPk(parentRunId), 'CH#', 'run_id')).map((i) => i.run_id as string),
    findByResumeKey: async (resumeKey) => waitOf(await getItem(io, resumeKeyPk(resumeKey), 'K')),
    readResumeKey: async (resumeKey, now) =>
      resumeKeyEntryOf(await getItem(io, resumeKeyPk(resumeKey), 'K'), now),
    holdEarlyResult: (hold) => putOne(io, planEarlyResult(hold)),
    sweepCandidates: (shard, now, limit) => sweepCandidates(io, shard, now, limit),
    listByStatus: (status, limit, cursor) => listByStatus(io, status, limit, cursor),
    async commit(commit) {
      const runId = commit.record.run_id;
      const bodies = await storeCommitBodies(commit, io.blobs);
      // The run's reads since its last commit ride in this one (given back if it fails).
      const reads = io.reads.take(runId);
      try {
        const plan = planMetered(commit, bodies, sumCharges(commit.charge ?? {}, reads));
        await execute(io, plan, commit);
        return plan.record;
      } catch (err) {
        io.reads.add(runId, reads);
        throw err;
      }
    },
  };
}
