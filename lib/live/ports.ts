/**
 * The ports of the live fan-out: where subscriptions are kept, how a message reaches a
 * connection, where lifecycle notifications go. Adapters: DynamoDB (subscriptions), API
 * Gateway's management API or the local socket server (connections), EventBridge or a file
 * (notifications). docs/architecture.md, "Conventions".
 */
import type { LiveServerMessage, RunNotification } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';

/**
 * One connection's subscription to one run: the last seq sent to it, and the `exp` of the
 * connection's token (seconds since epoch), copied from the connection at subscribe so that the
 * fan-out stops pushing once it passed without reading the connection.
 */
export interface Subscription {
  run_id: string;
  connection_id: string;
  sent_seq: number;
  token_exp: number;
}

/** An open connection and who opened it (authenticated at connect). */
export interface LiveConnection {
  connection_id: string;
  caller: Caller;
  /** ms since epoch. */
  connected_at: number;
  /** The `exp` of the token the connection was opened with (seconds since epoch): no message is served, nothing pushed, at or after it. */
  token_exp: number;
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

/** Sends one message to a connection, or closes it. `gone`: the connection no longer exists. */
export interface ConnectionPoster {
  post(connectionId: string, message: LiveServerMessage): Promise<'sent' | 'gone'>;
  /**
   * Closes the connection from the server side with `code` and `reason` where the transport lets
   * the server choose them (the local socket server); API Gateway's DeleteConnection picks its
   * own close code. A connection already gone is no error.
   */
  close(connectionId: string, code: number, reason: string): Promise<void>;
}

/** Publishes run lifecycle notifications (at least once). Throws when they could not be published. */
export interface NotificationPublisher {
  publish(notifications: RunNotification[]): Promise<void>;
}
