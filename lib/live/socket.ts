/**
 * The live socket's three moments, the same behind API Gateway's WebSocket API and the local
 * socket server: connect (authenticate as on HTTP: a bearer token, here in the `token` query
 * parameter or the Authorization header, since a browser cannot set headers on a WebSocket),
 * a message (subscribe to a run from a seq, unsubscribe), disconnect. A subscription is
 * authorized like a read of the run; it is caught up at once (pumpRun for it alone), then kept
 * up by the stream's fan-out. A socket lives no longer than its token: the connection keeps
 * the token's `exp`, and the first message received or event pushed at or after it ends the
 * socket (lib/live/expiry.ts: an `error` message `token_expired`, then close code 4001).
 *
 * Bounds (lib/live/limits.ts): a principal holds at most `maxConnections` open sockets (one more
 * is refused at connect, 429 `too_many_connections`), a socket at most `maxSubscriptions` runs
 * (a subscribe to a run it holds replaces that subscription's cursor; a new one past the bound is
 * an `error` `too_many_subscriptions`) and sends at most `subscribesPerMinute` subscribes a
 * minute (`error` `subscribe_rate_exceeded`), so that no caller can make the server replay logs
 * without limit; a principal's catch-ups together send at most `replayBytes` per
 * `replayWindowMs` (`error` `replay_budget_exceeded` with `retry_after_ms`), so that its
 * replays cannot slow anyone else's reads. docs/contracts/run-lifecycle.md,
 * "over HTTP, WebSocket"; docs/guides/live-streams.md, "Replay budget".
 */
import { LiveClientMessage, REPLAY_BUDGET_EXCEEDED } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { quotaKeyOf } from '../core/principal.ts';
import { tokenExpProblem } from '../core/token-exp.ts';
import type { ConnectGate } from './connect-gate.ts';
import { expireConnection, tokenExpired } from './expiry.ts';
import { type FanOutDeps, pumpRun } from './fan-out.ts';
import { DEFAULT_LIVE_LIMITS } from './limits.ts';
import type { LiveConnection, LiveLimits } from './ports.ts';

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
  /** The bounds (default DEFAULT_LIVE_LIMITS). */
  limits?: LiveLimits;
  /** This process's gate before admissions (lib/live/connect-gate.ts); without it each connect reads the store. */
  gate?: ConnectGate;
}

/** What a connect came to: `unauthenticated` is answered 401, `too_many_connections` 429. */
export type ConnectOutcome = 'connected' | 'unauthenticated' | 'too_many_connections';

/**
 * A connection younger than this (ms) is not asked after when its principal is at the bound: it
 * may be between its admission and the end of its upgrade.
 */
export const PROBE_AFTER_MS = 10_000;

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
 * Authenticates and records the connection with its token's `exp`, within its principal's bound.
 * `unauthenticated` for bad credentials, a token without `exp`, one already expired by
 * `deps.now()`, or one whose `exp` is no safe integer or lies over 366 days ahead; `too_many_connections` when the principal holds `maxConnections` open sockets.
 * At the bound, the principal's sockets older than PROBE_AFTER_MS are asked after
 * (`poster.alive`, API Gateway's GetConnection): one whose $disconnect never came is forgotten
 * and its place given to this one. Through `deps.gate`, one principal's connects are admitted one
 * at a time and a principal just refused is refused again without a store read.
 */
export async function connect(
  deps: SocketDeps,
  connectionId: string,
  token: string | null,
): Promise<ConnectOutcome> {
  const identity = await deps.authenticate(token);
  if (identity === null) return 'unauthenticated';
  const now = deps.now();
  // An exp that is no safe integer or lies absurdly far ahead could not be stored as the
  // socket's lifetime: refused, as over HTTP (core/token-exp.ts).
  if (typeof identity.exp !== 'number' || tokenExpProblem(identity.exp, now) !== null)
    return 'unauthenticated';
  if (tokenExpired(identity.exp, now)) return 'unauthenticated';
  const connection: LiveConnection = {
    connection_id: connectionId,
    caller: identity.caller,
    connected_at: now,
    token_exp: identity.exp,
  };
  const quotaKey = quotaKeyOf(identity.caller.principal);
  const gate = deps.gate;
  if (gate === undefined) return admit(deps, connection);
  return gate.serially(quotaKey, async () => {
    if (gate.refusedRecently(quotaKey, deps.now())) return 'too_many_connections';
    const outcome = await admit(deps, connection);
    if (outcome === 'too_many_connections') gate.noteRefusal(quotaKey, deps.now());
    return outcome;
  });
}

/**
 * Records `connection` within its principal's bound; at the bound, forgets the principal's
 * sockets older than PROBE_AFTER_MS that `poster.alive` says are gone, and tries once more.
 */
async function admit(deps: SocketDeps, connection: LiveConnection): Promise<ConnectOutcome> {
  const max = (deps.limits ?? DEFAULT_LIVE_LIMITS).maxConnections;
  const now = connection.connected_at;
  const first = await deps.subscriptions.openConnection(connection, max, now);
  if (first.admitted) return 'connected';
  let freed = 0;
  for (const holder of first.holders) {
    if (now - holder.connected_at < PROBE_AFTER_MS) continue;
    if (await deps.poster.alive(holder.connection_id)) continue;
    await deps.subscriptions.deleteConnection(holder.connection_id);
    freed += 1;
  }
  if (freed > 0 && (await deps.subscriptions.openConnection(connection, max, now)).admitted)
    return 'connected';
  return 'too_many_connections';
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
  await subscribeTo(deps, connection, msg.run_id, msg.after);
}

/**
 * A subscribe: within the socket's rate and its principal's replay budget, authorized like a
 * read of the run, a cursor not beyond its head, within the socket's bound (or replacing its
 * subscription to the run); then `subscribed` and the catch-up, charged to the principal's
 * replay budget. Every refusal is an `error` message naming the run.
 */
async function subscribeTo(
  deps: SocketDeps,
  connection: LiveConnection,
  runId: string,
  after: number,
): Promise<void> {
  const connectionId = connection.connection_id;
  const limits = deps.limits ?? DEFAULT_LIVE_LIMITS;
  const refuse = (code: string, message: string, retryAfterMs?: number) =>
    deps.poster.post(connectionId, {
      type: 'error',
      code,
      message,
      run_id: runId,
      ...(retryAfterMs !== undefined ? { retry_after_ms: retryAfterMs } : {}),
    });
  if (!(await deps.subscriptions.takeSubscribe(connectionId, deps.now(), limits.subscribesPerMinute))) {
    await refuse(
      'subscribe_rate_exceeded',
      `at most ${limits.subscribesPerMinute} subscribes per socket per minute: subscribe again in the next minute`,
    );
    return;
  }
  // Spent already: refused before any read, so a principal past its budget costs a write, no more.
  const quotaKey = quotaKeyOf(connection.caller.principal);
  const replay = (bytes: number) => deps.subscriptions.takeReplay(quotaKey, bytes, deps.now(), limits);
  const budget = await replay(0);
  if (!budget.ok) {
    await refuse(
      REPLAY_BUDGET_EXCEEDED,
      `at most ${limits.replayBytes} bytes of catch-up per ${limits.replayWindowMs} ms for one principal: subscribe again in ${budget.retryAfterMs} ms`,
      budget.retryAfterMs,
    );
    return;
  }
  try {
    await deps.authorizeRead(runId, connection.caller);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const known = code === 'run_not_found' || code === 'unauthorized';
    await refuse(known ? code : 'internal', known ? String((err as Error).message) : 'internal error');
    return;
  }
  // A cursor beyond the log's head is refused, as over HTTP.
  const head = (await deps.store.getRun(runId))?.last_seq ?? 0;
  if (after > head) {
    await refuse('cursor_ahead', `cursor ${after} is beyond the run's last seq ${head}`);
    return;
  }
  const subscription = {
    run_id: runId,
    connection_id: connectionId,
    sent_seq: after,
    token_exp: connection.token_exp,
  };
  const outcome = await deps.subscriptions.subscribe(subscription, limits.maxSubscriptions);
  if (outcome === 'gone') return;
  if (outcome === 'full') {
    await refuse(
      'too_many_subscriptions',
      `at most ${limits.maxSubscriptions} runs per socket: unsubscribe from one first`,
    );
    return;
  }
  if ((await deps.poster.post(connectionId, { type: 'subscribed', run_id: runId, after })) === 'gone') {
    await deps.subscriptions.deleteConnection(connectionId);
    return;
  }
  await pumpRun(deps, runId, subscription, replay);
}

/** Forgets the connection and its subscriptions. */
export async function disconnect(deps: SocketDeps, connectionId: string): Promise<void> {
  await deps.subscriptions.deleteConnection(connectionId);
}
