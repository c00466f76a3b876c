/**
 * A flood of connects by one principal costs the store a few admissions, not one per connect:
 * the live handler admits one principal's connects one at a time and refuses a principal just
 * refused at its bound without a store read for REFUSAL_MEMO_MS (lib/live/connect-gate.ts).
 * Another principal is admitted meanwhile. Over the live handler and the in-memory subscription
 * store, counting its admissions.
 */
import { describe, expect, it } from 'vitest';
import { createSocketHandler } from '../../lib/handlers/live-socket.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { REFUSAL_MEMO_MS } from '../../lib/live/connect-gate.ts';
import { createMemorySubscriptionStore } from '../../lib/live/memory-subscriptions.ts';

function handlerCountingAdmissions() {
  const store = createMemorySubscriptionStore();
  const admissions: string[] = [];
  const clock = { ms: 1_000_000 };
  const handler = createSocketHandler({
    store: { getRun: async () => null, readEvents: async () => [] },
    subscriptions: {
      ...store,
      openConnection(connection, max, nowMs) {
        admissions.push(connection.caller.principal.id);
        return store.openConnection(connection, max, nowMs);
      },
    },
    poster: { post: async () => 'sent', close: async () => {}, alive: async () => true },
    authenticate: async (token) => ({
      caller: { principal: { kind: 'user', id: token ?? '' } },
      exp: 10_000,
    }),
    authorizeRead: async () => {},
    now: () => clock.ms,
    limits: {
      maxConnections: 2,
      maxSubscriptions: 4,
      subscribesPerMinute: 10,
      replayBytes: 1 << 30,
      replayWindowMs: 10_000,
    },
    logger: SILENT_LOG,
  });
  const connect = async (who: string, id: string) => {
    const out = await handler({
      requestContext: { connectionId: id, eventType: 'CONNECT' },
      queryStringParameters: { token: who },
    });
    return (out as { statusCode: number }).statusCode;
  };
  return { connect, admissions, clock };
}

describe('the connect gate', () => {
  it("admits bob's parallel connects one at a time and refuses the rest without reading", async () => {
    const { connect, admissions, clock } = handlerCountingAdmissions();

    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => connect('bob', `b${i}`)));
    const alice = await connect('alice', 'a1');

    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(48);
    expect(alice).toBe(200);
    expect(admissions.filter((who) => who === 'bob')).toHaveLength(3); // two places, one refusal

    clock.ms += REFUSAL_MEMO_MS;
    expect(await connect('bob', 'b-later')).toBe(429);
    expect(admissions.filter((who) => who === 'bob')).toHaveLength(4); // read again after the memo
  });
});
