/**
 * The live subscriptions in the run table: the connection `WSC#{id} / C` (who opened it), one
 * index item per subscribed run `WSC#{id} / S#{run_id}`, and the subscription itself in the
 * run's partition `RUN#{run_id} / W#{id}` with its cursor `sent_seq`, so that the fan-out finds
 * a run's subscribers with one strongly consistent Query. Every item expires (TTL) three hours
 * after it was written: API Gateway closes a connection after two. The connection and each
 * subscription keep the `exp` of the connection's token (`token_exp`, seconds since epoch); an
 * item written without one reads as expired (0), so it is served nothing. The stream's consumer
 * skips these items (it reads run records only).
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
import { ATTR } from '../store/table.ts';
import type { LiveConnection, Subscription, SubscriptionStore } from './ports.ts';

/** How long the items of a connection live (s): above API Gateway's two-hour connection limit. */
export const SUBSCRIPTION_TTL_SECONDS = 3 * 3600;

const connectionPk = (id: string) => `WSC#${id}`;
const runPk = (id: string) => `RUN#${id}`;

/** Deletes a connection's items: each subscription in its run's partition, then the connection's own. */
async function deleteConnectionItems(
  doc: DynamoDBDocumentClient,
  tableName: string,
  connectionId: string,
): Promise<void> {
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
}

/** The item's `token_exp`, or 0 (expired) for an item written without one. */
function tokenExpOf(item: Record<string, unknown>): number {
  const exp = Number(item.token_exp);
  return Number.isFinite(exp) ? exp : 0;
}

export function createDynamoSubscriptionStore(
  doc: DynamoDBDocumentClient,
  tableName: string,
  now: () => number = Date.now,
): SubscriptionStore {
  const ttl = () => Math.floor(now() / 1000) + SUBSCRIPTION_TTL_SECONDS;
  return {
    async putConnection(connection: LiveConnection) {
      await doc.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            pk: connectionPk(connection.connection_id),
            sk: 'C',
            caller_json: JSON.stringify(connection.caller),
            connected_at: connection.connected_at,
            token_exp: connection.token_exp,
            [ATTR.expiresAtTtl]: ttl(),
          },
        }),
      );
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
    async subscribe(sub: Subscription) {
      await doc.send(
        new PutCommand({
          TableName: tableName,
          Item: { pk: connectionPk(sub.connection_id), sk: `S#${sub.run_id}`, [ATTR.expiresAtTtl]: ttl() },
        }),
      );
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
    },
    async unsubscribe(runId, connectionId) {
      await doc.send(
        new DeleteCommand({ TableName: tableName, Key: { pk: runPk(runId), sk: `W#${connectionId}` } }),
      );
      await doc.send(
        new DeleteCommand({
          TableName: tableName,
          Key: { pk: connectionPk(connectionId), sk: `S#${runId}` },
        }),
      );
    },
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
        if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return false;
        throw err;
      }
    },
  };
}
