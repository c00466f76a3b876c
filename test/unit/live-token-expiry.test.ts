/**
 * A live socket lives no longer than its token, and a token without `exp` opens nothing, over
 * the local stack's real parts: the `ws` socket server, the live handler, the local issuer and
 * its JWT authorizer before the HTTP app. The socket's clock is injected (no sleeping); the
 * tokens are real JWTs of the local issuer.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handle } from 'hono/aws-lambda';
import { importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { followLive } from '../../lib/client/live.ts';
import type { LiveServerMessage, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { EngineError } from '../../lib/engine/errors.ts';
import { createSocketHandler } from '../../lib/handlers/live-socket.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createHttpApp, jwtClaimsAuth } from '../../lib/http/index.ts';
import { pumpRun } from '../../lib/live/fan-out.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';
import type { SocketDeps } from '../../lib/live/socket.ts';
import { type ApiHandler, type Gateway, startGateway } from '../../lib/local/gateway.ts';
import { identityOfToken, withJwtAuthorizer } from '../../lib/local/identity.ts';
import {
  ISSUER_KEY_FILE,
  LOCAL_AUDIENCE,
  LOCAL_ISSUER,
  type LocalIssuer,
  loadOrCreateIssuer,
} from '../../lib/local/issuer.ts';
import { type SocketServer, startSocketServer } from '../../lib/local/socket-server.ts';

const RUN = 'run-expiry';

let dir: string;
let issuer: LocalIssuer;
/** A token of the issuer's own key, correctly signed, with no `exp`. */
let noExpToken: string;
let sockets: SocketServer;
let gateway: Gateway;
const clock = { ms: Date.now() };
const events: RunEvent[] = [];
const record = { run_id: RUN, status: 'running', inbox: [], last_seq: 0 } as unknown as RunRecord;
const subscriptions = createMemorySubscriptionStore();
let deps: SocketDeps;
/** The close code the server uses instead of the one asked for (API Gateway's DeleteConnection picks its own), or null. */
let closeAs: number | null = null;

function grow(by: number) {
  for (let i = 0; i < by; i += 1)
    events.push({ seq: events.length + 1, kind: 'steer_queued', at: 0, data: {} });
  record.last_seq = events.length;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'live-expiry-'));
  issuer = await loadOrCreateIssuer(dir);
  const { private_jwk } = JSON.parse(readFileSync(join(dir, ISSUER_KEY_FILE), 'utf8'));
  noExpToken = await new SignJWT({ 'cognito:groups': ['admin'], token_use: 'access' })
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT' })
    .setSubject('mallory')
    .setIssuer(LOCAL_ISSUER)
    .setAudience(LOCAL_AUDIENCE)
    .setIssuedAt()
    .sign(await importJWK(private_jwk, 'ES256'));

  sockets = await startSocketServer();
  deps = {
    store: {
      getRun: async (id) => (id === RUN ? structuredClone(record) : null),
      readEvents: async (_id, after, limit) => events.filter((e) => e.seq > after).slice(0, limit),
    },
    subscriptions,
    poster: {
      post: (id, message) => sockets.poster.post(id, message),
      close: (id, code, reason) =>
        sockets.poster.close(id, closeAs ?? code, closeAs === null ? reason : 'deleted'),
      alive: (id) => sockets.poster.alive(id),
    },
    authenticate: (token) => identityOfToken(issuer, token),
    authorizeRead: async () => {},
    now: () => clock.ms,
  };
  sockets.setHandler(createSocketHandler({ ...deps, logger: SILENT_LOG }));

  // The HTTP side: the local JWT authorizer before the app; any run read is 404 once authenticated.
  const missing = async () => {
    throw new EngineError('run_not_found', 'no such run');
  };
  const engine = new Proxy({}, { get: () => missing });
  const app = createHttpApp({
    engine: engine as never,
    functions: {} as never,
    tools: { list: async () => [] } as never,
    auth: jwtClaimsAuth(),
    log: () => {},
  });
  const lambda = handle(app);
  const api: ApiHandler = async (event, context) => (await lambda(event as never, context)) as never;
  gateway = await startGateway({ handler: withJwtAuthorizer(issuer, api), port: 0 });
  grow(2);
});

afterAll(async () => {
  await Promise.all([sockets?.stop(), gateway?.stop()]);
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** An open socket with what it received and how it closed. */
async function open(token: string) {
  const ws = new WebSocket(`${sockets.url}/?token=${encodeURIComponent(token)}`);
  const received: LiveServerMessage[] = [];
  let onMessage: (() => void) | undefined;
  ws.on('message', (data) => {
    received.push(JSON.parse(String(data)));
    onMessage?.();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const until = async (n: number) => {
    while (received.length < n) await new Promise<void>((r) => (onMessage = r));
  };
  return { ws, received, closed, until };
}

/** The status an upgrade with `token` is refused with. */
function refusedWith(token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${sockets.url}/?token=${encodeURIComponent(token)}`);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => reject(new Error('the socket opened')));
    ws.on('error', () => {});
  });
}

const subscribe = (after: number) => JSON.stringify({ action: 'subscribe', run_id: RUN, after });

describe('a live socket whose token expired', { timeout: 5_000 }, () => {
  it('refuses a subscribe after exp with an error token_expired and close 4001', async () => {
    clock.ms = Date.now();
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 60 });
    const exp = (await issuer.verify(token))?.exp ?? 0;
    const socket = await open(token);
    socket.ws.send(subscribe(0));
    await socket.until(3); // subscribed, seq 1, seq 2

    clock.ms = exp * 1000 + 5_000;
    socket.ws.send(subscribe(2));

    expect(await socket.closed).toEqual({ code: 4001, reason: 'token_expired' });
    expect(socket.received.slice(3)).toEqual([
      expect.objectContaining({ type: 'error', code: 'token_expired' }),
    ]);
    expect(await subscriptions.subscribers(RUN)).toEqual([]);
  });

  it('is closed at the first push after exp, and sent no event', async () => {
    clock.ms = Date.now();
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 60 });
    const exp = (await issuer.verify(token))?.exp ?? 0;
    const socket = await open(token);
    socket.ws.send(subscribe(record.last_seq));
    await socket.until(1);
    expect(socket.received[0]).toMatchObject({ type: 'subscribed' });

    grow(1);
    clock.ms = exp * 1000;
    const report = await pumpRun(deps, RUN);

    expect(report).toMatchObject({ sent: 0, expired: 1 });
    expect(await socket.closed).toEqual({ code: 4001, reason: 'token_expired' });
    expect(socket.received.map((m) => m.type)).toEqual(['subscribed', 'error']);
  });
});

describe('the client following a run', { timeout: 5_000 }, () => {
  /** Follows RUN with a 60 s token; once it holds the last event, the log grows past the token's exp. */
  async function followUntilExpired() {
    clock.ms = Date.now();
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 60 });
    const exp = (await issuer.verify(token))?.exp ?? 0;
    const connects: number[] = [];
    const seen: number[] = [];
    const follow = (async () => {
      for await (const event of followLive({ baseUrl: gateway.url, wsUrl: sockets.url, token }, RUN, {
        onConnect: (after) => connects.push(after),
        reconnectMs: 10,
      })) {
        seen.push(event.seq);
        if (event.seq === record.last_seq) {
          grow(1);
          clock.ms = exp * 1000;
          void pumpRun(deps, RUN);
        }
      }
    })();
    const outcome = await follow.then(
      () => null,
      (err: unknown) => err,
    );
    return { outcome, connects, seen };
  }

  it('throws ApiError token_expired on close 4001, without reconnecting', async () => {
    const { outcome, connects, seen } = await followUntilExpired();
    expect(outcome).toMatchObject({ code: 'token_expired' });
    expect(seen).toEqual(Array.from({ length: record.last_seq - 1 }, (_, i) => i + 1));
    expect(connects).toEqual([0]);
  });

  it("throws token_expired on the error message alone, when the close code is the gateway's", async () => {
    closeAs = 1000;
    try {
      const { outcome, connects } = await followUntilExpired();
      expect(outcome).toMatchObject({ code: 'token_expired' });
      expect(connects).toEqual([0]);
    } finally {
      closeAs = null;
    }
  });
});

describe('a correctly signed local token without exp', () => {
  it('is refused by the issuer, the socket (401 at the upgrade) and the HTTP API (401)', async () => {
    clock.ms = Date.now();
    const good = await issuer.sign({ sub: 'alice' });
    expect(await issuer.verify(noExpToken)).toBeNull();
    expect(await issuer.verify(good)).toMatchObject({ sub: 'alice', exp: expect.any(Number) });

    expect(await refusedWith(noExpToken)).toBe(401);
    const read = (token: string) =>
      fetch(`${gateway.url}/runs/${RUN}`, { headers: { authorization: `Bearer ${token}` } });
    const refused = await read(noExpToken);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'unauthenticated' });
    expect((await read(good)).status).toBe(404); // the same request with a token that has exp gets in
  });

  it('is never signed: every token of the issuer has exp, and a ttl that is not a positive integer is refused', async () => {
    const payload = await issuer.verify(await issuer.sign({ sub: 'bob', ttlSeconds: 5 }));
    expect((payload?.exp ?? 0) - (payload?.iat ?? 0)).toBe(5);
    for (const ttlSeconds of [0, -1, 1.5, Number.NaN]) {
      await expect(issuer.sign({ sub: 'bob', ttlSeconds })).rejects.toMatchObject({
        code: 'token_invalid_request',
        message: expect.stringContaining('ttlSeconds'),
      });
    }
  });
});
