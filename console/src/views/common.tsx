/** Small pieces shared by the views: status badges, times, JSON blocks, a ticking clock. */
import { useEffect, useState } from 'react';
import type { ProjectionItemStatus, RunStatus } from '../../../lib/contracts/index.ts';
import { digestAlgText } from '../model/request-words.ts';
import { MODEL_CALL_ID_LABEL, modelCallIdHint, shortDigest, shortId, stamp } from '../model/words.ts';

export function StatusBadge({ status }: { status: RunStatus | ProjectionItemStatus | string }) {
  return <span className={`badge badge-${status}`}>{status.replace('_', ' ')}</span>;
}

/** The current time in ms, updated every `everyMs`. */
export function useNow(everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** `12 s ago`, `in 3 min`, ... */
export function relative(ms: number, now: number): string {
  const s = Math.round((ms - now) / 1000);
  const abs = Math.abs(s);
  if (abs < 2) return 'just now';
  const text =
    abs < 60 ? `${abs} s` : abs < 3600 ? `${Math.round(abs / 60)} min` : `${(abs / 3600).toFixed(1)} h`;
  return s >= 0 ? `in ${text}` : `${text} ago`;
}

/**
 * A time in the console's one style: local `YYYY-MM-DD HH:MM:SS` (24-hour), followed by how long
 * ago when `now` is given (`2026-12-04 01:04:11 (2 min ago)`); `compact` shows the relative part
 * only, the full time on hover (the runs list's narrow columns).
 */
export function Time({ ms, now, compact }: { ms: number; now?: number; compact?: boolean }) {
  const date = new Date(ms);
  const full = stamp(ms);
  const ago = now !== undefined ? relative(ms, now) : undefined;
  return (
    <time dateTime={date.toISOString()} title={`${full} (local time)`}>
      {compact === true && ago !== undefined ? ago : ago !== undefined ? `${full} (${ago})` : full}
    </time>
  );
}

/**
 * When an open request expires, `Expires in 3 min.`, then `what` (what happens at expiry,
 * model/run-words.ts expiryWhat); nothing when it never does.
 */
export function Expiry({ at, what }: { at: number | null; what?: string }) {
  const now = useNow();
  if (at === null) return null;
  return (
    <p className="muted" data-testid="expiry">
      Expires {relative(at, now)}.{what !== undefined ? ` ${what}` : ''}
    </p>
  );
}

/** `YYYY-MM-DD HH:MM:SS` and `HH:MM:SS.mmm` local time: model/words.ts's (kept here for the views' imports). */
export { clock, stamp } from '../model/words.ts';

/**
 * A JSON value, pretty-printed in a box that scrolls when long; the box takes focus so it can be
 * scrolled from the keyboard (WCAG 2.1.1; axe "scrollable-region-focusable").
 */
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard
    <section className="json" aria-label={label} tabIndex={0}>
      <pre>{JSON.stringify(value, null, 2)}</pre>
    </section>
  );
}

/**
 * The model's own id for a tool call, second to its operation: folded under a plain label
 * (MODEL_CALL_ID_LABEL), the id and what it is (modelCallIdHint) shown when opened.
 */
export function ModelCallId({ callId, testId = 'tool-call-id' }: { callId: string; testId?: string }) {
  return (
    <details className="call-id muted" data-testid={testId}>
      <summary>{MODEL_CALL_ID_LABEL}</summary>
      <span className="mono" title={callId}>
        {shortId(callId)}
      </span>
      : {modelCallIdHint(callId)}
    </details>
  );
}

/** A projection item's detail in one line: model/words.ts's (kept here for the views' imports). */
export { detailText } from '../model/words.ts';

/** A message for any error (ApiError carries the API's code). */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

export function short(hash: string, n = 12): string {
  return hash.length > n ? `${hash.slice(0, n)}…` : hash;
}

/**
 * A digest shown short (no `sha256:rfc8785:` prefix, the first 12 characters) with a button
 * that shows the full value, selectable for copying, and what its prefix means (digestAlgText).
 * `full` is what the button reveals.
 */
export function Digest({ full, testId }: { full: string; testId?: string }) {
  const [open, setOpen] = useState(false);
  return (
    <span className="digest">
      <span className="mono" title={full} data-testid={testId}>
        {shortDigest(full)}
      </span>{' '}
      <button type="button" className="link-button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'hide full' : 'show full'}
      </button>
      {open ? (
        <code
          className="mono wrap digest-full"
          data-testid={testId !== undefined ? `${testId}-full` : undefined}
        >
          {full}
        </code>
      ) : null}
      {open && digestAlgText(full) !== undefined ? (
        <span className="block muted" data-testid={testId !== undefined ? `${testId}-alg` : undefined}>
          {digestAlgText(full)}
        </span>
      ) : null}
    </span>
  );
}
