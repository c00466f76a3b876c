/**
 * The live socket's three moments, the same behind API Gateway's WebSocket API and the local
 * socket server: connect (authenticate as on HTTP: a bearer token, here in the `token` query
 * parameter or the Authorization header, since a browser cannot set headers on a WebSocket),
 * a message (subscribe to a run from a seq, unsubscribe), disconnect. A subscription is
 * authorized like a read of the run; it is caught up at once (pumpRun for it alone), then kept
 * up by the stream's fan-out. Seed: agent-runs, "over HTTP, WebSocket".
 */
import { LiveClientMessage } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { type FanOutDeps, pumpRun } from './fan-out.ts';

export interface SocketDeps extends FanOutDeps {
  /** The caller a connect request's token stands for, or null (refused 401). */
  authenticate(token: string | null): Promise<Caller | null>;
  /** Whether `caller` may read the run (throws EngineError run_not_found / unauthorized otherwise). */
  authorizeRead(runId: string, caller: Caller): Promise<void>;
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

/** Authenticates and records the connection. Returns false (refuse with 401) for bad credentials. */
export async function connect(
  deps: SocketDeps,
  connectionId: string,
  token: string | null,
): Promise<boolean> {
  const caller = await deps.authenticate(token);
  if (caller === null) return false;
  await deps.subscriptions.putConnection({ connection_id: connectionId, caller, connected_at: deps.now() });
  return true;
}

/** Handles one text frame. Never throws for a bad message: the client gets an `error` message. */
export async function receive(deps: SocketDeps, connectionId: string, body: string): Promise<void> {
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
  const connection = await deps.subscriptions.getConnection(connectionId);
  if (connection === null) {
    await deps.poster.post(connectionId, {
      type: 'error',
      code: 'unauthenticated',
      message: 'connect again',
    });
    return;
  }
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
  // A cursor beyond the log's head is refused, as over HTTP (issue 25, point 7).
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
  const subscription = { run_id: msg.run_id, connection_id: connectionId, sent_seq: msg.after };
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
