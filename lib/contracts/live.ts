/**
 * The live event protocol, the same over API Gateway's WebSocket API and the local stack's
 * WebSocket, and the run lifecycle notification published to EventBridge. A client subscribes
 * to a run from a seq; it then receives every event after it, in order, and `settled` once the
 * run ended and no event will follow. After a reconnect it subscribes again from the last seq it
 * saw. A subscription receives each seq at most once; a server crash can leave a gap (seq
 * jumps), closed by subscribing again from the last seq held. A cursor beyond the run's last
 * seq is refused (`error` code `cursor_ahead`). docs/contracts/run-lifecycle.md, "Following a
 * run over HTTP, WebSocket and SSE"; docs/architecture.md, "The seams of a step" (notifications
 * are published through an outbox: DynamoDB Streams).
 */
import { z } from 'zod';
import { cleanId } from './clean-text.ts';
import { Count } from './common.ts';
import { RunEvent } from './events.ts';
import { RunStatus } from './run.ts';

/** Client → server: one JSON text frame each. */
export const LiveClientMessage = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('subscribe'),
    run_id: cleanId(200),
    after: Count.default(0),
  }),
  z.strictObject({ action: z.literal('unsubscribe'), run_id: cleanId(200) }),
]);
export type LiveClientMessage = z.infer<typeof LiveClientMessage>;

/** Server → client. */
export const LiveServerMessage = z.discriminatedUnion('type', [
  /** The subscription holds; events after `after` follow. */
  z.object({ type: z.literal('subscribed'), run_id: z.string(), after: Count }),
  /**
   * One event. `truncated: true`: the event's frame would have been over
   * {@link MAX_LIVE_FRAME_BYTES}, so it is sent without its `data` (`data: {}`; seq, kind, at,
   * effect_id and operation_id kept); fetch it whole with `GET /runs/{id}/events?after={seq-1}&limit=1`
   * (the client library's followLive does).
   */
  z.object({
    type: z.literal('event'),
    run_id: z.string(),
    event: RunEvent,
    truncated: z.literal(true).optional(),
  }),
  /** The run ended and its log is complete at `last_seq`: the subscription ends. */
  z.object({ type: z.literal('settled'), run_id: z.string(), last_seq: Count, status: RunStatus }),
  /**
   * A message refused (invalid_message, run_not_found, unauthorized, ...). `retry_after_ms`:
   * when to subscribe again (ms from now), on a {@link REPLAY_BUDGET_EXCEEDED}.
   */
  z.object({
    type: z.literal('error'),
    code: z.string(),
    message: z.string(),
    run_id: z.string().optional(),
    retry_after_ms: Count.optional(),
  }),
]);
export type LiveServerMessage = z.infer<typeof LiveServerMessage>;

/**
 * A socket whose token expired (its `exp` passed) is served no more: the server sends an
 * `error` message with code `token_expired`, then closes the socket with close code 4001 and
 * reason `token_expired` (in AWS, API Gateway's DeleteConnection closes it with a code of its
 * own choosing, so the `error` message is what a client can rely on there). Connect again with a
 * fresh token.
 */
export const TOKEN_EXPIRED_CLOSE = 4001;
/** The `error` code and close reason of a socket whose token expired. */
export const TOKEN_EXPIRED = 'token_expired';

/**
 * The `error` code of a subscribe whose catch-up would pass the principal's replay budget
 * (bytes of catch-up frames per window): sent instead of the catch-up, or after the part of it
 * already sent, with `run_id` and `retry_after_ms`. The subscription is then not held; subscribe
 * again from the last seq held after `retry_after_ms`. docs/guides/live-streams.md.
 */
export const REPLAY_BUDGET_EXCEEDED = 'replay_budget_exceeded';

/** The EventBridge `source` and `detail-type` of a run lifecycle notification. */
export const NOTIFICATION_SOURCE = 'agent-runs';
export const NOTIFICATION_DETAIL_TYPE = 'Agent Run Status Changed';

/**
 * The largest live message the server sends whole, in UTF-8 bytes of its JSON: 96 KiB, under
 * API Gateway's 128 KB per WebSocket message. An `event` message over it is sent truncated.
 */
export const MAX_LIVE_FRAME_BYTES = 96 * 1024;

/**
 * The largest notification detail sent whole, in UTF-8 bytes of its JSON: 64 KiB, well under
 * EventBridge's 256 KB per PutEvents entry. A larger one is sent truncated (RunNotification).
 */
export const MAX_NOTIFICATION_BYTES = 64 * 1024;

/**
 * A run's status changed (or the run was created). Delivered at least once; `seq` (the run's
 * last seq at the change) and `version` are increasing per run, so a consumer de-duplicates by
 * (run_id, version) and orders by seq.
 */
export const RunNotification = z.object({
  run_id: z.string(),
  status: RunStatus,
  previous_status: RunStatus.nullable(),
  seq: Count,
  version: Count,
  at: z.number(),
  terminal: z.boolean(),
  terminal_reason: z.string().optional(),
  outcome: z.string().optional(),
  parent_run_id: z.string().optional(),
  principal: z.object({ kind: z.string(), id: z.string() }),
  /** Absent only in a truncated notification. */
  subject: z.object({ workspace: z.string(), path: z.string() }).optional(),
  /**
   * true: the detail would have been over {@link MAX_NOTIFICATION_BYTES}, so it is sent without
   * `subject`, `terminal_reason` and `outcome`; read them with `GET /runs/{run_id}`.
   */
  truncated: z.literal(true).optional(),
});
export type RunNotification = z.infer<typeof RunNotification>;
