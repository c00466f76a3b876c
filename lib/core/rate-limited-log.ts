/**
 * A log line that cannot flood: for events a client can cause at will (a connection dropped
 * mid-body, a request abandoned), at most one line per interval, each saying how many like it
 * were left out since the previous one.
 */

/** Default interval between two lines of one rate-limited log (ms). */
export const DEFAULT_RATE_LIMIT_INTERVAL_MS = 10_000;

export interface RateLimitedLog {
  /**
   * Notes one event: writes `message` with `attributes` plus `suppressed` (the events left out
   * since the previous line, 0 for none) when `intervalMs` passed since the last line written
   * (or none was), else only counts it.
   */
  note(attributes?: Record<string, unknown>): void;
  /** Writes one line for the events left out since the last line, if any (at shutdown). */
  flush(): void;
  /** Events noted and lines written so far. */
  readonly counts: { noted: number; written: number };
}

/**
 * A rate-limited log over `write` (a sink at the level the caller chose, e.g. a LogSink's warn).
 * `intervalMs` (default 10 000) bounds it to one line per interval; `now` is the clock in ms
 * (lib/core never reads the clock itself).
 */
export function rateLimitedLog(
  write: (message: string, attributes: Record<string, unknown>) => void,
  message: string,
  options: { intervalMs?: number; now: () => number },
): RateLimitedLog {
  const intervalMs = options.intervalMs ?? DEFAULT_RATE_LIMIT_INTERVAL_MS;
  const now = options.now;
  let lastAt: number | undefined;
  let suppressed = 0;
  const counts = { noted: 0, written: 0 };
  const emit = (attributes: Record<string, unknown>) => {
    write(message, { ...attributes, suppressed });
    counts.written += 1;
    suppressed = 0;
    lastAt = now();
  };
  return {
    counts,
    note(attributes = {}) {
      counts.noted += 1;
      if (lastAt === undefined || now() - lastAt >= intervalMs) emit(attributes);
      else suppressed += 1;
    },
    flush() {
      if (suppressed > 0) emit({});
    },
  };
}
