/** Small pieces shared by the views: status badges, times, JSON blocks, a ticking clock. */
import { useEffect, useState } from 'react';
import type { ProjectionItemStatus, RunStatus } from '../../../lib/contracts/index.ts';
import { shortDigest } from '../model/words.ts';

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

export function Time({ ms, now }: { ms: number; now?: number }) {
  const date = new Date(ms);
  return (
    <time dateTime={date.toISOString()} title={date.toISOString()}>
      {now !== undefined ? relative(ms, now) : date.toLocaleString()}
    </time>
  );
}

/** `HH:MM:SS.mmm` local time. */
export function clock(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

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

/** A projection item's detail in one line: text as it is, an object as `key value · ...` (nulls left out). */
export function detailText(detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (detail !== null && typeof detail === 'object' && !Array.isArray(detail)) {
    return Object.entries(detail)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' · ');
  }
  return JSON.stringify(detail);
}

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
 * that shows the full value, selectable for copying. `full` is what the button reveals.
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
    </span>
  );
}
