/**
 * A token whose `exp` is no safe integer or lies absurdly far ahead opens no socket (401, not a
 * 500 after a claimed slot), and a connect that fails after its principal's slot was claimed
 * gives the slot back: bob's bad attempts leave him his sockets, alice is served throughout.
 * The `ws` socket server, the live handler and the subscriptions in DynamoDB Local; tokens are
 * `sub:exp` strings an authenticate of the test reads (no issuer signs `exp: 1e300`).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WebSocket } from 'ws';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { createSocketHandler } from '../../lib/handlers/live-socket.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createDynamoSubscriptionStore } from '../../lib/live/dynamo-subscriptions.ts';
import type { LiveLimits } from '../../lib/live/ports.ts';
import type { SocketDeps } from '../../lib/live/socket.ts';
import { type SocketServer, startSocketServer } from '../../lib/local/socket-server.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
const subscriptions = createDynamoSubscriptionStore(clients.doc, local.tableName);
const LIMITS: LiveLimits = {
  maxConnections: 2,
  maxSubscriptions: 4,
  subscribesPerMinute: 10,
  replayBytes: 1 << 30,
  replayWindowMs: 10_000,
};
const user = (name: string) => `${name}-${process.pid}-${Date.now()}`;

let sockets: SocketServer;

beforeAll(async () => {
  sockets = await startSocketServer();
  const deps: SocketDeps = {
    store: {
      getRun: async () => null as unknown as RunRecord,
      readEvents: async () => [],
    },
    subscriptions,
    poster: sockets.poster,
    authenticate: async (token) => {
      const [sub, exp] = (token ?? '').split(':');
      if (!sub || exp === undefined) return null;
      return { caller: { principal: { kind: 'user', id: sub } }, exp: Number(exp) };
    },
    authorizeRead: async () => {},
    now: () => Date.now(),
    limits: LIMITS,
  };
  sockets.setHandler(createSocketHandler({ ...deps, logger: SILENT_LOG }));
});

afterAll(async () => {
  await sockets?.stop();
  clients.destroy();
});

/** The status the upgrade with `token` is answered with (101: opened, kept in `open`). */
function upgrade(token: string, open: WebSocket[]): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${sockets.url}/?token=${encodeURIComponent(token)}`);
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => {
      open.push(ws);
      resolve(101);
    });
    ws.on('error', () => {});
  });
}

describe('a token exp the runtime cannot hold', () => {
  it('is refused 401 at the upgrade, and leaves its principal every socket', async () => {
    const bob = user('bob');
    const alice = user('alice');
    const open: WebSocket[] = [];
    const soon = Math.floor(Date.now() / 1000) + 3600;
    for (const exp of ['1e300', String(Number.MAX_SAFE_INTEGER + 2), String(soon + 400 * 86_400), '1.5'])
      expect(await upgrade(`${bob}:${exp}`, open)).toBe(401);
    // bob still holds his two sockets, and alice hers.
    expect(await upgrade(`${bob}:${soon}`, open)).toBe(101);
    expect(await upgrade(`${bob}:${soon}`, open)).toBe(101);
    expect(await upgrade(`${bob}:${soon}`, open)).toBe(429);
    expect(await upgrade(`${alice}:${soon}`, open)).toBe(101);
    for (const ws of open) ws.close();
  });
});

describe('a connect that fails after it claimed a slot', () => {
  it('gives the slot back: the principal can still open as many as before', async () => {
    const bob = user('bob');
    const connection = (id: string, tokenExp: number) => ({
      connection_id: id,
      caller: { principal: { kind: 'user' as const, id: bob } },
      connected_at: Date.now(),
      token_exp: tokenExp,
    });
    // DynamoDB cannot hold a number of 1e300: the connection item's write fails after the claim.
    for (let i = 0; i < 3; i++)
      await expect(
        subscriptions.openConnection(connection(`bad-${bob}-${i}`, 1e300), 1, Date.now()),
      ).rejects.toThrow();
    const soon = Math.floor(Date.now() / 1000) + 3600;
    expect(await subscriptions.openConnection(connection(`good-${bob}`, soon), 1, Date.now())).toEqual({
      admitted: true,
    });
    await subscriptions.deleteConnection(`good-${bob}`);
  });
});
