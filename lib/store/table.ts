/**
 * The one DynamoDB table: its keys, its three discovery GSIs and its TTL attribute. The CDK
 * stack, the local stack and the tests all build the table from this module, so the three can
 * never drift apart. docs/reference/storage.md.
 *
 * Correctness never depends on a GSI: the sweeper and the listings find candidates here and
 * then re-read the run with a strongly consistent GetItem and re-check it with a conditional
 * write. Every index is sparse (an item appears only while it carries the index keys) and
 * sharded (no hot partition key).
 */
import { createHash } from 'node:crypto';
import type {
  CreateTableCommandInput,
  GlobalSecondaryIndex,
  UpdateTimeToLiveCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { RunStatus } from '../contracts/run.ts';
import { SWEEP_SHARDS } from '../engine/ports.ts';

/** Table name used when no other is configured (local stack, tests, default stack prop). */
export const DEFAULT_TABLE_NAME = 'agent-runs';

/** Attribute names the table definition depends on. Wire fields stay snake_case. */
export const ATTR = {
  /** Partition key (string): `RUN#{run_id}`, `SUBJ#{sha256}`, `CKEY#{sha256}`, `RKEY#{sha256}`. */
  pk: 'pk',
  /**
   * Sort key (string): `R` (run record), `E#{seq 12 digits}` (an event page: the events of one
   * commit, keyed by the seq of its first event, plus the domain state that commit wrote),
   * `D#{rev}` (domain state written without events), `C#{n}` (checkpoint), `K#{control_id}`
   * (control ack), `CH#{child_run_id}` (child link), `S` (subject), `K` (create / resume key).
   */
  sk: 'sk',
  /** `sweep` GSI partition (string): the sweep shard, see {@link sweepShardKey}. Present only while the sweeper owes the run something. */
  sweepShard: 'sweep_shard',
  /** `sweep` GSI sort (number, ms epoch): when the sweeper should next look at the run. */
  sweepDue: 'sweep_due',
  /** `by_status` GSI partition (string): `{status}#{shard}`, see {@link statusShardKey}. Run records only. */
  statusShard: 'status_shard',
  /** `by_principal` GSI partition (string): `{sha256(principal)}#{shard}`, see {@link principalShardKey}. Run records only. */
  principalShard: 'principal_shard',
  /** Listing GSIs sort (number, ms epoch): the run record's own `created_at`. */
  createdAt: 'created_at',
  /** TTL attribute (number, epoch SECONDS as DynamoDB TTL requires); absent = never expires. */
  expiresAtTtl: 'expires_at_ttl',
} as const;

/** GSI names. */
export const GSI = {
  /** Sweeper discovery: Query `sweep_shard = :s AND sweep_due <= :now`, one query per shard. */
  sweep: 'sweep',
  /** Listing by status: Query `status_shard = :s`, newest first with ScanIndexForward false. */
  byStatus: 'by_status',
  /** Listing by principal: Query `principal_shard = :s`, newest first with ScanIndexForward false. */
  byPrincipal: 'by_principal',
} as const;

/** Number of shards of each listing partition (per status, per principal). */
export const LISTING_SHARDS = 8;

/** Key schema and projection of each GSI, as plain data. All three project KEYS_ONLY: whatever an index finds is re-read from the base table, and a KEYS_ONLY index is written only when its keys change, not on every commit of the run record. */
export const TABLE_DEFINITION = {
  partitionKey: { name: ATTR.pk, type: 'S' },
  sortKey: { name: ATTR.sk, type: 'S' },
  billingMode: 'PAY_PER_REQUEST',
  timeToLiveAttribute: ATTR.expiresAtTtl,
  /**
   * The table's stream: every change with its old and new image. It feeds the live fan-out
   * (WebSocket subscribers) and the run lifecycle notifications (EventBridge), so that no writer
   * knows who listens (the outbox: docs/architecture.md, "The seams of a step"). Only run record
   * changes are consumed (see lib/live/stream-records.ts): each commit changes the record once.
   */
  stream: 'NEW_AND_OLD_IMAGES',
  globalSecondaryIndexes: [
    {
      indexName: GSI.sweep,
      partitionKey: { name: ATTR.sweepShard, type: 'S' },
      sortKey: { name: ATTR.sweepDue, type: 'N' },
      projection: 'KEYS_ONLY',
    },
    {
      indexName: GSI.byStatus,
      partitionKey: { name: ATTR.statusShard, type: 'S' },
      sortKey: { name: ATTR.createdAt, type: 'N' },
      projection: 'KEYS_ONLY',
    },
    {
      indexName: GSI.byPrincipal,
      partitionKey: { name: ATTR.principalShard, type: 'S' },
      sortKey: { name: ATTR.createdAt, type: 'N' },
      projection: 'KEYS_ONLY',
    },
  ],
} as const;

/** The SDK input that creates the table (on-demand billing, all GSIs). TTL is not part of CreateTable: also send {@link timeToLiveInput}. */
export function createTableInput(tableName: string = DEFAULT_TABLE_NAME): CreateTableCommandInput {
  const def = TABLE_DEFINITION;
  const keyAttrs = [
    def.partitionKey,
    def.sortKey,
    ...def.globalSecondaryIndexes.flatMap((g) => [g.partitionKey, g.sortKey]),
  ];
  const attributeDefinitions = [...new Map(keyAttrs.map((a) => [a.name, a])).values()].map((a) => ({
    AttributeName: a.name,
    AttributeType: a.type,
  }));
  const globalSecondaryIndexes: GlobalSecondaryIndex[] = def.globalSecondaryIndexes.map((g) => ({
    IndexName: g.indexName,
    KeySchema: [
      { AttributeName: g.partitionKey.name, KeyType: 'HASH' },
      { AttributeName: g.sortKey.name, KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: g.projection },
  }));
  return {
    TableName: tableName,
    BillingMode: def.billingMode,
    AttributeDefinitions: attributeDefinitions,
    KeySchema: [
      { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
      { AttributeName: def.sortKey.name, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: globalSecondaryIndexes,
    StreamSpecification: { StreamEnabled: true, StreamViewType: def.stream },
  };
}

/** The SDK input that enables TTL on {@link ATTR.expiresAtTtl}. */
export function timeToLiveInput(tableName: string = DEFAULT_TABLE_NAME): UpdateTimeToLiveCommandInput {
  return {
    TableName: tableName,
    TimeToLiveSpecification: { AttributeName: TABLE_DEFINITION.timeToLiveAttribute, Enabled: true },
  };
}

/**
 * Digests a process computed lately, by input: every commit of a run derives its shard keys
 * from the same run id and principal, and a worker commits the same few runs again and again.
 * Bounded (a Map in insertion order, the oldest dropped first).
 */
const DIGEST_MEMORY = 1_024;
const digests = new Map<string, Buffer>();

function sha256Of(text: string): Buffer {
  let digest = digests.get(text);
  if (digest === undefined) {
    digest = createHash('sha256').update(text).digest();
    if (digests.size >= DIGEST_MEMORY) digests.delete(digests.keys().next().value as string);
    digests.set(text, digest);
  }
  return digest;
}

/** Stable shard of a run id in `[0, shards)`: first 4 bytes of sha256(run_id), modulo shards. */
export function shardOf(runId: string, shards: number): number {
  return sha256Of(runId).readUInt32BE(0) % shards;
}

/** `sweep_shard` value of a run: `{shard}` in `[0, SWEEP_SHARDS)`, as a decimal string. */
export function sweepShardKey(runId: string): string {
  return String(shardOf(runId, SWEEP_SHARDS));
}

/** `status_shard` value of a run record: `{status}#{shard}`, e.g. `waiting#3`. */
export function statusShardKey(status: RunStatus, runId: string): string {
  return `${status}#${shardOf(runId, LISTING_SHARDS)}`;
}

/**
 * `principal_shard` value of a run record: `{sha256(principalKey) hex}#{shard}`, where
 * principalKey is a stable string naming the principal (e.g. `{kind}:{id}`); the principal
 * itself never becomes a key. A listing by principal queries all LISTING_SHARDS shards.
 */
export function principalShardKey(principalKey: string, runId: string): string {
  return principalShardOf(principalKey, shardOf(runId, LISTING_SHARDS));
}

/** `principal_shard` value of shard `shard` of a principal key: what a listing by principal queries. */
export function principalShardOf(principalKey: string, shard: number): string {
  return `${principalHashOf(principalKey)}#${shard}`;
}

/** The part of every `principal_shard` value of a principal key before the `#`: sha256 hex. */
export function principalHashOf(principalKey: string): string {
  return sha256Of(principalKey).toString('hex');
}
