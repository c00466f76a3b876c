/**
 * The live event feed of one run over the best transport there is: the live WebSocket
 * (`followLive`, lib/client/live.ts; the config's `live_url`), else server-sent events
 * (`followSse`, `GET /runs/{id}/events/stream`), else long polls (`followRun`, run-feed.ts).
 * The first page is one plain read (what is there now, at once); the transports then carry on
 * from its last seq. A socket that does not open within `connectMs`, or an SSE stream whose
 * requests fail `maxFailures` times in a row, hands over to the next transport, resuming from
 * the last seq delivered. Same promise as followRun: every event after `after`, once, in seq
 * order, until the run settles or the signal aborts; 401, 403 and 404 (run_not_found,
 * unauthorized) end the feed.
 */
import { createClient } from '../../../lib/client/client.ts';
import { ApiError } from '../../../lib/client/errors.ts';
import { followLive, followSse, type LiveTarget } from '../../../lib/client/live.ts';
import type { RunEvent } from '../../../lib/contracts/index.ts';
import { followRun, type RunFeedHandlers, type RunFeedOptions } from './run-feed.ts';

/** How the feed hears of new events. */
export type Transport = 'websocket' | 'sse' | 'poll';

export interface LiveFeedOptions extends RunFeedOptions {
  /** The live WebSocket (`ws://` / `wss://`); absent: start with server-sent events. */
  wsUrl?: string | undefined;
  /** Transports not to try (e.g. `['websocket']` where a proxy refuses upgrades). */
  skip?: Transport[];
  /** How long the socket may take to open before SSE takes over (ms, default 3 000). */
  connectMs?: number;
  /** Failed SSE requests in a row before long polls take over (default 3). */
  maxFailures?: number;
}

export interface LiveFeedHandlers extends RunFeedHandlers {
  /** The transport now carrying the feed (called again on each hand-over). */
  onTransport?(transport: Transport): void;
  /** The run has settled: every event is delivered, none will follow. */
  onSettled?(): void;
}

const FINAL_STATUSES = [401, 403, 404];
const FINAL_CODES = ['run_not_found', 'unauthorized', 'unauthenticated', 'forbidden'];
const isFinal = (error: unknown) =>
  error instanceof ApiError && (FINAL_STATUSES.includes(error.status) || FINAL_CODES.includes(error.code));

/** Follows the run until it settles or `signal` aborts; resolves then (never rejects). */
export async function followRunLive(
  runId: string,
  options: LiveFeedOptions,
  on: LiveFeedHandlers,
): Promise<void> {
  const { signal } = options;
  let after = options.after;
  const deliver = (events: RunEvent[]) => {
    const fresh = events.filter((e) => e.seq > after);
    if (fresh.length === 0) return;
    after = fresh[fresh.length - 1]?.seq ?? after;
    on.onEvents(fresh);
  };
  const doFetch = options.fetch ?? ((r: Request) => fetch(r));

  // The first page: what is there now, in one read (the long poll's first page, wait 0).
  try {
    const client = createClient({
      baseUrl: options.baseUrl,
      token: options.token,
      fetch: (request) => doFetch(new Request(request, { signal })),
      retry: { attempts: 2 },
    });
    const page = await client.events(runId, { after, limit: options.pageSize ?? 1000, wait: 0 });
    deliver(page.events);
    const full = page.events.length >= (options.pageSize ?? 1000);
    if (!full && (page.settled ?? false) && after >= page.last_seq) {
      on.onSettled?.();
      return;
    }
  } catch (error) {
    if (signal.aborted) return;
    if (isFinal(error)) {
      on.onError?.(error, null);
      return;
    }
    // Anything else: the transports below read from `after` again.
  }

  const target: LiveTarget = {
    baseUrl: options.baseUrl,
    token: options.token,
    fetch: doFetch,
    ...(options.wsUrl !== undefined ? { wsUrl: options.wsUrl } : {}),
  };
  const skip = new Set(options.skip ?? []);
  if (options.wsUrl !== undefined && !skip.has('websocket') && !signal.aborted) {
    const outcome = await overSocket(runId, target, options, on, () => after, deliver);
    if (outcome !== 'handover') return;
  }
  if (!skip.has('sse') && !signal.aborted) {
    const outcome = await overSse(runId, target, options, on, () => after, deliver);
    if (outcome !== 'handover') return;
  }
  if (signal.aborted) return;
  on.onTransport?.('poll');
  let settled = false;
  await followRun(
    runId,
    { ...options, after },
    {
      onEvents: (events) => deliver(events),
      onPage: (page) => {
        on.onPage?.(page);
        settled = (page.settled ?? false) && page.next_after >= page.last_seq;
      },
      onError: (error, retryInMs) => on.onError?.(error, retryInMs),
    },
  );
  if (settled) on.onSettled?.();
}

type Outcome = 'settled' | 'ended' | 'handover';

/** One transport's follow, with its own abort (the hand-over) tied to the feed's. */
function linkedAbort(outer: AbortSignal): AbortController {
  const inner = new AbortController();
  if (outer.aborted) inner.abort();
  else outer.addEventListener('abort', () => inner.abort(), { once: true });
  return inner;
}

async function overSocket(
  runId: string,
  target: LiveTarget,
  options: LiveFeedOptions,
  on: LiveFeedHandlers,
  after: () => number,
  deliver: (events: RunEvent[]) => void,
): Promise<Outcome> {
  const inner = linkedAbort(options.signal);
  let opened = false;
  const watchdog = setTimeout(() => {
    if (!opened) inner.abort();
  }, options.connectMs ?? 3_000);
  try {
    const events = followLive(target, runId, {
      after: after(),
      signal: inner.signal,
      onConnect: () => {
        opened = true;
        on.onTransport?.('websocket');
      },
    });
    for await (const event of events) deliver([event]);
    if (options.signal.aborted) return 'ended';
    if (inner.signal.aborted) return 'handover';
    on.onSettled?.();
    return 'settled';
  } catch (error) {
    if (options.signal.aborted) return 'ended';
    if (isFinal(error)) {
      on.onError?.(error, null);
      return 'ended';
    }
    return 'handover';
  } finally {
    clearTimeout(watchdog);
  }
}

async function overSse(
  runId: string,
  target: LiveTarget,
  options: LiveFeedOptions,
  on: LiveFeedHandlers,
  after: () => number,
  deliver: (events: RunEvent[]) => void,
): Promise<Outcome> {
  const inner = linkedAbort(options.signal);
  const doFetch = target.fetch ?? ((r: Request) => fetch(r));
  let failures = 0;
  const counted: LiveTarget = {
    ...target,
    fetch: async (request) => {
      try {
        const response = await doFetch(request);
        if (response.status >= 500) failures += 1;
        else {
          failures = 0;
          if (response.ok) on.onTransport?.('sse');
        }
        if (failures >= (options.maxFailures ?? 3)) inner.abort();
        return response;
      } catch (error) {
        failures += 1;
        if (failures >= (options.maxFailures ?? 3)) inner.abort();
        throw error;
      }
    },
  };
  try {
    for await (const event of followSse(counted, runId, { after: after(), signal: inner.signal, wait: 20 })) {
      deliver([event]);
    }
    if (options.signal.aborted) return 'ended';
    if (inner.signal.aborted) return 'handover';
    on.onSettled?.();
    return 'settled';
  } catch (error) {
    if (options.signal.aborted) return 'ended';
    if (isFinal(error)) {
      on.onError?.(error, null);
      return 'ended';
    }
    return 'handover';
  }
}
