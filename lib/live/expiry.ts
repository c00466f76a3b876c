/**
 * A live socket lives no longer than its token: the connection keeps the token's `exp`
 * (seconds since epoch) and is ended at the first message received or event pushed at or after
 * it, with an `error` message `token_expired` and then close code TOKEN_EXPIRED_CLOSE (4001,
 * reason `token_expired`; lib/contracts/live.ts). Shared by the socket (lib/live/socket.ts) and
 * the fan-out (lib/live/fan-out.ts), in AWS and locally.
 */
import { TOKEN_EXPIRED, TOKEN_EXPIRED_CLOSE } from '../contracts/index.ts';
import type { ConnectionPoster, SubscriptionStore } from './ports.ts';

/**
 * Whether a token whose `exp` is `expSeconds` (seconds since epoch) has expired at `nowMs` (ms
 * since epoch): at exp or later, as jose decides. A missing or non-finite exp counts as expired.
 */
export function tokenExpired(expSeconds: number, nowMs: number): boolean {
  return !(nowMs < expSeconds * 1000);
}

/**
 * Ends a connection whose token expired: an `error` message `token_expired`, then the close
 * (code TOKEN_EXPIRED_CLOSE, reason `token_expired`), and its record and subscriptions are
 * forgotten. Harmless on a connection already gone.
 */
export async function expireConnection(
  deps: { poster: ConnectionPoster; subscriptions: SubscriptionStore },
  connectionId: string,
): Promise<void> {
  await deps.poster.post(connectionId, {
    type: 'error',
    code: TOKEN_EXPIRED,
    message: 'the token of this connection expired: connect again with a fresh token',
  });
  await deps.poster.close(connectionId, TOKEN_EXPIRED_CLOSE, TOKEN_EXPIRED);
  await deps.subscriptions.deleteConnection(connectionId);
}
