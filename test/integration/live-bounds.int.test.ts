/**
 * The live socket's bounds with two principals, over the local stack's real parts: the `ws`
 * socket server, the live handler, the subscriptions in DynamoDB Local and real JWTs of the local
 * issuer. bob cannot open more sockets, hold more subscriptions or make the server replay a log
 * more often than the bounds allow, and alice is served throughout; a socket whose $disconnect
 * never came, or that is gone when the fan-out posts to it, gives its place back. The run store
 * is a log in memory (the run's log is not what is under test).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { WebSocket } from 'ws';
import { createAwsClients } from '../../lib/aws-clients.ts';
import type { LiveServerMessage, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { EngineError } from '../../lib/engine/errors.ts';
import { createSocketHandler } from '../../lib/handlers/live-socket.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { REFUSAL_MEMO_MS } from '../../lib/live/connect-gate.ts';
import { createDynamoSubscriptionStore } from '../../lib/live/dynamo-subscriptions.ts';
import { pumpRun } from '../../lib/live/fan-out.ts';
import type { LiveLimits } from '../../lib/live/ports.ts';
import { PROBE_AFTER_MS, type SocketDeps } from '../../lib/live/socket.ts';
import { identityOfToken } from '../../lib/local/identity.ts';
import { type LocalIssuer, loadOrCreateIssuer } from '../../lib/local/issuer.ts';
import { type SocketServer, startSocketServer } from '../../lib/local/socket-server.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
const subscriptions = createDynamoSubscriptionStore(clients.doc, local.tableName);
const LIMITS: LiveLimits = {
  maxConnections: 3,
  maxSubscriptions: 4,
  subscribesPerMinute: 10,
  replayBytes: 1 << 30,
  replayWindowMs: 10_000,
};

/** Each test's own principals and runs (the table is shared by every integration test). */
let tag = 0;
let alice: string;
let bob: string;
const logs = new Map<string, { owner: string; events: RunEvent[] }>();
/** readEvents calls, by run. */
const reads = new Map<string, number>();
const clock = { ms: Date.now() };

let dir: string;
let issuer: LocalIssuer;
let sockets: SocketServer;
let deps: SocketDeps;

function run(owner: string, events: number): string {
  const id = `run-${owner}-${logs.size}`;
  logs.set(id, {
    owner,
    events: Array.from({ length: events }, (_, i) => ({ seq: i + 1, kind: 'steer_queued', at: 0, data: {} })),
  });
  return id;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'live-bounds-'));
  issuer = await loadOrCreateIssuer(dir);
  sockets = await startSocketServer();
  deps = {
    store: {
      getRun: async (id) => {
        const log = logs.get(id);
        if (log === undefined) return null;
        return {
          run_id: id,
          status: 'running',
          inbox: [],
          last_seq: log.events.length,
        } as unknown as RunRecord;
      },
      readEvents: async (id, after, limit) => {
        reads.set(id, (reads.get(id) ?? 0) + 1);
        return (logs.get(id)?.events ?? []).filter((e) => e.seq > after).slice(0, limit);
      },
    },
    subscriptions,
    poster: sockets.poster,
    authenticate: (token) => identityOfToken(issuer, token),
    authorizeRead: async (runId, caller) => {
      if (logs.get(runId)?.owner !== caller.principal.id)
        throw new EngineError('run_not_found', 'no such run');
    },
    now: () => clock.ms,
    limits: LIMITS,
  };
  sockets.setHandler(createSocketHandler({ ...deps, logger: SILENT_LOG }));
});

beforeEach(() => {
  tag += 1;
  alice = `alice-${process.pid}-${tag}`;
  bob = `bob-${process.pid}-${tag}`;
  clock.ms = Date.now();
});

afterAll(async () => {
  await sockets?.stop();
  clients.destroy();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** An open socket of `sub` with what it received. */
async function open(sub: string) {
  const token = await issuer.sign({ sub, ttlSeconds: 3600 });
  const ws = new WebSocket(`${sockets.url}/?token=${encodeURIComponent(token)}`);
  const received: LiveServerMessage[] = [];
  let onMessage: (() => void) | undefined;
  ws.on('message', (data) => {
    received.push(JSON.parse(String(data)));
    onMessage?.();
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    ws.once('error', reject);
  });
  const until = async (n: number) => {
    while (received.length < n) await new Promise<void>((r) => (onMessage = r));
  };
  const subscribe = (runId: string, after = 0) =>
    ws.send(JSON.stringify({ action: 'subscribe', run_id: runId, after }));
  return { ws, received, closed, until, subscribe };
}

/**
 * The status an upgrade of `sub` is answered with: 101 when it opened (it is then closed again,
 * or kept in `keep` to be closed by the caller).
 */
async function upgradeStatus(sub: string, keep?: WebSocket[]): Promise<number> {
  const token = await issuer.sign({ sub, ttlSeconds: 3600 });
  return new Promise((resolve) => {
    const ws = new WebSocket(`${sockets.url}/?token=${encodeURIComponent(token)}`);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      if (keep === undefined) ws.close();
      else keep.push(ws);
    });
    ws.on('error', () => {});
  });
}

const errorsOf = (received: LiveServerMessage[]) =>
  received.flatMap((m) => (m.type === 'error' ? [m.code] : []));
const typesOf = (received: LiveServerMessage[]) => received.map((m) => m.type);

describe('the live socket bounds, alice and bob', { timeout: 20_000 }, () => {
  it("refuses bob's socket past his bound with 429 and still lets alice in", async () => {
    const bobs = await Promise.all(Array.from({ length: LIMITS.maxConnections }, () => open(bob)));

    expect(await upgradeStatus(bob)).toBe(429);
    const mine = await open(alice);
    const aliceRun = run(alice, 3);
    mine.subscribe(aliceRun);
    await mine.until(4);
    expect(typesOf(mine.received)).toEqual(['subscribed', 'event', 'event', 'event']);

    // A socket closed (its $disconnect delivered) gives its place back; a refused principal is
    // refused without a store read for REFUSAL_MEMO_MS, so each try comes that much later.
    bobs[0]?.ws.close();
    await bobs[0]?.closed;
    const later = () => {
      clock.ms += REFUSAL_MEMO_MS;
      return upgradeStatus(bob);
    };
    await expect.poll(later, { timeout: 5_000 }).toBe(101);
    for (const s of [...bobs, mine]) s.ws.close();
  });

  it('lets no more of bob’s parallel connects in than the bound', async () => {
    const opened: WebSocket[] = [];
    const statuses = await Promise.all(Array.from({ length: 12 }, () => upgradeStatus(bob, opened)));
    for (const ws of opened) ws.close();
    expect(statuses.filter((s) => s === 101).length).toBeLessThanOrEqual(LIMITS.maxConnections);
    expect(statuses.filter((s) => s === 101).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 101).every((s) => s === 429)).toBe(true);
  });

  it('holds at most maxSubscriptions runs per socket; a repeat subscribe replaces', async () => {
    const runs = Array.from({ length: LIMITS.maxSubscriptions + 2 }, () => run(bob, 1));
    const socket = await open(bob);
    for (const id of runs) socket.subscribe(id);
    socket.subscribe(runs[0] as string, 0); // already subscribed: replaced, not refused
    await socket.until(LIMITS.maxSubscriptions * 2 + 2 + 2);

    const subscribed = socket.received.flatMap((m) => (m.type === 'subscribed' ? [m.run_id] : []));
    expect(subscribed).toEqual([...runs.slice(0, LIMITS.maxSubscriptions), runs[0]]);
    expect(errorsOf(socket.received)).toEqual(['too_many_subscriptions', 'too_many_subscriptions']);
    const refused = socket.received.flatMap((m) => (m.type === 'error' ? [m.run_id] : []));
    expect(refused).toEqual(runs.slice(LIMITS.maxSubscriptions));

    // After an unsubscribe there is room for one more.
    socket.ws.send(JSON.stringify({ action: 'unsubscribe', run_id: runs[1] }));
    socket.subscribe(runs.at(-1) as string);
    const before = socket.received.length;
    await socket.until(before + 2);
    expect(socket.received.slice(before)).toEqual([
      expect.objectContaining({ type: 'subscribed', run_id: runs.at(-1) }),
      expect.objectContaining({ type: 'event', run_id: runs.at(-1) }),
    ]);
    socket.ws.close();
  });

  it("replays a log at most subscribesPerMinute times a minute for bob's flood of subscribes", async () => {
    const flooded = run(bob, 250); // three pages of FAN_OUT_PAGE
    const socket = await open(bob);
    const floods = 200;
    for (let i = 0; i < floods; i += 1) socket.subscribe(flooded);
    await expect
      .poll(() => socket.received.filter((m) => m.type !== 'event').length, { timeout: 15_000 })
      .toBe(floods);

    const answers = socket.received.filter((m) => m.type !== 'event');
    expect(answers.filter((m) => m.type === 'subscribed')).toHaveLength(LIMITS.subscribesPerMinute);
    expect(errorsOf(socket.received)).toEqual(
      Array(floods - LIMITS.subscribesPerMinute).fill('subscribe_rate_exceeded'),
    );
    expect(reads.get(flooded)).toBeLessThanOrEqual(LIMITS.subscribesPerMinute * 3);

    // The next minute counts afresh.
    clock.ms += 60_000;
    socket.subscribe(flooded, 249);
    const before = socket.received.length;
    await socket.until(before + 2);
    expect(typesOf(socket.received.slice(before))).toEqual(['subscribed', 'event']);
    socket.ws.close();
  });

  it("frees the places of bob's sockets whose $disconnect never came, once they are old enough to ask after", async () => {
    const bobs = await Promise.all(Array.from({ length: LIMITS.maxConnections }, () => open(bob)));
    const mine = await open(alice);
    sockets.dropConnections({ deliverDisconnect: false });
    await Promise.all([...bobs, mine].map((s) => s.closed));

    expect(await upgradeStatus(bob)).toBe(429); // too young to be asked after
    clock.ms += PROBE_AFTER_MS;
    expect(await upgradeStatus(bob)).toBe(101);
  });

  it('drops a subscription whose connection is gone when the fan-out posts to it, and its place', async () => {
    const bobRun = run(bob, 1);
    const bobs = await Promise.all(Array.from({ length: LIMITS.maxConnections }, () => open(bob)));
    for (const s of bobs) s.subscribe(bobRun);
    await Promise.all(bobs.map((s) => s.until(2)));
    sockets.dropConnections({ deliverDisconnect: false });
    await Promise.all(bobs.map((s) => s.closed));
    logs.get(bobRun)?.events.push({ seq: 2, kind: 'steer_queued', at: 0, data: {} });

    const report = await pumpRun(deps, bobRun);

    expect(report).toMatchObject({ subscribers: LIMITS.maxConnections, gone: LIMITS.maxConnections });
    expect(await subscriptions.subscribers(bobRun)).toEqual([]);
    expect(await upgradeStatus(bob)).toBe(101); // no probe needed: the fan-out gave the places back
  });
});
