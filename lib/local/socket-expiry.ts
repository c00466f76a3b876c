/**
 * The local socket server ends a connection at its token's `exp`: a timer
 * per connection, set when $connect admits it (at the `token_exp` its record keeps), cleared at
 * $disconnect; when it fires, the connection gets an `error` message `token_expired` and close
 * code 4001 (lib/live/expiry.ts). In AWS there is no timer: the live handler refuses a frame at
 * or after exp and the fan-out ends a connection it would push to, so an idle socket there lives
 * on (served nothing) until API Gateway's idle timeout.
 */
import type { SocketHandler } from '../handlers/live-socket.ts';
import { describeError, type LogSink } from '../handlers/observability.ts';
import { expireConnection, tokenExpired } from '../live/expiry.ts';
import type { ConnectionPoster, SubscriptionStore } from '../live/ports.ts';

/** The longest delay setTimeout takes (ms); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Wraps the live handler with the expiry timers. `now`: the clock the timers count from (ms since epoch). */
export function withExpiryTimers(
  handler: SocketHandler,
  deps: { poster: ConnectionPoster; subscriptions: SubscriptionStore; now: () => number; logger: LogSink },
): SocketHandler {
  const timers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Sets the timer of `id` for `exp`; a delay past setTimeout's limit (about 24.8 days) is waited out in steps. */
  const arm = (id: string, exp: number) => {
    const delay = exp * 1000 - deps.now();
    const timer = setTimeout(
      () => {
        timers.delete(id);
        if (!tokenExpired(exp, deps.now())) return arm(id, exp);
        void expireConnection(deps, id).catch((err: unknown) =>
          deps.logger.warn('live token expiry close failed', { connection_id: id, ...describeError(err) }),
        );
      },
      Math.min(Math.max(0, delay), MAX_TIMER_MS),
    );
    timer.unref();
    timers.set(id, timer);
  };
  return async (event) => {
    const result = await handler(event);
    const id = event.requestContext.connectionId;
    const type = event.requestContext.eventType;
    if (id === undefined) return result;
    if (type === 'DISCONNECT') {
      clearTimeout(timers.get(id));
      timers.delete(id);
    }
    const admitted = typeof result === 'object' && result !== null && result.statusCode === 200;
    if (type !== 'CONNECT' || !admitted) return result;
    const connection = await deps.subscriptions.getConnection(id);
    if (connection !== null) arm(id, connection.token_exp);
    return result;
  };
}
