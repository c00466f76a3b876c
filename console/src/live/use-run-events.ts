/**
 * A run's events for a view, kept live by the feed (live-feed.ts: the live WebSocket, else
 * server-sent events, else long polls). The view asks for the newest
 * `window` events first (a long run's page opens on its latest 1,000 events, not its first),
 * can load older ones page by page, and is told the feed's state: live, retrying, settled or
 * ended by an error.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { RunEvent } from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';
import { OLDER_PAGE } from '../model/paging.ts';
import { followRunLive, type Transport } from './live-feed.ts';

export type FeedState =
  | { kind: 'starting' }
  | { kind: 'live'; transport: Transport }
  | { kind: 'retrying'; message: string; retryInMs: number }
  | { kind: 'settled' }
  | { kind: 'ended'; message: string };

export interface RunEvents {
  /** Ascending by seq, contiguous from `firstSeq`. */
  events: RunEvent[];
  /** The lowest seq loaded (1 when the whole log is loaded); null before the first page. */
  firstSeq: number | null;
  state: FeedState;
  loadOlder(): Promise<void>;
  loadingOlder: boolean;
}

/**
 * Follows `runId` from the newest `windowSize` events before `lastSeq` (null: not known yet, the
 * hook waits). `onNews` is called after each batch of new events (e.g. to refresh the run).
 */
export function useRunEvents(
  runId: string,
  lastSeq: number | null,
  windowSize: number | 'all',
  onNews?: (events: RunEvent[]) => void,
): RunEvents {
  const { client, baseUrl, session, config } = useApi();
  const wsUrl = config.live_url;
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [state, setState] = useState<FeedState>({ kind: 'starting' });
  const [firstSeq, setFirstSeq] = useState<number | null>(null);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const started = lastSeq !== null;
  const startAfter = useRef<number | null>(null);
  if (startAfter.current === null && lastSeq !== null) {
    startAfter.current = windowSize === 'all' ? 0 : Math.max(0, lastSeq - windowSize);
  }
  // The record read before the feed started already reflects its events up to lastSeq: only
  // later ones are news (so the first page does not make the page read the run again).
  const knownSeq = useRef<number | null>(null);
  if (knownSeq.current === null && lastSeq !== null) knownSeq.current = lastSeq;
  const news = useRef(onNews);
  news.current = onNews;

  useEffect(() => {
    if (!started || startAfter.current === null) return;
    const after = startAfter.current;
    const abort = new AbortController();
    setFirstSeq(after + 1);
    let transport: Transport = 'poll';
    void followRunLive(
      runId,
      { baseUrl, token: session.token, after, signal: abort.signal, wsUrl },
      {
        onTransport(next) {
          transport = next;
          setState({ kind: 'live', transport: next });
        },
        onSettled() {
          setState({ kind: 'settled' });
        },
        onEvents(fresh) {
          setEvents((prev) => {
            const last = prev[prev.length - 1]?.seq ?? after;
            const add = fresh.filter((e) => e.seq > last);
            return add.length === 0 ? prev : [...prev, ...add];
          });
          const later = fresh.filter((e) => e.seq > (knownSeq.current ?? 0));
          if (later.length > 0) news.current?.(later);
        },
        onPage(page) {
          const settled = page.settled && page.next_after >= page.last_seq;
          if (!settled) setState({ kind: 'live', transport });
        },
        onError(error, retryInMs) {
          const message = error instanceof Error ? error.message : String(error);
          setState(
            retryInMs === null ? { kind: 'ended', message } : { kind: 'retrying', message, retryInMs },
          );
        },
      },
    );
    return () => abort.abort();
  }, [runId, baseUrl, session.token, started, wsUrl]);

  const loadOlder = useCallback(async () => {
    if (firstSeq === null || firstSeq <= 1) return;
    setLoadingOlder(true);
    try {
      const from = Math.max(0, firstSeq - 1 - OLDER_PAGE);
      const page = await client.listRunEvents(runId, { after: from, limit: firstSeq - 1 - from });
      const older = page.events.filter((e) => e.seq < firstSeq);
      setEvents((prev) => [...older, ...prev]);
      setFirstSeq(from + 1);
    } finally {
      setLoadingOlder(false);
    }
  }, [client, runId, firstSeq]);

  return { events, firstSeq, state, loadOlder, loadingOlder };
}
