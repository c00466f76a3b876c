/**
 * The subscription store in memory, with the DynamoDB adapter's semantics (a subscribe replaces
 * the cursor of the same run's subscription; advance is conditional on the cursor's value; the
 * bounds of openConnection, subscribe, takeSubscribe and takeReplay): for tests and single-process use.
 */
import { quotaKeyOf } from '../core/principal.ts';
import { countsUntil, type LiveConnection, type Subscription, type SubscriptionStore } from './ports.ts';

interface Held extends LiveConnection {
  runs: Set<string>;
  window: number;
  windowCount: number;
}

export function createMemorySubscriptionStore(): SubscriptionStore & {
  /** Every subscription held, by `run_id/connection_id` (tests). */
  readonly held: Map<string, Subscription>;
} {
  const connections = new Map<string, Held>();
  const held = new Map<string, Subscription>();
  /** Each principal's replay window and the bytes charged in it. */
  const replay = new Map<string, { window: number; bytes: number }>();
  const key = (runId: string, connectionId: string) => `${runId}/${connectionId}`;
  return {
    held,
    async openConnection(connection, max, nowMs) {
      const quota = quotaKeyOf(connection.caller.principal);
      const counted = [...connections.values()].filter(
        (c) => quotaKeyOf(c.caller.principal) === quota && countsUntil(c) > nowMs,
      );
      if (counted.length >= max)
        return {
          admitted: false,
          holders: counted.map((c) => ({ connection_id: c.connection_id, connected_at: c.connected_at })),
        };
      connections.set(connection.connection_id, {
        ...structuredClone(connection),
        runs: new Set(),
        window: -1,
        windowCount: 0,
      });
      return { admitted: true };
    },
    async getConnection(connectionId) {
      const found = connections.get(connectionId);
      if (found === undefined) return null;
      const { runs: _runs, window: _window, windowCount: _count, ...connection } = found;
      return structuredClone(connection);
    },
    async deleteConnection(connectionId) {
      connections.delete(connectionId);
      for (const [k, sub] of held) if (sub.connection_id === connectionId) held.delete(k);
    },
    async subscribe(sub, max) {
      const connection = connections.get(sub.connection_id);
      if (connection === undefined) return 'gone';
      const replaced = connection.runs.has(sub.run_id);
      if (!replaced && connection.runs.size >= max) return 'full';
      connection.runs.add(sub.run_id);
      held.set(key(sub.run_id, sub.connection_id), { ...sub });
      return replaced ? 'replaced' : 'subscribed';
    },
    async unsubscribe(runId, connectionId) {
      held.delete(key(runId, connectionId));
      connections.get(connectionId)?.runs.delete(runId);
    },
    async takeSubscribe(connectionId, nowMs, perMinute) {
      const connection = connections.get(connectionId);
      if (connection === undefined) return false;
      const window = Math.floor(nowMs / 60_000);
      if (connection.window !== window) {
        connection.window = window;
        connection.windowCount = 0;
      }
      if (connection.windowCount >= perMinute) return false;
      connection.windowCount += 1;
      return true;
    },
    async takeReplay(quotaKey, bytes, nowMs, limit) {
      const window = Math.floor(nowMs / limit.replayWindowMs);
      const charged = replay.get(quotaKey);
      const used = charged?.window === window ? charged.bytes : 0;
      if (used >= limit.replayBytes)
        return { ok: false, retryAfterMs: (window + 1) * limit.replayWindowMs - nowMs };
      replay.set(quotaKey, { window, bytes: used + bytes });
      return { ok: true };
    },
    async subscribers(runId) {
      return [...held.values()].filter((s) => s.run_id === runId).map((s) => ({ ...s }));
    },
    async sentSeq(runId, connectionId) {
      return held.get(key(runId, connectionId))?.sent_seq ?? null;
    },
    async advance(runId, connectionId, from, to) {
      const sub = held.get(key(runId, connectionId));
      if (sub === undefined || sub.sent_seq !== from) return false;
      sub.sent_seq = to;
      return true;
    },
  };
}
