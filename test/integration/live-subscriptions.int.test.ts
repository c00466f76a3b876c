/**
 * The live subscriptions in the run table (lib/live/dynamo-subscriptions.ts) keep the `exp` of
 * the connection's token on the connection and on each subscription, and an item written
 * without one reads as expired (0), so that a connection from before the field existed is
 * served nothing; a principal's parallel first catch-ups of a replay window all count in it. On
 * DynamoDB Local.
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

  it("admit every one of a principal's parallel first catch-ups of a window below the bound, and refuse past it", async () => {
    const quotaKey = `user:bob-${randomUUID().slice(0, 8)}`;
    const limit = { replayBytes: 1_000, replayWindowMs: 10_000 };
    const at = 1_700_000_000_000;
    const first = await Promise.all(
      Array.from({ length: 6 }, () => store.takeReplay(quotaKey, 100, at, limit)),
    );
    expect(first).toEqual(Array(6).fill({ ok: true }));

    // 600 taken; four more reach the bound (each is admitted while below it), then refusals.
    const next = await Promise.all(
      Array.from({ length: 4 }, () => store.takeReplay(quotaKey, 100, at, limit)),
    );
    expect(next).toEqual(Array(4).fill({ ok: true }));
    expect(await store.takeReplay(quotaKey, 1, at + 1_000, limit)).toEqual({
      ok: false,
      retryAfterMs: 9_000,
    });
    expect(await store.takeReplay(quotaKey, 1, at + limit.replayWindowMs, limit)).toEqual({ ok: true });
  });
});
