/**
 * The live fan-out and socket (lib/live/fan-out.ts, socket.ts) over an in-memory log and
 * subscription store: each seq reaches a subscription once while several pumps run, a cursor
 * beyond the log's head is refused, and the client's ordering keeps each seq once, in order.
 * Issue 25, point 7.
 */
import { describe, expect, it } from 'vitest';
import { seqOrder } from '../../lib/client/live.ts';
import type { LiveServerMessage, RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { type FanOutDeps, pumpRun } from '../../lib/live/fan-out.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';
import { connect, receive, type SocketDeps } from '../../lib/live/socket.ts';

const RUN = 'run-fan-out';

/** A run whose log holds seq 1..n (only the fields the fan-out reads). */
function logOf(n: number, status: RunRecord['status'] = 'running') {
  const events = Array.from(
    { length: n },
    (_, i) => ({ seq: i + 1, kind: 'steer_queued' }) as unknown as RunEvent,
  );
  const record = { run_id: RUN, status, inbox: [], last_seq: n } as unknown as RunRecord;
  return {
    events,
    store: {
      getRun: async (id: string) => (id === RUN ? structuredClone(record) : null),
      readEvents: async (_id: string, after: number, limit: number) =>
        events.filter((e) => e.seq > after).slice(0, limit),
    } as FanOutDeps['store'],
  };
}

/** A poster that yields to other pumps before each send and records what it sent. */
function recordingPoster() {
  const sent: { connection: string; message: LiveServerMessage }[] = [];
  return {
    sent,
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
    },
  };
}

describe('the live fan-out', () => {
  it('sends each seq once to a subscription that several pumps catch up at the same time', async () => {
    const { store } = logOf(250);
    const subscriptions = createMemorySubscriptionStore();
    const out = recordingPoster();
    const deps = { store, subscriptions, poster: out.poster };
    const sub = { run_id: RUN, connection_id: 'c1', sent_seq: 0 };
    await subscriptions.subscribe(sub);

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
    await subscriptions.subscribe({ run_id: RUN, connection_id: 'c1', sent_seq: 0 });
    await pumpRun(deps, RUN);
    const again = { run_id: RUN, connection_id: 'c1', sent_seq: 20 };
    await subscriptions.subscribe(again);

    await Promise.all([pumpRun(deps, RUN, again), pumpRun(deps, RUN)]);

    const seqs = out.seqs('c1');
    expect(seqs.slice(0, 30)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect([...seqs.slice(30)].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 21));
  });
});

describe('the live socket', () => {
  function socketDeps(n: number) {
    const { store } = logOf(n);
    const subscriptions = createMemorySubscriptionStore();
    const out = recordingPoster();
    const deps: SocketDeps = {
      store,
      subscriptions,
      poster: out.poster,
      authenticate: async (token) =>
        token === 'alice' ? { principal: { kind: 'user', id: 'alice' } } : null,
      authorizeRead: async () => {},
      now: () => 0,
    };
    return { deps, out, subscriptions };
  }

  it('refuses a subscribe from a cursor beyond the log head with cursor_ahead, and holds no subscription', async () => {
    const { deps, out, subscriptions } = socketDeps(5);
    expect(await connect(deps, 'c1', 'alice')).toBe(true);

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
