/**
 * Following a run live: over the WebSocket (the live protocol, lib/contracts/live.ts) or over
 * server-sent events (`GET /runs/{id}/events/stream`), with the same promise: every event after
 * `after`, once, in seq order, then the end when the run settled. Each keeps the last seq it
 * yielded and drops what is not above it; on a gap, a dropped connection or a response that
 * ended, it resumes from that seq. Browser-safe: the WebSocket
 * and fetch of the platform (Node 22+, browsers), no `node:*`. docs/contracts/run-lifecycle.md,
 * "over HTTP, WebSocket".
 */
import { createParser } from 'eventsource-parser';
import { RunIdParams, StreamQuery } from '../contracts/http-params.ts';
import {
  LiveServerMessage,
  REPLAY_BUDGET_EXCEEDED,
  RunEvent,
  TOKEN_EXPIRED,
  TOKEN_EXPIRED_CLOSE,
} from '../contracts/index.ts';
import { answeredCode, refusedParameters } from './call.ts';
import { ApiError } from './errors.ts';

/** The options of `followLive` and `followSse`: where to start, how to stop, reconnect pacing. */
export interface FollowLiveOptions {
  /** Events with seq > after (default 0). */
  after?: number;
  /** Stops the follow (the iterator returns). */
  signal?: AbortSignal;
  /** Called when the transport (re)connects, with the seq it resumes from. */
  onConnect?: (after: number) => void;
  /** Pause before a reconnect (ms, default 200, doubling to 5 000 while connects fail). */
  reconnectMs?: number;
  /** How long a seq gap may stay open before the follow subscribes again from the last seq held (ms, default 1 000). */
  gapMs?: number;
}

/** What a follow needs of the client: where the API is and the token. */
export interface LiveTarget {
  /** The HTTP API (server-sent events). */
  baseUrl: string;
  /** The live WebSocket (`ws://` / `wss://`). */
  wsUrl?: string;
  /** The bearer token (HTTP) or `token` query parameter (WebSocket). */
  token?: string;
  /**
   * A fresh token, asked for at each (re)connect; without it `token` is used. The server ends a
   * socket whose token expired with an `error` message `token_expired` and close code
   * {@link TOKEN_EXPIRED_CLOSE} (in AWS the close code is API Gateway's, the message tells);
   * the follow then reconnects with the provider's token, and throws ApiError token_expired
   * without a provider rather than reconnecting with the same expired token.
   */
  tokenProvider?: () => string | Promise<string>;
  /** Replaces global fetch (server-sent events). */
  fetch?: (request: Request) => Promise<Response>;
}

/** The close code of a live socket whose token expired (also announced by an `error` message `token_expired`). */
export { TOKEN_EXPIRED_CLOSE };

/** The error codes of the live socket that another try will not change: the follow throws them. */
const FINAL_CODES = [
  'run_not_found',
  'unauthorized',
  'invalid_message',
  'cursor_ahead',
  'too_many_subscriptions',
] as const;
const isFinal = (code: string): code is (typeof FINAL_CODES)[number] =>
  (FINAL_CODES as readonly string[]).includes(code);

/** The `error` code of a subscribe past the socket's rate; the follow subscribes again after RATE_RETRY_MS. */
const SUBSCRIBE_RATE_EXCEEDED = 'subscribe_rate_exceeded';
/** The pause before a subscribe the server refused for its rate (ms): the rate is counted per minute. */
const RATE_RETRY_MS = 10_000;
/**
 * The bounds of the pause before a subscribe again after `replay_budget_exceeded` (ms): the
 * server's `retry_after_ms`, at least the first, at most the second (its absence: the second).
 */
const REPLAY_RETRY_MS = [50, 60_000] as const;
const replayRetryMs = (hint: number | undefined) =>
  Math.min(REPLAY_RETRY_MS[1], Math.max(REPLAY_RETRY_MS[0], hint ?? REPLAY_RETRY_MS[1]));

const aborted = (options: FollowLiveOptions) => options.signal?.aborted === true;

/** A queue an event source pushes into and the iterator drains. */
function channel<T>() {
  const items: T[] = [];
  let wake: (() => void) | undefined;
  return {
    push(item: T) {
      items.push(item);
      wake?.();
    },
    async next(): Promise<T> {
      while (items.length === 0) await new Promise<void>((r) => (wake = r));
      return items.shift() as T;
    },
  };
}

type Signal =
  | { kind: 'message'; message: LiveServerMessage }
  | { kind: 'closed'; reason: string }
  | { kind: 'gap' }
  | { kind: 'retry' }
  | { kind: 'open' };

/**
 * The events of one follow in seq order, each once: what is not above the last seq yielded is
 * dropped; an event that comes early (a gap) waits until the gap closes.
 */
export function seqOrder(after: number) {
  let last = after;
  const early = new Map<number, RunEvent>();
  return {
    get last() {
      return last;
    },
    /** Whether events are held behind a gap. */
    get gapped() {
      return early.size > 0;
    },
    /** The events `event` makes ready, in order (none for a repeat or an early one). */
    take(event: RunEvent): RunEvent[] {
      if (event.seq <= last) return [];
      early.set(event.seq, event);
      const ready: RunEvent[] = [];
      for (let next = early.get(last + 1); next !== undefined; next = early.get(last + 1)) {
        early.delete(next.seq);
        last = next.seq;
        ready.push(next);
      }
      return ready;
    },
  };
}

/**
 * Event `seq` of `runId` read whole over HTTP (`GET /runs/{id}/events?after={seq-1}&limit=1`,
 * bearer token as the follow's), or null when it could not be read (any failure: the caller
 * treats it as not received).
 */
async function wholeEvent(
  target: LiveTarget,
  runId: string,
  seq: number,
  signal: AbortSignal | undefined,
): Promise<RunEvent | null> {
  try {
    const url = new URL(`${target.baseUrl.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)}/events`);
    url.searchParams.set('after', String(seq - 1));
    url.searchParams.set('limit', '1');
    const headers = new Headers({ accept: 'application/json' });
    const token = target.tokenProvider !== undefined ? await target.tokenProvider() : target.token;
    if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
    const doFetch = target.fetch ?? ((r: Request) => fetch(r));
    const response = await doFetch(new Request(url, { headers, ...(signal ? { signal } : {}) }));
    if (!response.ok) return null;
    const body = (await response.json()) as { events?: unknown[] };
    const parsed = RunEvent.safeParse(body.events?.[0]);
    return parsed.success && parsed.data.seq === seq ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Follows `runId` over the WebSocket at `target.wsUrl` (token in the `token` query parameter).
 * Yields each event once, in order, whole: an event the server sent `truncated` (its frame was
 * over MAX_LIVE_FRAME_BYTES) is read whole over HTTP at `target.baseUrl` before it is yielded.
 * Returns when the run settled. A gap that stays open for
 * `gapMs` is closed by subscribing again from the last seq held, on the same socket. Any close
 * (a dropped network, the server's idle timeout or maximum connection duration, close 1001, an
 * expired token with a `tokenProvider`) is followed by a reconnect and a subscribe from the last
 * seq held; an upgrade refused (401, 429 `too_many_connections`) is tried again with a doubling
 * pause up to 5 s; a `subscribe_rate_exceeded` is retried on the same socket after 10 s, a
 * `replay_budget_exceeded` (the catch-up stopped: the principal's replay budget is spent) after
 * its `retry_after_ms` (at least 50 ms, at most 60 s). Throws
 * ApiError for an `error` message that will not go away (run_not_found, unauthorized,
 * cursor_ahead, too_many_subscriptions), or for an expired token without a `tokenProvider`.
 */
export async function* followLive(
  target: LiveTarget,
  runId: string,
  options: FollowLiveOptions = {},
): AsyncGenerator<RunEvent, void, undefined> {
  if (target.wsUrl === undefined) throw new ApiError('validation_failed', 0, 'no live WebSocket URL');
  const Socket = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
  if (Socket === undefined)
    throw new ApiError('unsupported', 0, 'this platform has no WebSocket: use followSse');
  const order = seqOrder(options.after ?? 0);
  let pause = options.reconnectMs ?? 200;
  while (!aborted(options)) {
    const url = new URL(target.wsUrl);
    const token = target.tokenProvider !== undefined ? await target.tokenProvider() : target.token;
    if (token !== undefined) url.searchParams.set('token', token);
    const queue = channel<Signal>();
    const ws = new Socket(url);
    const abort = () => ws.close();
    options.signal?.addEventListener('abort', abort, { once: true });
    let opened = false;
    /** The server said the token expired: the close that follows is the token's end. */
    let expired = false;
    let gapTimer: ReturnType<typeof setTimeout> | undefined;
    let retryTimer: ReturnType<typeof setTimeout> | undefined;
    /** A truncated event could not be read whole: subscribe again, as for a gap. */
    let missed = false;
    const subscribe = () =>
      ws.send(JSON.stringify({ action: 'subscribe', run_id: runId, after: order.last }));
    ws.onopen = () => {
      opened = true;
      queue.push({ kind: 'open' });
    };
    ws.onmessage = (m) => {
      const parsed = LiveServerMessage.safeParse(JSON.parse(String(m.data)));
      if (parsed.success) queue.push({ kind: 'message', message: parsed.data });
    };
    ws.onclose = (e) => queue.push({ kind: 'closed', reason: String(e.code) });
    ws.onerror = () => queue.push({ kind: 'closed', reason: 'error' });
    try {
      for (;;) {
        const signal = await queue.next();
        if (signal.kind === 'open') {
          options.onConnect?.(order.last);
          pause = options.reconnectMs ?? 200;
          subscribe();
          continue;
        }
        if (signal.kind === 'gap') {
          gapTimer = undefined;
          if (order.gapped || missed) subscribe();
          missed = false;
          continue;
        }
        if (signal.kind === 'retry') {
          retryTimer = undefined;
          subscribe();
          continue;
        }
        if (signal.kind === 'closed') {
          if (
            (expired || signal.reason === String(TOKEN_EXPIRED_CLOSE)) &&
            target.tokenProvider === undefined
          )
            throw new ApiError(TOKEN_EXPIRED, 0, 'the live socket was closed: its token expired');
          if (!opened && signal.reason === '1006' && !aborted(options)) {
            // Refused at the upgrade (401) or unreachable: try again later, up to a point.
            pause = Math.min(5_000, pause * 2);
          }
          break;
        }
        const msg = signal.message;
        if (msg.type === 'error') {
          if (isFinal(msg.code)) throw new ApiError(msg.code, 0, msg.message);
          if (msg.code === TOKEN_EXPIRED) expired = true; // the close follows
          if (msg.code === SUBSCRIBE_RATE_EXCEEDED && retryTimer === undefined) {
            // The socket stays open: subscribe again later, from the last seq held.
            retryTimer = setTimeout(() => queue.push({ kind: 'retry' }), RATE_RETRY_MS);
          }
          if (msg.code === REPLAY_BUDGET_EXCEEDED && retryTimer === undefined) {
            // The catch-up stopped after the events received (the subscription ended): subscribe
            // again from the last seq held once the server's hint has passed.
            retryTimer = setTimeout(() => queue.push({ kind: 'retry' }), replayRetryMs(msg.retry_after_ms));
          }
          continue;
        }
        if (msg.type === 'settled') {
          if (msg.last_seq <= order.last) return;
          subscribe(); // settled beyond what we hold: a gap; subscribe again from the last seq
          continue;
        }
        if (msg.type !== 'event' || msg.run_id !== runId) continue;
        // Too large for one frame: the server sent it without its data; read it whole over HTTP.
        // Unread (a failed fetch), it stays a gap that the gap timer closes by subscribing again.
        const whole =
          msg.truncated === true && msg.event.seq > order.last
            ? await wholeEvent(target, runId, msg.event.seq, options.signal)
            : msg.event;
        if (whole !== null) for (const event of order.take(whole)) yield event;
        else missed = true;
        if ((order.gapped || missed) && gapTimer === undefined)
          gapTimer = setTimeout(() => queue.push({ kind: 'gap' }), options.gapMs ?? 1_000);
      }
    } finally {
      clearTimeout(gapTimer);
      clearTimeout(retryTimer);
      options.signal?.removeEventListener('abort', abort);
      ws.onclose = null;
      ws.onmessage = null;
      ws.close();
    }
    if (aborted(options)) return;
    await new Promise((r) => setTimeout(r, pause));
  }
}

/**
 * Follows `runId` over server-sent events: each response carries the events found within its
 * wait; the next request resumes with Last-Event-ID. Returns when the run settled (an
 * `event: settled`, or 204). A 429 `too_many_waits` is retried after its Retry-After. Throws
 * ApiError for any other error answer (run_not_found, ...), and `validation_failed` (nothing
 * sent) for a run id, `after` or `wait` the route's own schemas refuse.
 */
export async function* followSse(
  target: LiveTarget,
  runId: string,
  options: FollowLiveOptions & { wait?: number } = {},
): AsyncGenerator<RunEvent, void, undefined> {
  const refused = refusedParameters({
    method: 'GET',
    path: '/runs/{id}/events/stream',
    params: { schema: RunIdParams, values: { id: runId } },
    query: { after: options.after, wait: options.wait },
    querySchema: StreamQuery,
    schema: RunEvent,
  });
  if (refused !== undefined) throw refused;
  const doFetch = target.fetch ?? ((r: Request) => fetch(r));
  let last = options.after ?? 0;
  let pause = options.reconnectMs ?? 200;
  while (!aborted(options)) {
    const url = new URL(
      `${target.baseUrl.replace(/\/+$/, '')}/runs/${encodeURIComponent(runId)}/events/stream`,
    );
    url.searchParams.set('after', String(last));
    if (options.wait !== undefined) url.searchParams.set('wait', String(options.wait));
    const headers = new Headers({ accept: 'text/event-stream', 'last-event-id': String(last) });
    const token = target.tokenProvider !== undefined ? await target.tokenProvider() : target.token;
    if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
    options.onConnect?.(last);
    let response: Response;
    try {
      response = await doFetch(
        new Request(url, { headers, ...(options.signal ? { signal: options.signal } : {}) }),
      );
    } catch {
      if (aborted(options)) return;
      pause = Math.min(5_000, pause * 2);
      await new Promise((r) => setTimeout(r, pause));
      continue;
    }
    if (response.status === 204) return;
    if (!response.ok) {
      const body = (await response.json().catch(() => ({}))) as { code?: string; message?: string };
      if (response.status >= 500) {
        await new Promise((r) => setTimeout(r, pause));
        continue;
      }
      // The caller holds as many open waits as the API allows: come back when it says.
      const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
      if (body.code === 'too_many_waits' && Number.isFinite(retryAfter)) {
        await new Promise((r) => setTimeout(r, Math.max(pause, retryAfter * 1000)));
        continue;
      }
      throw new ApiError(
        answeredCode(body.code, response.status),
        response.status,
        body.message ?? 'the event stream was refused',
        body.code !== undefined && answeredCode(body.code, response.status) !== body.code
          ? { code: body.code }
          : {},
      );
    }
    const found: { kind: 'event'; event: RunEvent }[] = [];
    let settled: number | null = null;
    const parser = createParser({
      onEvent(e) {
        if (e.event === 'settled') settled = (JSON.parse(e.data) as { last_seq: number }).last_seq;
        else if (e.event === 'run_event') {
          const parsed = RunEvent.safeParse(JSON.parse(e.data));
          if (parsed.success) found.push({ kind: 'event', event: parsed.data });
        }
      },
    });
    const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
    let gap = false;
    while (reader !== undefined) {
      // A connection cut mid-response ends this response; the next one resumes from `last`.
      const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) break;
      parser.feed(chunk.value);
      for (const item of found.splice(0)) {
        if (item.event.seq <= last) continue;
        if (item.event.seq !== last + 1) {
          gap = true;
          break;
        }
        last = item.event.seq;
        yield item.event;
      }
      if (gap) {
        await reader.cancel();
        break;
      }
    }
    if (!gap && settled !== null && last >= settled) return;
    pause = options.reconnectMs ?? 200;
  }
}
