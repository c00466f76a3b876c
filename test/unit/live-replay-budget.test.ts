/**
 * The replay budget's charging in the live fan-out (lib/live/fan-out.ts) and the memory store's
 * window (lib/live/memory-subscriptions.ts): a catch-up is charged by the events' whole JSON,
 * also for a frame sent truncated, in parts claimed one at a time; a refused part ends the
 * subscription with `replay_budget_exceeded` after the events already sent.
 * docs/guides/live-streams.md, "Replay budget".
 */
import { describe, expect, it } from 'vitest';
import {
  jsonBytes,
  type LiveServerMessage,
  MAX_LIVE_FRAME_BYTES,
  type RunEvent,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { pumpRun, REPLAY_PART_BYTES, type ReplayCharge } from '../../lib/live/fan-out.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';

const RUN = 'run-replay';
const FAR = 4_000_000_000;

function setup(events: RunEvent[]) {
  const subscriptions = createMemorySubscriptionStore();
  const sent: LiveServerMessage[] = [];
  const record = {
    run_id: RUN,
    status: 'running',
    inbox: [],
    last_seq: events.length,
  } as unknown as RunRecord;
  const deps = {
    store: {
      getRun: async () => structuredClone(record),
      readEvents: async (_id: string, after: number, limit: number) =>
        events.filter((e) => e.seq > after).slice(0, limit),
    },
    subscriptions,
    poster: {
      post: async (_c: string, message: LiveServerMessage) => {
        sent.push(message);
        return 'sent' as const;
      },
      close: async () => {},
      alive: async () => true,
    },
    now: () => 0,
  };
  return { deps, subscriptions, sent };
}

const sub = { run_id: RUN, connection_id: 'c1', sent_seq: 0, token_exp: FAR };
const event = (seq: number, pad: number): RunEvent => ({
  seq,
  kind: 'steer_queued',
  at: 0,
  data: { pad: 'x'.repeat(pad) },
});

async function subscribed(s: ReturnType<typeof setup>) {
  const caller = { principal: { kind: 'user', id: 'bob' } } as const;
  await s.subscriptions.openConnection(
    { connection_id: 'c1', caller, connected_at: 0, token_exp: FAR },
    8,
    0,
  );
  await s.subscriptions.subscribe(sub, 8);
}

describe('the replay budget in the fan-out', () => {
  it('charges the whole JSON of a truncated event, in parts of at most REPLAY_PART_BYTES', async () => {
    const events = [
      event(1, MAX_LIVE_FRAME_BYTES * 2),
      ...Array.from({ length: 12 }, (_, i) => event(i + 2, 50_000)),
    ];
    const s = setup(events);
    await subscribed(s);
    const charged: number[] = [];
    const replay: ReplayCharge = async (bytes) => {
      charged.push(bytes);
      return { ok: true };
    };

    const report = await pumpRun(s.deps, RUN, sub, replay);

    expect(report).toMatchObject({ sent: 13, refused: 0 });
    const whole = events.map((e) => jsonBytes({ type: 'event', run_id: RUN, event: e }));
    expect(charged.reduce((a, b) => a + b, 0)).toBe(whole.reduce((a, b) => a + b, 0));
    expect(s.sent[0]).toMatchObject({ type: 'event', truncated: true }); // sent small, charged whole
    expect(charged.length).toBeGreaterThan(1);
    expect(charged.every((b) => b <= REPLAY_PART_BYTES)).toBe(true);
  });

  it('ends the subscription at a refused part, after the events already sent, with retry_after_ms', async () => {
    const s = setup(Array.from({ length: 12 }, (_, i) => event(i + 1, 50_000)));
    await subscribed(s);
    let parts = 0;
    const replay: ReplayCharge = async () =>
      parts++ === 0 ? { ok: true } : { ok: false, retryAfterMs: 700 };

    const report = await pumpRun(s.deps, RUN, sub, replay);

    expect(report).toMatchObject({ refused: 1 });
    const seqs = s.sent.flatMap((m) => (m.type === 'event' ? [m.event.seq] : []));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(seqs.length).toBeGreaterThan(0);
    expect(seqs.length).toBeLessThan(12);
    expect(s.sent.at(-1)).toEqual(
      expect.objectContaining({
        type: 'error',
        code: 'replay_budget_exceeded',
        run_id: RUN,
        retry_after_ms: 700,
      }),
    );
    expect(await s.subscriptions.sentSeq(RUN, 'c1')).toBeNull();
  });

  it('counts a principal per window in the memory store: below the bound charged, then refused until the window ends', async () => {
    const store = createMemorySubscriptionStore();
    const limit = { replayBytes: 100, replayWindowMs: 1_000 };
    expect(await store.takeReplay('bob', 150, 2_100, limit)).toEqual({ ok: true });
    expect(await store.takeReplay('bob', 0, 2_400, limit)).toEqual({ ok: false, retryAfterMs: 600 });
    expect(await store.takeReplay('alice', 50, 2_400, limit)).toEqual({ ok: true });
    expect(await store.takeReplay('bob', 10, 3_000, limit)).toEqual({ ok: true });
  });
});
