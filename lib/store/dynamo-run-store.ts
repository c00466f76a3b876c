/**
 * RunStore on one DynamoDB table: strongly consistent reads of the run record, its events, its
 * domain state and its control acks, and ONE commit function that executes a commit's plan
 * (commit-plan.ts) by the commit protocol (commit-protocol.ts): two plain writes, the event page
 * then the record's fenced update, when the commit writes nothing else; one TransactWriteItems
 * otherwise (dynamo-writes.ts). Readers trust only what the record's last_seq covers.
 * docs/reference/storage.md; docs/architecture.md, "The commit". The
 * item layout is documented in commit-plan.ts.
 */

import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
} from '@aws-sdk/lib-dynamodb';
import { raisingStoreUnavailable } from '../aws-faults.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { type RunEvent, RunStatus } from '../contracts/index.ts';
import { sumCharges } from '../core/prices.ts';
import {
  type HeldVersion,
  noStoreMetrics,
  PendingCharges,
  type RunStatusView,
  type RunStore,
  SWEEP_SHARDS,
} from '../engine/ports.ts';
import {
  ackSk,
  checkpointSk,
  createKeyPk,
  eventSk,
  type Item,
  planEarlyResult,
  quotaPk,
  quotaWindowSk,
  resumeKeyPk,
  runPk,
  stateSk,
  storeCommitBodies,
  subjectKey,
  subjectReleaseWrites,
} from './commit-plan.ts';
import { commitPlanned, givenUpItem, subjectClaimOf } from './commit-protocol.ts';
import { countCapacity, type DynamoIo, execute, seenRecord, writeOne } from './dynamo-writes.ts';
import { type EventTail, pagedSeq, stateWhere, TailCache, tailStatesItem } from './event-tail.ts';
import {
  checkpointOf,
  controlAckOf,
  createKeyItemOf,
  eventsOf,
  heldTailEntries,
  quotaUsageOf,
  recordAndTailOf,
  resumeKeyEntryOf,
  stateOf,
  tailOf,
  takeContiguous,
  waitOf,
} from './item-codec.ts';
import { LISTING_KEY_ITEM, listingKeyOf, newListingKeyItem } from './listing-key.ts';
import { compareListing, type ListingPosition, listingCursor, listingPosition } from './listing-order.ts';
import { countingGets } from './metering.ts';
import { ATTR, GSI, LISTING_SHARDS, principalShardOf } from './table.ts';

export interface DynamoRunStoreOptions {
  doc: DynamoDBDocumentClient;
  tableName: string;
  blobs: BlobStore;
  /** Attempts for a transaction that meets a conflict or throttling (default 5). */
  maxAttempts?: number;
  /**
   * Fault injection for the crash tests only: called after a plain commit's event page landed and
   * before its record update is sent; what it throws ends the commit there (a dead writer).
   */
  afterPage?: (runId: string) => void | Promise<void>;
  /**
   * Fault injection for the crash tests only: called after a plain create's subject put landed
   * and before its record put (commit-protocol.ts plainCreateOf).
   */
  afterClaim?: (runId: string) => void | Promise<void>;
  sleep?: (ms: number) => Promise<void>;
  /** The store's clock (ms since the epoch; default Date.now): stamps and ages subject claims. */
  now?: () => number;
}

/** The run a partition key belongs to (its reads are charged to it), or undefined. */
const runOfPk = (pk: string) => (pk.startsWith('RUN#') ? pk.slice(4) : undefined);

/** The blob store with each get charged to `runId` as an S3 GET. */
const blobGets = (io: DynamoIo, runId: string) =>
  countingGets(io.blobs, () => io.reads.add(runId, { s3_get_requests: 1 }));

async function getItem(
  io: DynamoIo,
  pk: string,
  sk: string,
  projection?: string,
  names?: Record<string, string>,
): Promise<Item | undefined> {
  io.metrics.reads += 1;
  const out = await io.doc.send(
    new GetCommand({
      TableName: io.table,
      Key: { pk, sk },
      ConsistentRead: true,
      ...(projection !== undefined ? { ProjectionExpression: projection } : {}),
      ...(names !== undefined ? { ExpressionAttributeNames: names } : {}),
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  countCapacity(io, out.ConsumedCapacity, 'read', runOfPk(pk));
  return out.Item;
}

/** The record item's status attribute, eventually consistent (half the read units of getRun). */
async function getStatus(io: DynamoIo, runId: string, consistent = false): Promise<RunStatusView | null> {
  io.metrics.reads += 1;
  const out = await io.doc.send(
    new GetCommand({
      TableName: io.table,
      Key: { pk: runPk(runId), sk: 'R' },
      ConsistentRead: consistent,
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
    record: seenRecord(
      io,
      items.find((i) => i.sk === 'R'),
    ),
    ack: ack === undefined ? null : controlAckOf(ack),
  };
}

/** One Query of event pages, in sort-key order (forward from `from`, or back from `to`, one page). */
async function queryPages(
  io: DynamoIo,
  runId: string,
  range: { from: string; to: string; backward?: boolean; limit: number; start?: Record<string, unknown> },
) {
  io.metrics.queries += 1;
  const out = await io.doc.send(
    new QueryCommand({
      TableName: io.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': runPk(runId), ':from': range.from, ':to': range.to },
      // Only the events and where they start: a page's domain state is read by getState.
      ProjectionExpression: '#events, events_z, first_seq',
      ExpressionAttributeNames: { '#events': 'events' },
      ConsistentRead: true,
      ScanIndexForward: range.backward !== true,
      Limit: range.limit,
      ExclusiveStartKey: range.start,
      ReturnConsumedCapacity: 'TOTAL',
    }),
  );
  countCapacity(io, out.ConsumedCapacity, 'read', runId);
  return out;
}

async function readEvents(
  io: DynamoIo,
  runId: string,
  after: number,
  limit: number,
  held?: HeldVersion,
): Promise<RunEvent[]> {
  const known = heldTailEntries(io.tails, runId, after, limit, held);
  if (known !== null) return readLinks(io, runId, known);
  // The record first: only what its last_seq covers is committed, and its tail holds the newest
  // events; pages are read only below the tail (event-tail.ts).
  const item = await getItem(io, runPk(runId), 'R');
  const read = tailOf(item);
  if (read === null || read.last_seq <= after) return [];
  if (typeof item?.version === 'number') io.tails.set(runId, item.version, read.tail);
  const paged = pagedSeq(read.tail);
  const entries: Item[] = [];
  if (after < paged && !(await takePages(io, runId, after, limit, paged, entries)))
    return readLinks(io, runId, entries);
  if (after + entries.length >= paged && entries.length < limit)
    takeContiguous([{ events: read.tail.events }], after, limit, entries, read.last_seq);
  return readLinks(io, runId, entries);
}

/**
 * Appends to `entries` the paged events after `after` up to `paged` (at most `limit`): false
 * when it stopped before `paged` (a gap or the limit).
 */
async function takePages(
  io: DynamoIo,
  runId: string,
  after: number,
  limit: number,
  paged: number,
  entries: Item[],
): Promise<boolean> {
  const range = { from: eventSk(after + 1), to: eventSk(paged) };
  let out = await queryPages(io, runId, { ...range, limit });
  const first = out.Items?.[0];
  if (first === undefined || Number(first.first_seq) > after + 1) {
    // Pages are keyed by their first seq: after + 1 is inside the page that starts below it.
    const head = await queryPages(io, runId, { from: 'E#', to: eventSk(after), backward: true, limit: 1 });
    if (!takeContiguous(head.Items ?? [], after, limit, entries, paged))
      return after + entries.length === paged;
  }
  for (;;) {
    if (!takeContiguous(out.Items ?? [], after, limit, entries, paged)) break;
    const start = out.LastEvaluatedKey;
    if (start === undefined) break;
    // Limit counts pages; each page in range holds at least one wanted event.
    out = await queryPages(io, runId, { ...range, limit: limit - entries.length, start });
  }
  return after + entries.length === paged;
}

/**
 * Domain state `rev` located at `at` (the record's or a checkpoint's state_at; D#{rev} without
 * it): from the newest tail known or the record's tail when it still holds it, else its item.
 */
async function getState(io: DynamoIo, runId: string, rev: number, at: string | undefined): Promise<unknown> {
  if (rev === 0) return null;
  const sk = at ?? stateSk(rev);
  const blobs = blobGets(io, runId);
  let where = stateWhere(io.tails.latest(runId), rev, sk);
  if (where === 'unknown') {
    seenRecord(io, await getItem(io, runPk(runId), 'R'));
    where = stateWhere(io.tails.latest(runId), rev, sk, true);
  }
  if (where === 'tail')
    return stateOf(tailStatesItem(io.tails.latest(runId) as EventTail), runId, rev, sk, blobs);
  if (where === 'none') return stateOf(undefined, runId, rev, sk, blobs);
  return stateOf(
    await getItem(io, runPk(runId), sk, 'state_json, state_blob, state_rev, #states, events_z', {
      '#states': 'states',
    }),
    runId,
    rev,
    sk,
    blobs,
  );
}

/**
 * The events of contiguous entries of `runId`, a fork's link entries read from the run they
 * link to; their blobs' gets charged to `runId`.
 */
const readLinks = (io: DynamoIo, runId: string, entries: Item[]) =>
  eventsOf(entries, blobGets(io, runId), (linked, from, count) => readEvents(io, linked, from, count));

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
  return listMerged(io, byStatusIndex, (shard) => `${status}#${shard}`, limit, cursor);
}

/** The runs of one principal key, newest first over its LISTING_SHARDS `by_principal` shards. */
async function listByPrincipal(
  io: DynamoIo,
  principalKey: string,
  limit: number,
  cursor?: string,
): ReturnType<RunStore['listByPrincipal']> {
  return listMerged(io, byPrincipalIndex, (shard) => principalShardOf(principalKey, shard), limit, cursor);
}

/** A listing GSI: its name and its partition attribute. */
interface ListingIndex {
  name: string;
  partition: string;
}
const byStatusIndex: ListingIndex = { name: GSI.byStatus, partition: ATTR.statusShard };
const byPrincipalIndex: ListingIndex = { name: GSI.byPrincipal, partition: ATTR.principalShard };

/** One page of a sharded listing: each shard is newest first, merged in listing order. */
async function listMerged(
  io: DynamoIo,
  index: ListingIndex,
  partitionOf: (shard: number) => string,
  limit: number,
  cursor: string | undefined,
): Promise<{ run_ids: string[]; cursor?: string }> {
  const position = cursor === undefined ? undefined : listingPosition(cursor);
  // A page merges the first limit + 1 of every shard past the cursor.
  const shards = await Promise.all(
    Array.from({ length: LISTING_SHARDS }, (_, shard) =>
      listShard(io, index, partitionOf(shard), limit + 1, position),
    ),
  );
  const merged = shards.flat().sort(compareListing);
  const page = merged.slice(0, limit);
  const last = page.at(-1);
  const runIds = page.map((p) => p.run_id);
  if (merged.length <= limit || last === undefined) return { run_ids: runIds };
  return { run_ids: runIds, cursor: listingCursor(last) };
}

/**
 * The first `want` runs of one listing shard that sort after `after`, in listing order. The index
 * sorts by created_at only and leaves runs created in the same millisecond in no promised order,
 * so the query reads on past the `want`th run until it leaves that run's millisecond.
 */
async function listShard(
  io: DynamoIo,
  index: ListingIndex,
  partition: string,
  want: number,
  after: ListingPosition | undefined,
): Promise<ListingPosition[]> {
  const found: ListingPosition[] = [];
  let startKey: Record<string, unknown> | undefined;
  let lastRead: number | undefined;
  const tieOpen = () => found.length >= want && lastRead === found[want - 1]?.created_at;
  do {
    io.metrics.queries += 1;
    const out = await io.doc.send(
      new QueryCommand({
        TableName: io.table,
        IndexName: index.name,
        KeyConditionExpression: after === undefined ? '#s = :s' : '#s = :s AND #c <= :c',
        ExpressionAttributeNames: {
          '#s': index.partition,
          ...(after === undefined ? {} : { '#c': ATTR.createdAt }),
        },
        ExpressionAttributeValues: {
          ':s': partition,
          ...(after === undefined ? {} : { ':c': after.created_at }),
        },
        ScanIndexForward: false,
        Limit: Math.max(want - found.length, 1) + 1,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of out.Items ?? []) {
      const p = { created_at: Number(item[ATTR.createdAt]), run_id: String(item.pk).slice(4) };
      lastRead = p.created_at;
      // Runs created in the cursor's millisecond but listed before it were on an earlier page.
      if (after === undefined || compareListing(p, after) > 0) found.push(p);
    }
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined && (found.length < want || tieOpen()));
  return found.sort(compareListing).slice(0, want);
}

/** The deployment's listing key: read, or created by a conditional put when absent (listing-key.ts). */
async function listingKey(io: DynamoIo): Promise<Uint8Array> {
  const found = listingKeyOf(await getItem(io, LISTING_KEY_ITEM.pk, LISTING_KEY_ITEM.sk));
  if (found !== null) return found;
  const item = newListingKeyItem();
  try {
    io.metrics.writeRequests += 1;
    await io.doc.send(
      new PutCommand({ TableName: io.table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
  } catch (err) {
    // Another store created it first: that one is the deployment's.
    if ((err as { name?: unknown }).name !== 'ConditionalCheckFailedException') throw err;
    const theirs = listingKeyOf(await getItem(io, LISTING_KEY_ITEM.pk, LISTING_KEY_ITEM.sk));
    if (theirs === null) throw new Error('the listing key item holds no key');
    return theirs;
  }
  return listingKeyOf(item) as Uint8Array;
}

/**
 * Builds the DynamoDB RunStore over one table (lib/store/table.ts defines it) with large payloads
 * in `blobs` (S3). Does no I/O. Every method throws StoreUnavailable (retryable) for what the
 * SDK reports as unreachable, throttled or failing (lib/aws-faults.ts), and the commit refusals
 * CommitRejected / CommitTooLarge (lib/engine/ports.ts); nothing else of the SDK leaves it.
 * docs/reference/storage.md.
 *
 * @example
 * import { createAwsClients } from './lib/aws-clients.ts';
 * import { createS3BlobStore } from './lib/blobs/blob-store.ts';
 * import { createDynamoRunStore } from './lib/store/dynamo-run-store.ts';
 *
 * const clients = createAwsClients(); // the default credential chain and region
 * const store = createDynamoRunStore({
 *   doc: clients.doc,
 *   tableName: 'agent-runs',
 *   blobs: createS3BlobStore(clients.s3, 'agent-runs-payloads'),
 * });
 * const record = await store.getRun('run_01J9ZQ3X4V'); // null for an unknown run
 */
export function createDynamoRunStore(options: DynamoRunStoreOptions): RunStore {
  const io: DynamoIo = {
    doc: options.doc,
    table: options.tableName,
    blobs: options.blobs,
    maxAttempts: options.maxAttempts ?? 5,
    sleep: options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))),
    ...(options.afterPage !== undefined ? { afterPage: options.afterPage } : {}),
    ...(options.afterClaim !== undefined ? { afterClaim: options.afterClaim } : {}),
    now: options.now ?? Date.now,
    metrics: noStoreMetrics(),
    reads: new PendingCharges(),
    tails: new TailCache(),
  };
  return raisingStoreUnavailable<RunStore>(
    {
      metrics: io.metrics,
      getRun: async (runId) => seenRecord(io, await getItem(io, runPk(runId), 'R')),
      getStatus: (runId, opts) => getStatus(io, runId, opts?.consistent === true),
      getRunAndAck: (runId, controlId) => getRunAndAck(io, runId, controlId),
      getState: (runId, rev, at) => getState(io, runId, rev, at),
      readEvents: (runId, after, limit, held) => readEvents(io, runId, after, limit, held),
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
      holdEarlyResult: (hold) => writeOne(io, planEarlyResult(hold)),
      async releaseSubject(record) {
        for (const w of subjectReleaseWrites(record)) await writeOne(io, w);
      },
      sweepCandidates: (shard, now, limit) => sweepCandidates(io, shard, now, limit),
      listByStatus: (status, limit, cursor) => listByStatus(io, status, limit, cursor),
      listByPrincipal: (key, limit, cursor) => listByPrincipal(io, key, limit, cursor),
      listingKey: () => listingKey(io),
      async commit(commit) {
        const runId = commit.record.run_id;
        const bodies = await storeCommitBodies(commit, io.blobs);
        // The run's reads since its last commit ride in this one (given back if it fails).
        const reads = io.reads.take(runId);
        try {
          return await commitPlanned(
            {
              execute: (plan, c) => execute(io, plan, c),
              readRecord: async (id) => recordAndTailOf(await getItem(io, runPk(id), 'R')),
              tails: io.tails,
              sleep: io.sleep,
              subjectHolder: async (pk) => subjectClaimOf(await getItem(io, pk, 'S')),
              giveUp: (id) => writeOne(io, givenUpItem(runPk(id), io.now())),
              now: io.now,
            },
            commit,
            bodies,
            sumCharges(commit.charge ?? {}, reads),
          );
        } catch (err) {
          io.reads.add(runId, reads);
          throw err;
        }
      },
    },
    'DynamoDB',
  );
}
