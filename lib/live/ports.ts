/**
 * The ports of the live fan-out: where subscriptions are kept, how a message reaches a
 * connection, where lifecycle notifications go. Adapters: DynamoDB (subscriptions), API
 * Gateway's management API or the local socket server (connections), EventBridge or a file
 * (notifications). STYLE "Ports as narrow interfaces".
 */
import type { LiveServerMessage, RunNotification } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';

/** One connection's subscription to one run: the last seq sent to it. */
export interface Subscription {
  run_id: string;
  connection_id: string;
  sent_seq: number;
}

/** An open connection and who opened it (authenticated at connect). */
export interface LiveConnection {
  connection_id: string;
  caller: Caller;
  connected_at: number;
}

export interface SubscriptionStore {
  putConnection(connection: LiveConnection): Promise<void>;
  getConnection(connectionId: string): Promise<LiveConnection | null>;
  /** Removes the connection and every subscription it holds. */
  deleteConnection(connectionId: string): Promise<void>;
  /** Creates or replaces the subscription (its cursor set to `sent_seq`). */
  subscribe(subscription: Subscription): Promise<void>;
  unsubscribe(runId: string, connectionId: string): Promise<void>;
  /** The subscriptions of a run (strongly consistent). */
  subscribers(runId: string): Promise<Subscription[]>;
  /** The cursor of one subscription (strongly consistent), or null when there is none. */
  sentSeq(runId: string, connectionId: string): Promise<number | null>;
  /** Moves the cursor from `from` to `to` (> from); false when it had moved already. */
  advance(runId: string, connectionId: string, from: number, to: number): Promise<boolean>;
}

/** Sends one message to a connection. `gone`: the connection no longer exists. */
export interface ConnectionPoster {
  post(connectionId: string, message: LiveServerMessage): Promise<'sent' | 'gone'>;
}

/** Publishes run lifecycle notifications (at least once). Throws when they could not be published. */
export interface NotificationPublisher {
  publish(notifications: RunNotification[]): Promise<void>;
}
