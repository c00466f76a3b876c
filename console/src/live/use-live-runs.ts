/**
 * The runs list's live updates: one WebSocket to the live socket (the config's `live_url`;
 * the protocol of lib/contracts/live.ts) with a subscription per unfinished run shown, from the
 * last seq the list holds. Any event or `settled` for one of them calls `onNews` (at most once
 * per `debounceMs`), so the list is read again at once instead of at its next poll. Returns
 * whether the socket is open: while it is not (no live_url, refused, dropped), the list keeps
 * polling at its usual pace; the socket reconnects with backoff.
 */
import { useEffect, useRef, useState } from 'react';
import { LiveServerMessage, type PublicRunRecord } from '../../../lib/contracts/index.ts';
import { useApi } from '../api.tsx';

const FINISHED = new Set(['completed', 'failed', 'stopped']);

/** The runs worth following: those not finished, with the seq the list holds. */
function followed(runs: Pick<PublicRunRecord, 'run_id' | 'status' | 'last_seq'>[]): Map<string, number> {
  return new Map(runs.filter((r) => !FINISHED.has(r.status)).map((r) => [r.run_id, r.last_seq]));
}

export function useLiveRuns(
  runs: Pick<PublicRunRecord, 'run_id' | 'status' | 'last_seq'>[],
  onNews: () => void,
  debounceMs = 150,
): boolean {
  const { config, session } = useApi();
  const wsUrl = config.live_url;
  const [socket, setSocket] = useState<WebSocket | null>(null);
  const news = useRef(onNews);
  news.current = onNews;
  const subscribed = useRef(new Set<string>());

  useEffect(() => {
    if (wsUrl === undefined || typeof WebSocket === 'undefined') return;
    let closed = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let debounce: ReturnType<typeof setTimeout> | undefined;
    let pause = 1_000;
    let ws: WebSocket | null = null;
    const connect = () => {
      const url = new URL(wsUrl);
      url.searchParams.set('token', session.token);
      const current = new WebSocket(url);
      ws = current;
      current.onopen = () => {
        pause = 1_000;
        subscribed.current = new Set();
        setSocket(current);
      };
      current.onmessage = (m) => {
        let json: unknown;
        try {
          json = JSON.parse(String(m.data));
        } catch {
          return;
        }
        const parsed = LiveServerMessage.safeParse(json);
        if (!parsed.success) return;
        if (parsed.data.type === 'settled') subscribed.current.delete(parsed.data.run_id);
        if (parsed.data.type !== 'event' && parsed.data.type !== 'settled') return;
        if (debounce !== undefined) return;
        debounce = setTimeout(() => {
          debounce = undefined;
          news.current();
        }, debounceMs);
      };
      current.onclose = () => {
        setSocket(null);
        if (closed) return;
        retry = setTimeout(connect, pause);
        pause = Math.min(30_000, pause * 2);
      };
    };
    connect();
    return () => {
      closed = true;
      clearTimeout(retry);
      clearTimeout(debounce);
      ws?.close();
    };
  }, [wsUrl, session.token, debounceMs]);

  // Subscribe to the unfinished runs shown; let go of those no longer shown or finished.
  const wanted = followed(runs);
  const key = [...wanted.keys()].sort().join(',');
  const seqs = useRef(wanted);
  seqs.current = wanted;
  useEffect(() => {
    if (socket === null || socket.readyState !== WebSocket.OPEN) return;
    if (key === '' && subscribed.current.size === 0) return; // nothing to follow, nothing to let go
    const want = seqs.current;
    for (const [runId, after] of want) {
      if (subscribed.current.has(runId)) continue;
      socket.send(JSON.stringify({ action: 'subscribe', run_id: runId, after }));
      subscribed.current.add(runId);
    }
    for (const runId of [...subscribed.current]) {
      if (want.has(runId)) continue;
      socket.send(JSON.stringify({ action: 'unsubscribe', run_id: runId }));
      subscribed.current.delete(runId);
    }
  }, [socket, key]);

  return socket !== null;
}
