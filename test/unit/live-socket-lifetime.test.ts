/**
 * A live socket's life is bounded as API Gateway bounds it, and the client library follows a run
 * through every end without losing or repeating an event: the local socket server's idle timeout
 * and maximum connection duration (short here), and the close at the token's exp (a timer,
 * lib/local/socket-expiry.ts), after which a client with a token provider reconnects with a
 * fresh token. Real parts: the `ws` server, the live handler, the local issuer's JWTs, the
 * platform WebSocket of the client; the run's log is in memory and grows while the client
 * follows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { followLive } from '../../lib/client/live.ts';
import type { LiveServerMessage, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { createSocketHandler } from '../../lib/handlers/live-socket.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { pumpRun } from '../../lib/live/fan-out.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';
import type { SocketDeps } from '../../lib/live/socket.ts';
import { identityOfToken } from '../../lib/local/identity.ts';
import { type LocalIssuer, loadOrCreateIssuer } from '../../lib/local/issuer.ts';
import { withExpiryTimers } from '../../lib/local/socket-expiry.ts';
import {
  API_GATEWAY_MAX_MESSAGE_BYTES,
  type SocketServer,
  type SocketServerOptions,
  startSocketServer,
} from '../../lib/local/socket-server.ts';

const RUN = 'run-lifetime';
let dir: string;
let issuer: LocalIssuer;
let sockets: SocketServer | undefined;
let events: RunEvent[] = [];
let status = 'running';
const subscriptions = createMemorySubscriptionStore();
let deps: SocketDeps;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'live-lifetime-'));
  issuer = await loadOrCreateIssuer(dir);
});

afterEach(async () => {
  await sockets?.stop();
  sockets = undefined;
});

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** A socket server with `options`, the live handler and the expiry timers; a fresh log of `n` events. */
async function serve(options: SocketServerOptions, n: number): Promise<SocketServer> {
  events = Array.from({ length: n }, (_, i) => ({ seq: i + 1, kind: 'steer_queued', at: 0, data: {} }));
  status = 'running';
  const server = await startSocketServer(options);
  deps = {
    store: {
      getRun: async (id) =>
        id === RUN
          ? ({ run_id: RUN, status, inbox: [], last_seq: events.length } as unknown as RunRecord)
          : null,
      readEvents: async (_id, after, limit) => events.filter((e) => e.seq > after).slice(0, limit),
    },
    subscriptions,
    poster: server.poster,
    authenticate: (token) => identityOfToken(issuer, token),
    authorizeRead: async () => {},
    now: () => Date.now(),
  };
  server.setHandler(
    withExpiryTimers(createSocketHandler({ ...deps, logger: SILENT_LOG }), { ...deps, logger: SILENT_LOG }),
  );
  sockets = server;
  return server;
}

/** Grows the log one event at a time, pumping after each, until it holds `total`; then the run ends. */
async function produce(total: number, everyMs: number): Promise<void> {
  while (events.length < total) {
    await new Promise((r) => setTimeout(r, everyMs));
    events.push({ seq: events.length + 1, kind: 'steer_queued', at: 0, data: {} });
    await pumpRun(deps, RUN);
  }
  status = 'completed';
  await pumpRun(deps, RUN);
}

/** Follows RUN to its end while `produce` grows it; the seqs yielded and the cursors connected from. */
async function followWhileGrowing(server: SocketServer, total: number, tokenProvider: () => Promise<string>) {
  const seen: number[] = [];
  const connects: number[] = [];
  const producing = produce(total, 25);
  for await (const event of followLive(
    { baseUrl: 'http://127.0.0.1:1', wsUrl: server.url, tokenProvider },
    RUN,
    {
      onConnect: (after) => connects.push(after),
      reconnectMs: 10,
    },
  ))
    seen.push(event.seq);
  await producing;
  return { seen, connects };
}

const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('the local live socket, as API Gateway bounds it', { timeout: 15_000 }, () => {
  it('closes a socket at its token exp with 4001 token_expired; the token opens no socket again', async () => {
    const server = await serve({}, 2);
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 2 });
    const ws = new WebSocket(`${server.url}/?token=${encodeURIComponent(token)}`);
    const received: LiveServerMessage[] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ action: 'subscribe', run_id: RUN, after: 0 }));

    expect(await closed).toEqual({ code: 4001, reason: 'token_expired' });
    expect(received.map((m) => m.type)).toEqual(['subscribed', 'event', 'event', 'error']);
    expect(received.at(-1)).toMatchObject({ code: 'token_expired' });
    expect(await subscriptions.subscribers(RUN)).toEqual([]);
    const again = await new Promise<number>((resolve) => {
      const retry = new WebSocket(`${server.url}/?token=${encodeURIComponent(token)}`);
      retry.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      retry.on('open', () => resolve(101));
      retry.on('error', () => {});
    });
    expect(again).toBe(401);
  });

  it('closes a connection that sends a frame the protocol refuses, and keeps serving the others', async () => {
    const server = await serve({}, 2);
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 600 });
    const open = async () => {
      const ws = new WebSocket(`${server.url}/?token=${encodeURIComponent(token)}`);
      ws.on('error', () => {});
      await new Promise((resolve) => ws.once('open', resolve));
      return ws;
    };
    const bystander = await open();
    const received: LiveServerMessage[] = [];
    bystander.on('message', (data) => received.push(JSON.parse(String(data))));
    const attacker = await open();
    const closed = new Promise<number>((resolve) => attacker.on('close', (code) => resolve(code)));
    // A text frame that is not UTF-8: the server must refuse it, not die of it.
    attacker.send(Buffer.from([0xc3, 0x28]), { binary: false });
    expect(await closed).toBe(1007);

    bystander.send(JSON.stringify({ action: 'subscribe', run_id: RUN, after: 0 }));
    await expect.poll(() => received.map((m) => m.type)).toEqual(['subscribed', 'event', 'event']);
    const another = await open();
    expect(another.readyState).toBe(WebSocket.OPEN);
    bystander.close();
    another.close();
  });

  it("closes with 1009 a connection whose frame is over API Gateway's 128 KB, and serves a subscribe", async () => {
    const server = await serve({}, 2);
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 600 });
    const open = async () => {
      const ws = new WebSocket(`${server.url}/?token=${encodeURIComponent(token)}`);
      ws.on('error', () => {});
      await new Promise((resolve) => ws.once('open', resolve));
      return ws;
    };
    const large = await open();
    const closed = new Promise<number>((resolve) => large.on('close', (code) => resolve(code)));
    const padding = 'x'.repeat(API_GATEWAY_MAX_MESSAGE_BYTES);
    large.send(JSON.stringify({ action: 'subscribe', run_id: RUN, after: 0, padding }));
    expect(await closed).toBe(1009);

    const normal = await open();
    const received: LiveServerMessage[] = [];
    normal.on('message', (data) => received.push(JSON.parse(String(data))));
    normal.send(JSON.stringify({ action: 'subscribe', run_id: RUN, after: 0 }));
    await expect.poll(() => received.map((m) => m.type)).toEqual(['subscribed', 'event', 'event']);
    normal.close();
  });

  it("keeps open a socket whose token's exp lies beyond setTimeout's reach (about 24.8 days)", async () => {
    const server = await serve({}, 1);
    const token = await issuer.sign({ sub: 'alice', ttlSeconds: 40 * 86_400 });
    const ws = new WebSocket(`${server.url}/?token=${encodeURIComponent(token)}`);
    const received: LiveServerMessage[] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    await new Promise((resolve) => ws.once('open', resolve));
    for (let i = 0; i < 3; i += 1) {
      ws.send(JSON.stringify({ action: 'subscribe', run_id: RUN, after: 0 }));
      await expect.poll(() => received.length).toBe(2 * (i + 1));
    }
    expect(received.map((m) => m.type)).toEqual([
      'subscribed',
      'event',
      'subscribed',
      'event',
      'subscribed',
      'event',
    ]);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });

  it.each([
    ['the idle timeout', { idleMs: 60 }],
    ['the maximum connection duration', { maxConnectionMs: 120 }],
  ])(
    'closes a socket at %s (1001); the client reconnects and yields each seq once',
    async (_name, options) => {
      const server = await serve(options, 3);
      const closes: number[] = [];
      const token = await issuer.sign({ sub: 'alice', ttlSeconds: 600 });
      const probe = new WebSocket(`${server.url}/?token=${encodeURIComponent(token)}`);
      probe.on('close', (code) => closes.push(code));

      const { seen, connects } = await followWhileGrowing(server, 40, async () => token);

      expect(seen).toEqual(oneTo(40));
      expect(connects.length).toBeGreaterThan(1);
      expect(connects).toEqual([...connects].sort((a, b) => a - b));
      await expect.poll(() => closes).toEqual([1001]);
    },
  );

  it('follows through the close at token exp with fresh tokens from the provider, each seq once', async () => {
    const server = await serve({}, 2);
    const issued: string[] = [];
    const provider = async () => {
      const token = await issuer.sign({ sub: 'alice', ttlSeconds: 1 });
      issued.push(token);
      return token;
    };

    const { seen, connects } = await followWhileGrowing(server, 90, provider);

    expect(seen).toEqual(oneTo(90));
    expect(connects.length).toBeGreaterThan(1);
    expect(issued.length).toBeGreaterThanOrEqual(connects.length); // a fresh token at each connect
  });
});
