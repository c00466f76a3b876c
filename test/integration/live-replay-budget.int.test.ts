/**
 * The live socket's replay budget with two principals, over the local stack's real parts: the
 * `ws` socket server, the live handler, the subscriptions (and the budget) in DynamoDB Local and
 * real JWTs of the local issuer. bob floods subscribes to his large runs from two sockets: the
 * catch-up bytes he is sent in one window stay within his budget (and one part per catch-up),
 * and past it he is refused `replay_budget_exceeded` with `retry_after_ms`; alice, in the same
 * window, is served her whole catch-up at once; bob's followLive still yields every seq exactly
 * once. The run store is a log in memory (the run's log is not what is under test).
 * docs/guides/live-streams.md, "Replay budget".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WebSocket } from 'ws';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { followLive } from '../../lib/client/live.ts';
import {
  jsonBytes,
  type LiveServerMessage,
  type RunEvent,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { EngineError } from '../../lib/engine/errors.ts';
import { createSocketHandler } from '../../lib/handlers/live-socket.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { createDynamoSubscriptionStore } from '../../lib/live/dynamo-subscriptions.ts';
import { REPLAY_PART_BYTES } from '../../lib/live/fan-out.ts';
import type { LiveLimits } from '../../lib/live/ports.ts';
import { identityOfToken } from '../../lib/local/identity.ts';
import { type LocalIssuer, loadOrCreateIssuer } from '../../lib/local/issuer.ts';
import { type SocketServer, startSocketServer } from '../../lib/local/socket-server.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
const subscriptions = createDynamoSubscriptionStore(clients.doc, local.tableName);
const LIMITS: LiveLimits = {
  maxConnections: 4,
  maxSubscriptions: 8,
  subscribesPerMinute: 60,
  replayBytes: 200_000,
  replayWindowMs: 1_000,
};
/** Events of about 30 KB each: sent whole (under MAX_LIVE_FRAME_BYTES), 20 of them 600 KB a run. */
const PAD = 'x'.repeat(30_000);
const EVENTS = 20;

const alice = `alice-${process.pid}-replay`;
const bob = `bob-${process.pid}-replay`;
const logs = new Map<string, { owner: string; events: RunEvent[] }>();
/** The handler's clock: frozen (one replay window) while `frozen` is set, else the real one. */
let frozen: number | null = null;

let dir: string;
let issuer: LocalIssuer;
let sockets: SocketServer;

function run(owner: string, events: number): string {
  const id = `run-${owner}-${logs.size}`;
  logs.set(id, {
    owner,
    events: Array.from({ length: events }, (_, i) => ({
      seq: i + 1,
      kind: 'steer_queued',
      at: 0,
      data: { pad: PAD },
    })),
  });
  return id;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'live-replay-'));
  issuer = await loadOrCreateIssuer(dir);
  sockets = await startSocketServer();
  sockets.setHandler(
    createSocketHandler({
      store: {
        getRun: async (id) => {
          const log = logs.get(id);
          if (log === undefined) return null;
          // Ended with its log complete: a catch-up that reaches the end is followed by `settled`.
          return {
            run_id: id,
            status: 'completed',
            inbox: [],
            last_seq: log.events.length,
          } as unknown as RunRecord;
        },
        readEvents: async (id, after, limit) =>
          (logs.get(id)?.events ?? []).filter((e) => e.seq > after).slice(0, limit),
      },
      subscriptions,
      poster: sockets.poster,
      authenticate: (token) => identityOfToken(issuer, token),
      authorizeRead: async (runId, caller) => {
        if (logs.get(runId)?.owner !== caller.principal.id)
          throw new EngineError('run_not_found', 'no such run');
      },
      now: () => frozen ?? Date.now(),
      limits: LIMITS,
      logger: SILENT_LOG,
    }),
  );
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
  ws.on('message', (data) => received.push(JSON.parse(String(data))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const subscribe = (runId: string, after = 0) =>
    ws.send(JSON.stringify({ action: 'subscribe', run_id: runId, after }));
  return { ws, received, subscribe };
}

/** Whether the messages from `from` on answer one subscribe whole: settled, or refused. */
const answered = (received: LiveServerMessage[], from: number) =>
  received.slice(from).some((m) => m.type === 'settled' || m.type === 'error');

const eventBytes = (received: LiveServerMessage[]) =>
  received.reduce((n, m) => n + (m.type === 'event' ? jsonBytes(m) : 0), 0);

describe('the live replay budget, alice and bob', { timeout: 30_000 }, () => {
  it("refuses bob's catch-ups past his byte budget, serves alice at once, and bob's follow still gets every seq once", async () => {
    const bobRuns = [run(bob, EVENTS), run(bob, EVENTS), run(bob, EVENTS)];
    const aliceRun = run(alice, 5);
    frozen = Date.now();

    // bob, from two sockets, subscribes to his runs from 0 again and again within one window.
    const bobs = [await open(bob), await open(bob)];
    for (let i = 0; i < 6; i += 1) {
      const socket = bobs[i % 2] as (typeof bobs)[number];
      const from = socket.received.length;
      socket.subscribe(bobRuns[i % bobRuns.length] as string);
      await expect.poll(() => answered(socket.received, from)).toBe(true);
    }
    const bobGot = bobs.flatMap((s) => s.received);
    const refusals = bobGot.filter(
      (m): m is Extract<LiveServerMessage, { type: 'error' }> => m.type === 'error',
    );
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(refusal.code).toBe('replay_budget_exceeded');
      expect(bobRuns).toContain(refusal.run_id);
      expect(refusal.retry_after_ms).toBeGreaterThan(0);
      expect(refusal.retry_after_ms).toBeLessThanOrEqual(LIMITS.replayWindowMs);
    }
    // Six catch-ups of 600 KB asked; what was sent stays within the budget and one part.
    expect(eventBytes(bobGot)).toBeLessThanOrEqual(LIMITS.replayBytes + REPLAY_PART_BYTES);

    // alice, in the same window, is served whole and at once.
    const mine = await open(alice);
    mine.subscribe(aliceRun);
    await expect.poll(() => answered(mine.received, 0)).toBe(true);
    expect(mine.received.map((m) => m.type)).toEqual(['subscribed', ...Array(5).fill('event'), 'settled']);
    expect(mine.received.flatMap((m) => (m.type === 'event' ? [m.event.seq] : []))).toEqual([1, 2, 3, 4, 5]);
    for (const s of [...bobs, mine]) s.ws.close();

    // Time moves again: bob's follow is refused along the way and subscribes again when told,
    // and yields each seq of his run exactly once, in order.
    frozen = null;
    const token = await issuer.sign({ sub: bob, ttlSeconds: 3600 });
    const seqs: number[] = [];
    for await (const event of followLive(
      { baseUrl: 'http://127.0.0.1:9', wsUrl: sockets.url, token },
      bobRuns[0] as string,
    ))
      seqs.push(event.seq);
    expect(seqs).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));
  });
});
