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

/**
 * What a principal may hold on the live socket: open connections per
 * principal (counted under its quota key, core/principal.ts quotaKeyOf), subscriptions per
 * connection, subscribe messages per connection per minute. lib/live/limits.ts reads them from
 * lib/config.ts.
 */
export interface LiveLimits {
  maxConnections: number;
  maxSubscriptions: number;
  subscribesPerMinute: number;
  /**
   * The catch-up replay one principal may cause: at most `replayBytes` UTF-8 bytes of catch-up
   * `event` frames (as sent: a truncated frame counts its truncated size) per window of
   * `replayWindowMs` ms (windows start at multiples of it since the epoch).
   */
  replayBytes: number;
  replayWindowMs: number;
}

/** The answer to takeReplay: charged, or refused until the window ends (`retryAfterMs`, ms from `nowMs`). */
export type ReplayTake = { ok: true } | { ok: false; retryAfterMs: number };

/** The answer to openConnection: admitted, or the connections counted against the bound. */
export type OpenOutcome =
  | { admitted: true }
  | { admitted: false; holders: { connection_id: string; connected_at: number }[] };

/** The answer to subscribe: a new subscription, one that replaced the cursor of the same run's, the bound reached, or no such connection. */
export type SubscribeOutcome = 'subscribed' | 'replaced' | 'full' | 'gone';

export interface SubscriptionStore {
  /**
   * Records the connection unless its principal (quota key) already holds `max` open ones. A
   * connection counts until its token's exp or API Gateway's two-hour limit
   * (CONNECTION_LIFETIME_MS after `connected_at`), whichever comes first, or until it is deleted.
   * `nowMs`: ms since epoch. Refused under contention it cannot settle (the holders are then empty).
   */
  openConnection(connection: LiveConnection, max: number, nowMs: number): Promise<OpenOutcome>;
  getConnection(connectionId: string): Promise<LiveConnection | null>;
  /** Removes the connection, every subscription it holds and its place in its principal's count. */
  deleteConnection(connectionId: string): Promise<void>;
  /**
   * Creates the subscription, or replaces the cursor of the connection's subscription to the same
   * run (set to `sent_seq`). A new one is refused (`full`) when the connection holds `max`.
   */
  subscribe(subscription: Subscription, max: number): Promise<SubscribeOutcome>;
  unsubscribe(runId: string, connectionId: string): Promise<void>;
  /**
   * Counts one subscribe message of the connection in the minute of `nowMs` (ms since epoch);
   * false when it already sent `perMinute` in that minute (or is gone).
   */
  takeSubscribe(connectionId: string, nowMs: number, perMinute: number): Promise<boolean>;
  /**
   * Charges `bytes` of catch-up replay to the principal `quotaKey` (core/principal.ts
   * quotaKeyOf) in the window of `nowMs` when it was charged less than `limit.replayBytes` there
   * so far (so one take may pass the bound by its own size); refused otherwise, with the ms
   * until the window ends. `bytes` 0 only asks.
   */
  takeReplay(
    quotaKey: string,
    bytes: number,
    nowMs: number,
    limit: Pick<LiveLimits, 'replayBytes' | 'replayWindowMs'>,
  ): Promise<ReplayTake>;
  /** The subscriptions of a run (strongly consistent). */
  subscribers(runId: string): Promise<Subscription[]>;
  /** The cursor of one subscription (strongly consistent), or null when there is none. */
  sentSeq(runId: string, connectionId: string): Promise<number | null>;
  /** Moves the cursor from `from` to `to` (> from); false when it had moved already. */
  advance(runId: string, connectionId: string, from: number, to: number): Promise<boolean>;
}

/** API Gateway closes a WebSocket connection after two hours: no connection counts longer. */
export const CONNECTION_LIFETIME_MS = 2 * 3600 * 1000;

/** Until when (ms since epoch) a connection counts against its principal's bound. */
export function countsUntil(connection: Pick<LiveConnection, 'connected_at' | 'token_exp'>): number {
  return Math.min(connection.token_exp * 1000, connection.connected_at + CONNECTION_LIFETIME_MS);
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
  /** Whether the connection is still open (API Gateway's GetConnection; a GoneException is false). */
  alive(connectionId: string): Promise<boolean>;
}

/** Publishes run lifecycle notifications (at least once). Throws when they could not be published. */
export interface NotificationPublisher {
  publish(notifications: RunNotification[]): Promise<void>;
}
