/**
 * The live subscriptions in the run table (lib/live/dynamo-subscriptions.ts) keep the `exp` of
 * the connection's token on the connection and on each subscription, and an item written
 * without one reads as expired (0), so that a connection from before the field existed is
 * served nothing. On DynamoDB Local.
 */
import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { createDynamoSubscriptionStore } from '../../lib/live/dynamo-subscriptions.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
const store = createDynamoSubscriptionStore(clients.doc, local.tableName);

afterAll(() => clients.destroy());

describe('the live subscriptions in DynamoDB', () => {
  it("keep the token's exp on the connection and its subscriptions", async () => {
    const id = `c-${randomUUID().slice(0, 8)}`;
    const run = `run-${randomUUID().slice(0, 8)}`;
    const caller = { principal: { kind: 'user', id: `alice-${id}` } } as const;
    const connection = { connection_id: id, caller, connected_at: 1_000, token_exp: 1_700_000_123 };
    expect(await store.openConnection(connection, 8, 1_000)).toEqual({ admitted: true });
    await store.subscribe({ run_id: run, connection_id: id, sent_seq: 4, token_exp: 1_700_000_123 }, 16);

    expect(await store.getConnection(id)).toMatchObject({ connected_at: 1_000, token_exp: 1_700_000_123 });
    expect(await store.subscribers(run)).toEqual([
      { run_id: run, connection_id: id, sent_seq: 4, token_exp: 1_700_000_123 },
    ]);
    await store.deleteConnection(id);
    expect(await store.subscribers(run)).toEqual([]);
  });

  it('read an item written without token_exp as expired (0)', async () => {
    const id = `c-${randomUUID().slice(0, 8)}`;
    const run = `run-${randomUUID().slice(0, 8)}`;
    await clients.doc.send(
      new PutCommand({
        TableName: local.tableName,
        Item: {
          pk: `WSC#${id}`,
          sk: 'C',
          caller_json: JSON.stringify({ principal: { kind: 'user', id: 'old' } }),
          connected_at: 5,
        },
      }),
    );
    await clients.doc.send(
      new PutCommand({
        TableName: local.tableName,
        Item: { pk: `RUN#${run}`, sk: `W#${id}`, connection_id: id, sent_seq: 0 },
      }),
    );

    expect((await store.getConnection(id))?.token_exp).toBe(0);
    expect((await store.subscribers(run)).map((s) => s.token_exp)).toEqual([0]);
  });
});
