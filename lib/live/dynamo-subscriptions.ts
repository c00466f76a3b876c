/**
 * The live subscriptions in the run table: the connection `WSC#{id} / C` (who opened it), one
 * index item per subscribed run `WSC#{id} / S#{run_id}`, and the subscription itself in the
 * run's partition `RUN#{run_id} / W#{id}` with its cursor `sent_seq`, so that the fan-out finds
 * a run's subscribers with one strongly consistent Query. Every item expires (TTL) three hours
 * after it was written: API Gateway closes a connection after two. The connection and each
 * subscription keep the `exp` of the connection's token (`token_exp`, seconds since epoch); an
 * item written without one reads as expired (0), so it is served nothing. The stream's consumer
 * skips these items (it reads run records only).
 *
 * The bounds: a principal's open connections are one item `WSP#{quota key} /
 * C` holding `conns` (connection id → `{at, until}`) and a `version`, written conditionally on
 * the version it was read at, so that concurrent connects cannot pass the bound together; a
 * connection's subscriptions are counted in `sub_count` on its own item (raised only for a run
 * not yet subscribed, conditionally below the bound); its subscribe messages in `sub_window` (the
 * minute) and `sub_window_count`; a principal's catch-up replay bytes in `WSR#{quota key} / R`
 * (`replay_window`, `replay_bytes`), raised only while below the bound.
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { Principal } from '../contracts/index.ts';
import { quotaKeyOf } from '../core/principal.ts';
import { ATTR } from '../store/table.ts';
import {
  countsUntil,
  type LiveConnection,
  type LiveLimits,
  type OpenOutcome,
  type ReplayTake,
  type SubscribeOutcome,
  type Subscription,
  type SubscriptionStore,
} from './ports.ts';

/** How long the items of a connection live (s): above API Gateway's two-hour connection limit. */
export const SUBSCRIPTION_TTL_SECONDS = 3 * 3600;

const connectionPk = (id: string) => `WSC#${id}`;
const runPk = (id: string) => `RUN#${id}`;
const principalPk = (quotaKey: string) => `WSP#${quotaKey}`;
const replayPk = (quotaKey: string) => `WSR#${quotaKey}`;

/** Tries of an openConnection whose conditional write lost to a concurrent connect or delete. */
const OPEN_TRIES = 8;

const conditionFailed = (err: unknown) =>
  (err as { name?: string }).name === 'ConditionalCheckFailedException';

/**
 * The window of the replay item a failed condition found (ReturnValuesOnConditionCheckFailure
 * ALL_OLD; the document client leaves the exception's Item in the wire shape), -1 for none.
 */
const replayWindowFound = (err: unknown): number => {
  const found = (err as { Item?: { replay_window?: { N?: string } | number } }).Item?.replay_window;
  if (typeof found === 'number') return found;
  return found?.N === undefined ? -1 : Number(found.N);
};

/** A principal's open connections as kept in its `WSP#` item. */
type Slots = Record<string, { at: number; until: number }>;

/** Deletes a connection's items: each subscription in its run's partition, then the connection's own. */
async function deleteConnectionItems(
  doc: DynamoDBDocumentClient,
  tableName: string,
  connectionId: string,
): Promise<void> {
  const own = await doc.send(
    new GetCommand({
      TableName: tableName,
      Key: { pk: connectionPk(connectionId), sk: 'C' },
      ConsistentRead: true,
    }),
  );
  const out = await doc.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': connectionPk(connectionId) },
      ConsistentRead: true,
    }),
  );
  for (const item of out.Items ?? []) {
    const sk = String(item.sk);
    if (sk.startsWith('S#'))
      await doc.send(
        new DeleteCommand({
          TableName: tableName,
          Key: { pk: runPk(sk.slice(2)), sk: `W#${connectionId}` },
        }),
      );
    await doc.send(new DeleteCommand({ TableName: tableName, Key: { pk: connectionPk(connectionId), sk } }));
  }
  const quotaKey = own.Item?.principal_key;
  if (typeof quotaKey === 'string') await releaseSlot(doc, tableName, quotaKey, connectionId);
}

/** Takes the connection out of its principal's count (the version moves, so a concurrent open re-reads). */
async function releaseSlot(
  doc: DynamoDBDocumentClient,
  tableName: string,
  quotaKey: string,
  connectionId: string,
): Promise<void> {
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: principalPk(quotaKey), sk: 'C' },
        UpdateExpression: 'REMOVE conns.#id ADD version :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#id': connectionId },
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
  } catch (err) {
    if (!conditionFailed(err)) throw err;
  }
}

/**
 * Claims a place in the principal's count for `connection`: reads the principal's item, drops
 * the places whose `until` passed, and writes it back with this one added, conditionally on the
 * version read. Refused when `max` places are taken, or after OPEN_TRIES lost races.
 */
async function claimSlot(
  doc: DynamoDBDocumentClient,
  tableName: string,
  connection: LiveConnection,
  max: number,
  nowMs: number,
): Promise<OpenOutcome> {
  const key = { pk: principalPk(quotaKeyOf(connection.caller.principal)), sk: 'C' };
  for (let attempt = 0; attempt < OPEN_TRIES; attempt += 1) {
    const out = await doc.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
    const version = Number(out.Item?.version ?? 0);
    const slots = Object.fromEntries(
      Object.entries((out.Item?.conns ?? {}) as Slots).filter(([, slot]) => slot.until > nowMs),
    );
    if (Object.keys(slots).length >= max)
      return {
        admitted: false,
        holders: Object.entries(slots).map(([id, slot]) => ({ connection_id: id, connected_at: slot.at })),
      };
    slots[connection.connection_id] = { at: connection.connected_at, until: countsUntil(connection) };
    try {
      await doc.send(
        new PutCommand({
          TableName: tableName,
          Item: { ...key, conns: slots, version: version + 1, [ATTR.expiresAtTtl]: ttlOf(slots) },
          ConditionExpression: out.Item === undefined ? 'attribute_not_exists(pk)' : 'version = :v',
          ...(out.Item === undefined ? {} : { ExpressionAttributeValues: { ':v': version } }),
        }),
      );
      return { admitted: true };
    } catch (err) {
      if (!conditionFailed(err)) throw err;
    }
  }
  return { admitted: false, holders: [] };
}

/** The principal item's TTL (s): after the last place it holds stops counting. */
function ttlOf(slots: Slots): number {
  return Math.ceil(Math.max(...Object.values(slots).map((s) => s.until)) / 1000) + 60;
}

/** The item's `token_exp`, or 0 (expired) for an item written without one. */
function tokenExpOf(item: Record<string, unknown>): number {
  const exp = Number(item.token_exp);
  return Number.isFinite(exp) ? exp : 0;
}

/** What the item functions of a store share. */
interface Table {
  doc: DynamoDBDocumentClient;
  tableName: string;
  /** The TTL of an item written now (s since epoch). */
  ttl: () => number;
}

/** Raises the connection's `sub_count` below `max`: `full` at the bound, `gone` without the connection. */
async function countSubscription(
  { doc, tableName }: Table,
  connectionId: string,
  max: number,
): Promise<'counted' | 'full' | 'gone'> {
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: connectionPk(connectionId), sk: 'C' },
        UpdateExpression: 'ADD sub_count :one',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(sub_count) OR sub_count < :max)',
        ExpressionAttributeValues: { ':one': 1, ':max': max },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return 'counted';
  } catch (err) {
    if (!conditionFailed(err)) throw err;
    return (err as { Item?: unknown }).Item === undefined ? 'gone' : 'full';
  }
}

/** SubscriptionStore.subscribe: the index item first (its absence says the run is new to the connection), then the count, then the cursor. */
async function subscribeIn(table: Table, sub: Subscription, max: number): Promise<SubscribeOutcome> {
  const { doc, tableName, ttl } = table;
  const index = { pk: connectionPk(sub.connection_id), sk: `S#${sub.run_id}` };
  let replaced = false;
  try {
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...index, [ATTR.expiresAtTtl]: ttl() },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (err) {
    if (!conditionFailed(err)) throw err;
    replaced = true;
  }
  if (!replaced) {
    const counted = await countSubscription(table, sub.connection_id, max);
    if (counted !== 'counted') {
      await doc.send(new DeleteCommand({ TableName: tableName, Key: index }));
      return counted;
    }
  }
  await doc.send(
    new PutCommand({
      TableName: tableName,
      Item: {
        pk: runPk(sub.run_id),
        sk: `W#${sub.connection_id}`,
        connection_id: sub.connection_id,
        sent_seq: sub.sent_seq,
        token_exp: sub.token_exp,
        [ATTR.expiresAtTtl]: ttl(),
      },
    }),
  );
  return replaced ? 'replaced' : 'subscribed';
}

/** SubscriptionStore.unsubscribe: the count falls only when the index item was there. */
async function unsubscribeIn({ doc, tableName }: Table, runId: string, connectionId: string): Promise<void> {
  await doc.send(
    new DeleteCommand({ TableName: tableName, Key: { pk: runPk(runId), sk: `W#${connectionId}` } }),
  );
  const out = await doc.send(
    new DeleteCommand({
      TableName: tableName,
      Key: { pk: connectionPk(connectionId), sk: `S#${runId}` },
      ReturnValues: 'ALL_OLD',
    }),
  );
  if (out.Attributes === undefined) return;
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { pk: connectionPk(connectionId), sk: 'C' },
        UpdateExpression: 'ADD sub_count :minus',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':minus': -1 },
      }),
    );
  } catch (err) {
    if (!conditionFailed(err)) throw err;
  }
}

/** SubscriptionStore.takeSubscribe. */
async function takeSubscribeIn(
  { doc, tableName }: Table,
  connectionId: string,
  nowMs: number,
  perMinute: number,
): Promise<boolean> {
  const key = { pk: connectionPk(connectionId), sk: 'C' };
  const window = Math.floor(nowMs / 60_000);
  try {
    // This minute's count, below the bound.
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'ADD sub_window_count :one',
        ConditionExpression: 'sub_window = :w AND sub_window_count < :max',
        ExpressionAttributeValues: { ':one': 1, ':w': window, ':max': perMinute },
      }),
    );
    return true;
  } catch (err) {
    if (!conditionFailed(err)) throw err;
  }
  try {
    // The first of a new minute (a connection that exists, last counted in an earlier one).
    await doc.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'SET sub_window = :w, sub_window_count = :one',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(sub_window) OR sub_window < :w)',
        ExpressionAttributeValues: { ':one': 1, ':w': window },
      }),
    );
    return true;
  } catch (err) {
    if (!conditionFailed(err)) throw err;
    return false;
  }
}

/**
 * SubscriptionStore.takeReplay: this window's bytes raised while below the bound, or a new window
 * begun. Two first takes of a window race to begin it; the one that loses adds to the window the
 * other began (a second round), so a refusal always means the window's bytes reached the bound.
 */
async function takeReplayIn(
  { doc, tableName }: Table,
  quotaKey: string,
  bytes: number,
  nowMs: number,
  limit: Pick<LiveLimits, 'replayBytes' | 'replayWindowMs'>,
): Promise<ReplayTake> {
  const key = { pk: replayPk(quotaKey), sk: 'R' };
  const window = Math.floor(nowMs / limit.replayWindowMs);
  // The item outlives its window by a minute; it only ever matters within it.
  const ttl = Math.ceil(((window + 1) * limit.replayWindowMs) / 1000) + 60;
  const refused = { ok: false, retryAfterMs: (window + 1) * limit.replayWindowMs - nowMs } as const;
  for (let round = 0; round < 2; round += 1) {
    try {
      await doc.send(
        new UpdateCommand({
          TableName: tableName,
          Key: key,
          UpdateExpression: 'ADD replay_bytes :n',
          ConditionExpression: 'replay_window = :w AND replay_bytes < :max',
          ExpressionAttributeValues: { ':n': bytes, ':w': window, ':max': limit.replayBytes },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { ok: true };
    } catch (err) {
      if (!conditionFailed(err)) throw err;
      // This window (or a later one) is begun and full: nothing to begin.
      if (replayWindowFound(err) >= window) return refused;
    }
    try {
      await doc.send(
        new UpdateCommand({
          TableName: tableName,
          Key: key,
          UpdateExpression: 'SET replay_window = :w, replay_bytes = :n, #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(pk) OR replay_window < :w',
          ExpressionAttributeNames: { '#ttl': ATTR.expiresAtTtl },
          ExpressionAttributeValues: { ':n': bytes, ':w': window, ':ttl': ttl },
        }),
      );
      return { ok: true };
    } catch (err) {
      if (!conditionFailed(err)) throw err;
      // Another take began this window between the two writes: add to it.
    }
  }
  return refused;
}

export function createDynamoSubscriptionStore(
  doc: DynamoDBDocumentClient,
  tableName: string,
  now: () => number = Date.now,
): SubscriptionStore {
  const ttl = () => Math.floor(now() / 1000) + SUBSCRIPTION_TTL_SECONDS;
  const table: Table = { doc, tableName, ttl };
  return {
    subscribe: (sub, max) => subscribeIn(table, sub, max),
    unsubscribe: (runId, connectionId) => unsubscribeIn(table, runId, connectionId),
    takeSubscribe: (connectionId, nowMs, perMinute) => takeSubscribeIn(table, connectionId, nowMs, perMinute),
    takeReplay: (quotaKey, bytes, nowMs, limit) => takeReplayIn(table, quotaKey, bytes, nowMs, limit),
    async openConnection(connection: LiveConnection, max: number, nowMs: number) {
      const claimed = await claimSlot(doc, tableName, connection, max, nowMs);
      if (!claimed.admitted) return claimed;
      const item = doc.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            pk: connectionPk(connection.connection_id),
            sk: 'C',
            caller_json: JSON.stringify(connection.caller),
            principal_key: quotaKeyOf(connection.caller.principal),
            connected_at: connection.connected_at,
            token_exp: connection.token_exp,
            sub_count: 0,
            [ATTR.expiresAtTtl]: ttl(),
          },
        }),
      );
      try {
        await item;
      } catch (err) {
        // The slot was claimed but no connection item holds it, so no delete would free it:
        // free it now, or the principal would be one socket short until the slot's `until`.
        await releaseSlot(doc, tableName, quotaKeyOf(connection.caller.principal), connection.connection_id);
        throw err;
      }
      return claimed;
    },
    async getConnection(connectionId) {
      const out = await doc.send(
        new GetCommand({
          TableName: tableName,
          Key: { pk: connectionPk(connectionId), sk: 'C' },
          ConsistentRead: true,
        }),
      );
      if (out.Item === undefined) return null;
      const caller = JSON.parse(String(out.Item.caller_json)) as { principal: unknown; capability?: string };
      const principal = Principal.parse(caller.principal);
      return {
        connection_id: connectionId,
        caller:
          caller.capability !== undefined ? { principal, capability: caller.capability } : { principal },
        connected_at: Number(out.Item.connected_at),
        token_exp: tokenExpOf(out.Item),
      };
    },
    deleteConnection: (connectionId) => deleteConnectionItems(doc, tableName, connectionId),
    async subscribers(runId) {
      const out = await doc.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :w)',
          ExpressionAttributeValues: { ':pk': runPk(runId), ':w': 'W#' },
          ConsistentRead: true,
        }),
      );
      return (out.Items ?? []).map((item) => ({
        run_id: runId,
        connection_id: String(item.connection_id),
        sent_seq: Number(item.sent_seq),
        token_exp: tokenExpOf(item),
      }));
    },
    async sentSeq(runId, connectionId) {
      const out = await doc.send(
        new GetCommand({
          TableName: tableName,
          Key: { pk: runPk(runId), sk: `W#${connectionId}` },
          ConsistentRead: true,
        }),
      );
      return out.Item === undefined ? null : Number(out.Item.sent_seq);
    },
    async advance(runId, connectionId, from, to) {
      try {
        await doc.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { pk: runPk(runId), sk: `W#${connectionId}` },
            UpdateExpression: 'SET sent_seq = :to',
            ConditionExpression: 'sent_seq = :from',
            ExpressionAttributeValues: { ':from': from, ':to': to },
          }),
        );
        return true;
      } catch (err) {
        if (conditionFailed(err)) return false;
        throw err;
      }
    },
  };
}
