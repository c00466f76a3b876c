/**
 * The subscription store in memory, with the DynamoDB adapter's semantics (a subscribe replaces
 * the cursor; advance is conditional on the cursor's value): for tests and single-process use.
 */
import type { LiveConnection, Subscription, SubscriptionStore } from './ports.ts';

export function createMemorySubscriptionStore(): SubscriptionStore & {
  /** Every subscription held, by `run_id/connection_id` (tests). */
  readonly held: Map<string, Subscription>;
} {
  const connections = new Map<string, LiveConnection>();
  const held = new Map<string, Subscription>();
  const key = (runId: string, connectionId: string) => `${runId}/${connectionId}`;
  return {
    held,
    async putConnection(connection) {
      connections.set(connection.connection_id, structuredClone(connection));
    },
    async getConnection(connectionId) {
      const found = connections.get(connectionId);
      return found === undefined ? null : structuredClone(found);
    },
    async deleteConnection(connectionId) {
      connections.delete(connectionId);
      for (const [k, sub] of held) if (sub.connection_id === connectionId) held.delete(k);
    },
    async subscribe(sub) {
      held.set(key(sub.run_id, sub.connection_id), { ...sub });
    },
    async unsubscribe(runId, connectionId) {
      held.delete(key(runId, connectionId));
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
