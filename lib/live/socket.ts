/**
 * The live socket's three moments, the same behind API Gateway's WebSocket API and the local
 * socket server: connect (authenticate as on HTTP: a bearer token, here in the `token` query
 * parameter or the Authorization header, since a browser cannot set headers on a WebSocket),
 * a message (subscribe to a run from a seq, unsubscribe), disconnect. A subscription is
 * authorized like a read of the run; it is caught up at once (pumpRun for it alone), then kept
 * up by the stream's fan-out. A socket lives no longer than its token: the connection keeps
 * the token's `exp`, and the first message received or event pushed at or after it ends the
 * socket (lib/live/expiry.ts: an `error` message `token_expired`, then close code 4001).
 * docs/contracts/run-lifecycle.md, "over HTTP, WebSocket".
 */
import { LiveClientMessage } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { expireConnection, tokenExpired } from './expiry.ts';
import { type FanOutDeps, pumpRun } from './fan-out.ts';

/** Who a verified token stands for, and until when: its `exp` (seconds since epoch). */
export interface TokenIdentity {
  caller: Caller;
  exp: number;
}

export interface SocketDeps extends FanOutDeps {
  /** Who a connect request's token stands for, or null (refused 401; a token without `exp` too). */
  authenticate(token: string | null): Promise<TokenIdentity | null>;
  /** Whether `caller` may read the run (throws EngineError run_not_found / unauthorized otherwise). */
  authorizeRead(runId: string, caller: Caller): Promise<void>;
  /** The clock, ms since epoch (also the fan-out's, for the token's expiry). */
  now(): number;
}

/** The token of a connect request: `?token=` first, else `Authorization: Bearer`. */
export function connectToken(
  query: Record<string, string | undefined> | undefined,
  headers: Record<string, string | undefined> | undefined,
): string | null {
  const fromQuery = query?.token;
  if (fromQuery !== undefined && fromQuery !== '') return fromQuery;
  const header = Object.entries(headers ?? {}).find(([k]) => k.toLowerCase() === 'authorization')?.[1];
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Authenticates and records the connection with its token's `exp`. Returns false (refuse with
 * 401) for bad credentials, a token without `exp` or one already expired by `deps.now()`.
 */
export async function connect(
  deps: SocketDeps,
  connectionId: string,
  token: string | null,
): Promise<boolean> {
  const identity = await deps.authenticate(token);
  if (identity === null || !Number.isFinite(identity.exp)) return false;
  const now = deps.now();
  if (tokenExpired(identity.exp, now)) return false;
  await deps.subscriptions.putConnection({
    connection_id: connectionId,
    caller: identity.caller,
    connected_at: now,
    token_exp: identity.exp,
  });
  return true;
}

/**
 * Handles one text frame. Never throws for a bad message: the client gets an `error` message.
 * A frame of a connection whose token expired is not served: the connection is ended
 * (expireConnection), whatever the frame holds.
 */
export async function receive(deps: SocketDeps, connectionId: string, body: string): Promise<void> {
  const connection = await deps.subscriptions.getConnection(connectionId);
  if (connection === null) {
    await deps.poster.post(connectionId, {
      type: 'error',
      code: 'unauthenticated',
      message: 'connect again',
    });
    return;
  }
  if (tokenExpired(connection.token_exp, deps.now())) {
    await expireConnection(deps, connectionId);
    return;
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    await deps.poster.post(connectionId, {
      type: 'error',
      code: 'invalid_message',
      message: 'a frame is one JSON object',
    });
    return;
  }
  const parsed = LiveClientMessage.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const message = `invalid message${issue ? ` at ${issue.path.join('.') || 'action'}: ${issue.message}` : ''}`;
    await deps.poster.post(connectionId, { type: 'error', code: 'invalid_message', message });
    return;
  }
  const msg = parsed.data;
  if (msg.action === 'unsubscribe') {
    await deps.subscriptions.unsubscribe(msg.run_id, connectionId);
    return;
  }
  try {
    await deps.authorizeRead(msg.run_id, connection.caller);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    await deps.poster.post(connectionId, {
      type: 'error',
      code: code === 'run_not_found' || code === 'unauthorized' ? code : 'internal',
      message:
        code === 'run_not_found' || code === 'unauthorized'
          ? String((err as Error).message)
          : 'internal error',
      run_id: msg.run_id,
    });
    return;
  }
  // A cursor beyond the log's head is refused, as over HTTP.
  const head = (await deps.store.getRun(msg.run_id))?.last_seq ?? 0;
  if (msg.after > head) {
    await deps.poster.post(connectionId, {
      type: 'error',
      code: 'cursor_ahead',
      message: `cursor ${msg.after} is beyond the run's last seq ${head}`,
      run_id: msg.run_id,
    });
    return;
  }
  const subscription = {
    run_id: msg.run_id,
    connection_id: connectionId,
    sent_seq: msg.after,
    token_exp: connection.token_exp,
  };
  await deps.subscriptions.subscribe(subscription);
  if (
    (await deps.poster.post(connectionId, { type: 'subscribed', run_id: msg.run_id, after: msg.after })) ===
    'gone'
  )
    return;
  await pumpRun(deps, msg.run_id, subscription);
}

/** Forgets the connection and its subscriptions. */
export async function disconnect(deps: SocketDeps, connectionId: string): Promise<void> {
  await deps.subscriptions.deleteConnection(connectionId);
}
