/**
 * The live fan-out and socket (lib/live/fan-out.ts, socket.ts) over an in-memory log and
 * subscription store: each seq reaches a subscription once while several pumps run, a cursor
 * beyond the log's head is refused, the client's ordering keeps each seq once, in order
 *, and a socket is served nothing after its token's `exp`.
 */
import { describe, expect, it } from 'vitest';
import { seqOrder } from '../../lib/client/live.ts';
import type { LiveServerMessage, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { type FanOutDeps, pumpRun } from '../../lib/live/fan-out.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';
import type { SubscriptionStore } from '../../lib/live/ports.ts';
import { connect, receive, type SocketDeps } from '../../lib/live/socket.ts';

const RUN = 'run-fan-out';
/** A token `exp` (s) far from every clock of these tests. */
const FAR = 4_000_000_000;

/** A run whose log holds seq 1..n (only the fields the fan-out reads); `grow` appends to it. */
function logOf(n: number, status: RunRecord['status'] = 'running') {
  const events = Array.from(
    { length: n },
    (_, i) => ({ seq: i + 1, kind: 'steer_queued' }) as unknown as RunEvent,
  );
  const record = { run_id: RUN, status, inbox: [], last_seq: n } as unknown as RunRecord;
  return {
    events,
    grow(by: number) {
      for (let i = 0; i < by; i += 1) events.push({ seq: events.length + 1, kind: 'steer_queued' } as never);
      record.last_seq = events.length;
    },
    store: {
      getRun: async (id: string) => (id === RUN ? structuredClone(record) : null),
      readEvents: async (_id: string, after: number, limit: number) =>
        events.filter((e) => e.seq > after).slice(0, limit),
    } as FanOutDeps['store'],
  };
}

/** A poster that yields to other pumps before each send and records what it sent and closed. */
function recordingPoster() {
  const sent: { connection: string; message: LiveServerMessage }[] = [];
  const closed: { connection: string; code: number; reason: string }[] = [];
  return {
    sent,
    closed,
    seqs: (connection: string) =>
      sent.flatMap((s) =>
        s.connection === connection && s.message.type === 'event' ? [s.message.event.seq] : [],
      ),
    poster: {
      async post(connection: string, message: LiveServerMessage) {
        await new Promise((r) => setImmediate(r));
        sent.push({ connection, message });
        return 'sent' as const;
      },
      async close(connection: string, code: number, reason: string) {
        closed.push({ connection, code, reason });
      },
      async alive() {
        return true;
      },
    },
  };
}

/** Records connection `id` of alice in `subscriptions`, its token valid until FAR. */
async function openConnection(subscriptions: SubscriptionStore, id: string) {
  const caller = { principal: { kind: 'user', id: 'alice' } } as const;
  await subscriptions.openConnection({ connection_id: id, caller, connected_at: 0, token_exp: FAR }, 8, 0);
}

describe('the live fan-out', () => {
  it('sends each seq once to a subscription that several pumps catch up at the same time', async () => {
    const { store } = logOf(250);
    const subscriptions = createMemorySubscriptionStore();
    const out = recordingPoster();
    const deps = { store, subscriptions, poster: out.poster };
    const sub = { run_id: RUN, connection_id: 'c1', sent_seq: 0, token_exp: FAR };
    await openConnection(subscriptions, 'c1');
    await subscriptions.subscribe(sub, 16);

    const reports = await Promise.all([pumpRun(deps, RUN), pumpRun(deps, RUN, sub), pumpRun(deps, RUN)]);

    expect(reports.every((r) => r.subscribers === 1)).toBe(true);
    expect([...out.seqs('c1')].sort((a, b) => a - b)).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    expect(await subscriptions.sentSeq(RUN, 'c1')).toBe(250);
  });

  it('sends once more from a lower cursor after a subscribe again, and nothing twice within it', async () => {
    const { store } = logOf(30);
    const subscriptions = createMemorySubscriptionStore();
    const out = recordingPoster();
    const deps = { store, subscriptions, poster: out.poster };
    await openConnection(subscriptions, 'c1');
    await subscriptions.subscribe({ run_id: RUN, connection_id: 'c1', sent_seq: 0, token_exp: FAR }, 16);
    await pumpRun(deps, RUN);
    const again = { run_id: RUN, connection_id: 'c1', sent_seq: 20, token_exp: FAR };
    expect(await subscriptions.subscribe(again, 1)).toBe('replaced');

    await Promise.all([pumpRun(deps, RUN, again), pumpRun(deps, RUN)]);

    const seqs = out.seqs('c1');
    expect(seqs.slice(0, 30)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect([...seqs.slice(30)].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 21));
  });
});

/** Socket deps on a log of n events: `alice` is a token valid until 100 s, `no-exp` one without `exp`; the clock starts at 0 ms. */
function socketDeps(n: number) {
  const log = logOf(n);
  const subscriptions = createMemorySubscriptionStore();
  const out = recordingPoster();
  const clock = { ms: 0 };
  const deps: SocketDeps = {
    store: log.store,
    subscriptions,
    poster: out.poster,
    authenticate: async (token) =>
      token === 'alice'
        ? { caller: { principal: { kind: 'user', id: 'alice' } }, exp: 100 }
        : token === 'no-exp'
          ? ({ caller: { principal: { kind: 'user', id: 'alice' } } } as never)
          : null,
    authorizeRead: async () => {},
    now: () => clock.ms,
  };
  return { deps, out, subscriptions, clock, log };
}

describe('the live socket', () => {
  it('refuses a subscribe from a cursor beyond the log head with cursor_ahead, and holds no subscription', async () => {
    const { deps, out, subscriptions } = socketDeps(5);
    expect(await connect(deps, 'c1', 'alice')).toBe('connected');

    await receive(deps, 'c1', JSON.stringify({ action: 'subscribe', run_id: RUN, after: 6 }));

    expect(out.sent.map((s) => s.message)).toEqual([
      expect.objectContaining({ type: 'error', code: 'cursor_ahead', run_id: RUN }),
    ]);
    expect(await subscriptions.subscribers(RUN)).toEqual([]);
  });

  it('accepts a subscribe from the log head and sends nothing before the next event', async () => {
    const { deps, out, subscriptions } = socketDeps(5);
    await connect(deps, 'c1', 'alice');

    await receive(deps, 'c1', JSON.stringify({ action: 'subscribe', run_id: RUN, after: 5 }));

    expect(out.sent.map((s) => s.message.type)).toEqual(['subscribed']);
    expect(await subscriptions.sentSeq(RUN, 'c1')).toBe(5);
  });
});

describe('the live socket refuses a run id that is not a clean identifier', () => {
  it('answers invalid_message for a lone surrogate, a bidi mark or a fullwidth look-alike, reading nothing', async () => {
    const { deps, out, subscriptions } = socketDeps(5);
    await connect(deps, 'c1', 'alice');
    let reads = 0;
    const read = deps.store.getRun;
    deps.store = {
      ...deps.store,
      getRun: async (id) => {
        reads += 1;
        return read(id);
      },
    };
    for (const runId of ['\ud800', `${RUN}\u202e`, `${RUN}\uff0f1`])
      await receive(deps, 'c1', JSON.stringify({ action: 'subscribe', run_id: runId, after: 0 }));
    expect(out.sent.map((s) => s.message)).toEqual(
      Array(3).fill(expect.objectContaining({ type: 'error', code: 'invalid_message' })),
    );
    expect(JSON.stringify(out.sent)).not.toContain('\ufffd');
    expect(reads).toBe(0);
    expect(await subscriptions.subscribers(RUN)).toEqual([]);
  });
});

describe('the live socket after its token expired', () => {
  const subscribe = (after = 0) => JSON.stringify({ action: 'subscribe', run_id: RUN, after });

  it('refuses a connect with a token already expired by the clock, or without exp', async () => {
    const { deps, clock, subscriptions } = socketDeps(1);
    expect(await connect(deps, 'c0', 'no-exp')).toBe('unauthenticated');
    clock.ms = 100_000; // exactly exp: expired, as jose decides
    expect(await connect(deps, 'c1', 'alice')).toBe('unauthenticated');
    expect(await subscriptions.getConnection('c0')).toBeNull();
    expect(await subscriptions.getConnection('c1')).toBeNull();
  });

  it('answers a frame after exp with token_expired and close 4001, and forgets the connection', async () => {
    const { deps, out, subscriptions, clock } = socketDeps(2);
    expect(await connect(deps, 'c1', 'alice')).toBe('connected');
    expect((await subscriptions.getConnection('c1'))?.token_exp).toBe(100);
    clock.ms = 99_999;
    await receive(deps, 'c1', subscribe());
    expect(out.seqs('c1')).toEqual([1, 2]);

    clock.ms = 100_000;
    await receive(deps, 'c1', subscribe(2));
    await receive(deps, 'c1', 'not json either');

    expect(out.sent.slice(3).map((s) => s.message)).toEqual([
      expect.objectContaining({ type: 'error', code: 'token_expired' }),
      expect.objectContaining({ type: 'error', code: 'unauthenticated' }), // the record is gone
    ]);
    expect(out.closed).toEqual([{ connection: 'c1', code: 4001, reason: 'token_expired' }]);
    expect(await subscriptions.getConnection('c1')).toBeNull();
    expect(await subscriptions.subscribers(RUN)).toEqual([]);
  });

  it('stops the fan-out at the first push after exp and closes the socket, leaving the cursor', async () => {
    const { deps, out, subscriptions, clock, log } = socketDeps(2);
    await connect(deps, 'c1', 'alice');
    await receive(deps, 'c1', subscribe());
    expect((await subscriptions.subscribers(RUN)).map((s) => s.token_exp)).toEqual([100]);
    log.grow(3);

    clock.ms = 100_001;
    const report = await pumpRun(deps, RUN);

    expect(report).toMatchObject({ subscribers: 1, sent: 0, expired: 1 });
    expect(out.seqs('c1')).toEqual([1, 2]);
    expect(out.sent.at(-1)?.message).toEqual(
      expect.objectContaining({ type: 'error', code: 'token_expired' }),
    );
    expect(out.closed).toEqual([{ connection: 'c1', code: 4001, reason: 'token_expired' }]);
    expect(await subscriptions.subscribers(RUN)).toEqual([]);
  });

  it('keeps pushing before exp', async () => {
    const { deps, out, clock, log } = socketDeps(2);
    await connect(deps, 'c1', 'alice');
    await receive(deps, 'c1', subscribe());
    log.grow(3);
    clock.ms = 99_999;
    expect(await pumpRun(deps, RUN)).toMatchObject({ sent: 3, expired: 0 });
    expect(out.seqs('c1')).toEqual([1, 2, 3, 4, 5]);
    expect(out.closed).toEqual([]);
  });
});

describe("the client's seq order", () => {
  const ev = (seq: number) => ({ seq }) as unknown as RunEvent;

  it('yields each seq once, in order, holding an early one until its gap closes', () => {
    const order = seqOrder(2);
    const yielded = [ev(2), ev(3), ev(5), ev(3), ev(6), ev(4), ev(5), ev(7)].flatMap((e) =>
      order.take(e).map((r) => r.seq),
    );
    expect(yielded).toEqual([3, 4, 5, 6, 7]);
    expect(order.gapped).toBe(false);
    expect(order.last).toBe(7);
  });

  it('reports a gap while an early event waits', () => {
    const order = seqOrder(0);
    expect(order.take(ev(2))).toEqual([]);
    expect(order.gapped).toBe(true);
  });
});
