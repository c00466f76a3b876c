/**
 * Random principals over the live socket: alice, bob and carol connect (with tokens that expire),
 * subscribe to their own and each other's runs from random cursors, unsubscribe, disconnect,
 * while the runs' logs grow and the fan-out pumps. Whatever the sequence: nobody is sent
 * anything of a run they may not read, nor anything after their token's exp; no socket holds
 * more runs, and no principal more sockets, than the bounds; no socket has more subscribes
 * served in a minute than its rate; within one subscription each seq is sent at most once,
 * in order. Over lib/live/socket.ts and the fan-out with the in-memory subscription store.
 *
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LiveServerMessage, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { EngineError } from '../../lib/engine/errors.ts';
import { pumpRun } from '../../lib/live/fan-out.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';
import type { LiveLimits } from '../../lib/live/ports.ts';
import { connect, disconnect, receive, type SocketDeps } from '../../lib/live/socket.ts';

const PRINCIPALS = ['alice', 'bob', 'carol'] as const;
const RUNS = ['run-alice', 'run-bob', 'run-carol', 'run-alice-2', 'run-none'] as const;
const LIMITS: LiveLimits = {
  maxConnections: 2,
  maxSubscriptions: 1,
  subscribesPerMinute: 3,
  replayBytes: 1 << 30,
  replayWindowMs: 10_000,
};

const op = fc.oneof(
  fc.record({
    kind: fc.constant('connect' as const),
    who: fc.constantFrom(...PRINCIPALS),
    conn: fc.integer({ min: 0, max: 3 }),
    ttlS: fc.integer({ min: 1, max: 300 }),
  }),
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('subscribe' as const),
      conn: fc.integer({ min: 0, max: 3 }),
      run: fc.constantFrom(...RUNS),
      after: fc.integer({ min: 0, max: 3 }),
    }),
  },
  fc.record({
    kind: fc.constant('unsubscribe' as const),
    conn: fc.integer({ min: 0, max: 3 }),
    run: fc.constantFrom(...RUNS),
  }),
  fc.record({ kind: fc.constant('disconnect' as const), conn: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('grow' as const), run: fc.constantFrom(...RUNS) }),
  fc.record({ kind: fc.constant('pump' as const), run: fc.constantFrom(...RUNS) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 40_000 }) }),
);

type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** Plays `ops` and checks what every connection was sent. */
async function play(ops: Op[]): Promise<void> {
  const owner = (run: string) => /^run-([a-z]+)/.exec(run)?.[1];
  const logs = new Map<string, RunEvent[]>(RUNS.filter((r) => r !== 'run-none').map((r) => [r, []]));
  const clock = { ms: 1_000_000 };
  const subscriptions = createMemorySubscriptionStore();
  /** Every message sent, with who had opened the connection then and the exp of its token (s). */
  const sent: {
    conn: string;
    at: number;
    who: string;
    exp: number;
    n: number;
    message: LiveServerMessage;
  }[] = [];
  /** Who opened each connection and its token's exp (s), once admitted. */
  const opened = new Map<string, { who: string; exp: number; n: number }>();
  const deps: SocketDeps = {
    store: {
      getRun: async (id) => {
        const log = logs.get(id);
        return log === undefined
          ? null
          : ({ run_id: id, status: 'running', inbox: [], last_seq: log.length } as unknown as RunRecord);
      },
      readEvents: async (id, after, limit) =>
        (logs.get(id) ?? []).filter((e) => e.seq > after).slice(0, limit),
    },
    subscriptions,
    poster: {
      async post(conn, message) {
        const by = opened.get(conn);
        if (by === undefined) return 'gone';
        sent.push({ conn, at: clock.ms, ...by, message });
        return 'sent';
      },
      async close(conn) {
        opened.delete(conn);
      },
      alive: async (conn) => opened.has(conn),
    },
    authenticate: async (token) => {
      const [who, exp] = (token ?? '').split(':');
      return who === undefined
        ? null
        : { caller: { principal: { kind: 'user', id: who } }, exp: Number(exp) };
    },
    authorizeRead: async (runId, caller) => {
      if (!logs.has(runId) || owner(runId) !== caller.principal.id)
        throw new EngineError('run_not_found', 'no such run');
    },
    now: () => clock.ms,
    limits: LIMITS,
  };

  let connects = 0;
  for (const o of ops) {
    const conn = 'conn' in o ? `c${o.conn}` : '';
    if (o.kind === 'connect') {
      if (opened.has(conn) || (await subscriptions.getConnection(conn)) !== null) continue;
      const exp = Math.floor(clock.ms / 1000) + o.ttlS;
      if ((await connect(deps, conn, `${o.who}:${exp}`)) !== 'connected') continue;
      connects += 1;
      opened.set(conn, { who: o.who, exp, n: connects });
    } else if (o.kind === 'subscribe' || o.kind === 'unsubscribe') {
      if (!opened.has(conn)) continue;
      const message =
        o.kind === 'subscribe'
          ? { action: o.kind, run_id: o.run, after: o.after }
          : { action: o.kind, run_id: o.run };
      await receive(deps, conn, JSON.stringify(message));
    } else if (o.kind === 'disconnect') {
      opened.delete(conn);
      await disconnect(deps, conn);
    } else if (o.kind === 'grow') {
      const log = logs.get(o.run);
      log?.push({ seq: log.length + 1, kind: 'steer_queued', at: 0, data: {} });
    } else if (o.kind === 'pump') await pumpRun(deps, o.run);
    else clock.ms += o.ms;

    // The bounds hold at every step.
    const live = [...opened].filter(([, c]) => c.exp * 1000 > clock.ms);
    for (const who of PRINCIPALS)
      expect(live.filter(([, c]) => c.who === who).length).toBeLessThanOrEqual(LIMITS.maxConnections);
    for (const [id] of opened) {
      const held = [...subscriptions.held.values()].filter((s) => s.connection_id === id);
      expect(held.length).toBeLessThanOrEqual(LIMITS.maxSubscriptions);
    }
  }

  // Per connection (an id may be connected again after it ended: each time is a connection of its own).
  for (const n of new Set(sent.map((s) => s.n))) {
    const minutes = new Map<number, number>();
    const lastSeq = new Map<string, number>();
    for (const { at, message } of sent.filter((s) => s.n === n)) {
      // Every subscribe within the rate is answered with `subscribed` or a refusal naming its run.
      const counted =
        message.type === 'subscribed' ||
        (message.type === 'error' &&
          message.run_id !== undefined &&
          message.code !== 'subscribe_rate_exceeded');
      if (counted) {
        const minute = Math.floor(at / 60_000);
        minutes.set(minute, (minutes.get(minute) ?? 0) + 1);
        expect(minutes.get(minute)).toBeLessThanOrEqual(LIMITS.subscribesPerMinute);
      }
      if (message.type === 'subscribed') lastSeq.set(message.run_id, message.after);
      if (message.type === 'event') {
        // Within one subscription: in order, each seq once.
        expect(message.event.seq).toBeGreaterThan(lastSeq.get(message.run_id) ?? -1);
        lastSeq.set(message.run_id, message.event.seq);
      }
    }
  }
  // Nobody is sent anything of a run they may not read, nor any event at or after their exp.
  for (const { message, at, who, exp } of sent) {
    if (message.type === 'event' || message.type === 'subscribed') expect(owner(message.run_id)).toBe(who);
    if (message.type === 'event') expect(at).toBeLessThan(exp * 1000);
  }
}

describe('the live socket with random principals', () => {
  it('sends nobody what they may not read, and keeps every bound', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 30, maxLength: 80, size: 'max' }), async (ops) => play(ops)),
      { numRuns: 150 },
    );
  });
});
