/**
 * The long-poll feed of one run. It
 * long-polls `GET /runs/{id}/events?after=&wait=20` (lib/client): the last of the console's
 * transports (live-feed.ts tries the live WebSocket, then server-sent events). The feed delivers every event
 * after `after` exactly once, in seq order, until the run has settled (ended, its reducer answered every
 * event) or the signal aborts; each request is aborted with the signal, so a page left behind
 * does not keep a long poll (one of the browser's six connections) open. Transient failures
 * (network, 5xx, 429) are retried with backoff, never sooner than a Retry-After says; 401, 403
 * and 404 end the feed.
 */
import { type AgentRunsClient, createClient } from '../../../lib/client/client.ts';
import { ApiError } from '../../../lib/client/errors.ts';
import type { EventPage } from '../../../lib/client/shapes.ts';
import type { RunEvent } from '../../../lib/contracts/index.ts';

export interface RunFeedHandlers {
  /** New events, in seq order, never one twice (`page`: the long-poll page that brought them). */
  onEvents(events: RunEvent[], page?: EventPage): void;
  /** Every page, with the run's status and last_seq as read before its events. */
  onPage?(page: EventPage): void;
  /** A failed request: `retryInMs` null means the feed has ended (auth or a missing run). */
  onError?(error: unknown, retryInMs: number | null): void;
}

export interface RunFeedOptions {
  baseUrl: string;
  token: string;
  /** Deliver events with seq > after. */
  after: number;
  signal: AbortSignal;
  /** Long-poll wait per request, seconds (default 20, the API's maximum). */
  waitSeconds?: number;
  /** Events per page (default 1000, the API's maximum). */
  pageSize?: number;
  fetch?: (request: Request) => Promise<Response>;
}

const MAX_BACKOFF_MS = 15_000;

/** Follows the run until it settles or `signal` aborts; resolves then (never rejects). */
export async function followRun(runId: string, options: RunFeedOptions, on: RunFeedHandlers): Promise<void> {
  const { signal } = options;
  const doFetch = options.fetch ?? ((r: Request) => fetch(r));
  const client: AgentRunsClient = createClient({
    baseUrl: options.baseUrl,
    token: options.token,
    fetch: (request) => doFetch(new Request(request, { signal })),
    // The feed retries on its own, with backoff and never sooner than Retry-After (below).
    retry: { attempts: 1 },
  });
  let after = options.after;
  let failures = 0;
  let first = true;
  while (!signal.aborted) {
    let page: EventPage;
    try {
      // The first page answers at once (what is there now); later ones wait for news.
      page = await client.listRunEvents(runId, {
        after,
        limit: options.pageSize ?? 1000,
        wait: first ? 0 : (options.waitSeconds ?? 20),
      });
    } catch (error) {
      if (signal.aborted) return;
      const final = error instanceof ApiError && [401, 403, 404].includes(error.status);
      failures += 1;
      const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** (failures - 1));
      // A 429 says when to come back (too_many_waits: the caller's other waits hold every slot).
      const told = error instanceof ApiError ? error.retryAfterSeconds : undefined;
      const retryInMs = final ? null : told !== undefined ? Math.max(backoff, told * 1000) : backoff;
      on.onError?.(error, retryInMs);
      if (retryInMs === null) return;
      await sleep(retryInMs, signal);
      continue;
    }
    if (signal.aborted) return;
    failures = 0;
    on.onPage?.(page);
    const fresh = page.events.filter((e) => e.seq > after);
    if (fresh.length > 0) on.onEvents(fresh, page);
    after = Math.max(after, page.next_after);
    // A full page means more are there: ask again at once.
    first = page.events.length >= (options.pageSize ?? 1000);
    if (page.settled && after >= page.last_seq) return;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
