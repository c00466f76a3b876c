/**
 * What the live fan-out and the notifications send of a large event or record: API Gateway takes
 * at most 128 KB per WebSocket message and EventBridge 256 KB per entry, so a message over
 * {@link MAX_LIVE_FRAME_BYTES} or a notification over {@link MAX_NOTIFICATION_BYTES} goes out
 * without its large fields and marked `truncated: true`; the reader fetches the rest over HTTP
 * (`GET /runs/{id}/events`, `GET /runs/{id}`). Pure. docs/guides/live-streams.md, "Large events".
 */
import {
  jsonBytes,
  type LiveServerMessage,
  MAX_LIVE_FRAME_BYTES,
  MAX_NOTIFICATION_BYTES,
  type RunEvent,
  type RunNotification,
} from '../contracts/index.ts';

/**
 * The live `event` message of `event`: whole when its JSON is at most `limit` bytes (default
 * {@link MAX_LIVE_FRAME_BYTES}), else the event without its `data` (`data: {}`; seq, kind, at,
 * effect_id, operation_id kept) and `truncated: true`.
 */
export function liveEventMessage(
  runId: string,
  event: RunEvent,
  limit = MAX_LIVE_FRAME_BYTES,
): Extract<LiveServerMessage, { type: 'event' }> {
  return liveEventFrame(runId, event, limit).message;
}

/**
 * {@link liveEventMessage} with `bytes`: the UTF-8 bytes of the whole message's JSON (what the
 * server read and serialized, even when the message is sent truncated).
 */
export function liveEventFrame(
  runId: string,
  event: RunEvent,
  limit = MAX_LIVE_FRAME_BYTES,
): { message: Extract<LiveServerMessage, { type: 'event' }>; bytes: number } {
  const whole = { type: 'event' as const, run_id: runId, event };
  const bytes = jsonBytes(whole);
  if (bytes <= limit) return { message: whole, bytes };
  const { data: _data, ...head } = event;
  return { message: { type: 'event', run_id: runId, event: { ...head, data: {} }, truncated: true }, bytes };
}

/**
 * `notification` whole when its JSON is at most `limit` bytes (default
 * {@link MAX_NOTIFICATION_BYTES}), else without `subject`, `terminal_reason` and `outcome` (the
 * fields a caller's text makes large) and with `truncated: true`.
 */
export function boundedNotification(
  notification: RunNotification,
  limit = MAX_NOTIFICATION_BYTES,
): RunNotification {
  if (jsonBytes(notification) <= limit) return notification;
  const { subject: _s, terminal_reason: _t, outcome: _o, ...rest } = notification;
  return { ...rest, truncated: true };
}
