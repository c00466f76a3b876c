/**
 * Progress of long work (the replay, the bench, the local stack's start): a bar (cli-progress)
 * on a terminal, and plain lines elsewhere (CI logs, `| tee`), each with the count, the rate
 * and the time left (without them when `pace` is false), at most every 5 % of the work or every 15 s, and always at the end. The
 * clock is a parameter, so that what is printed follows from the work, not from wall time in
 * tests.
 */
import { type Options, SingleBar } from 'cli-progress';

export interface ProgressOptions {
  /** What is being done, e.g. `replay` (the lines start with it). */
  label: string;
  /** How many units in all. */
  total: number;
  /** The unit's plural, e.g. `conversations`. */
  unit: string;
  /** Where plain lines go (non-terminal). */
  out: (line: string) => void;
  /** The terminal to draw the bar on; undefined: plain lines. */
  tty?: NodeJS.WritableStream | undefined;
  /** Milliseconds now (default performance.now). */
  now?: () => number;
  /** A plain line at least this often while work is done (ms, default 15 000). */
  everyMs?: number;
  /** After this many units, one line with the expected total duration (default: no such line). */
  estimateAfter?: number;
  /**
   * Whether to show the rate and the time left (default true). False for a few steps of unlike
   * length (the local stack's start), where a rate says nothing: the count and percent only.
   */
  pace?: boolean;
}

export interface Progress {
  /** `n` more units done; `note` (e.g. `2 diverged`) is shown beside the count. */
  tick(n?: number, note?: string): void;
  /** Ends the bar (or prints the last line if the work stopped short of it). Idempotent. */
  stop(): void;
}

/** `1h 02m`, `2m 05s`, `9s`, from milliseconds. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

/** The plain progress line for `done` of `total` after `elapsedMs`. */
export function progressLine(
  label: string,
  unit: string,
  done: number,
  total: number,
  elapsedMs: number,
  note = '',
  pace = true,
): string {
  const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
  if (!pace) return `${label}: ${done}/${total} ${unit} (${percent}%)${note ? `, ${note}` : ''}`;
  const rate = elapsedMs > 0 ? done / (elapsedMs / 1000) : 0;
  const left =
    done >= total
      ? 'done'
      : rate > 0
        ? `about ${formatDuration(((total - done) / rate) * 1000)} left`
        : 'estimating';
  const rateText = rate >= 10 ? rate.toFixed(0) : rate.toFixed(2);
  return `${label}: ${done}/${total} ${unit} (${percent}%)${note ? `, ${note}` : ''}, ${rateText}/s, ${left}, ${formatDuration(elapsedMs)} elapsed`;
}

/** Starts reporting progress (a bar on `tty`, else lines on `out`). */
export function startProgress(options: ProgressOptions): Progress {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const { label, unit, total } = options;
  let done = 0;
  let note = '';
  let stopped = false;
  let estimated = false;
  const estimate = () => {
    if (estimated || options.estimateAfter === undefined || done < options.estimateAfter || done >= total)
      return;
    estimated = true;
    const elapsed = now() - started;
    const expected = (elapsed / done) * total;
    options.out(
      `${label}: expected about ${formatDuration(expected)} in all (from the first ${done} ${unit}, ${formatDuration(elapsed)})`,
    );
  };
  if (options.tty !== undefined) {
    const pace = options.pace ?? true;
    const barOptions: Options = {
      format: pace
        ? `${label} [{bar}] {value}/{total} ${unit} | {note}{rate}/s | {eta_formatted} left`
        : `${label} [{bar}] {value}/{total} ${unit}{note}`,
      hideCursor: true,
      stream: options.tty,
      etaBuffer: 20,
    };
    const bar = new SingleBar(barOptions);
    bar.start(total, 0, { note: '', rate: '0' });
    return {
      tick(n = 1, text = '') {
        done += n;
        const elapsed = now() - started;
        const rate = elapsed > 0 ? (done / (elapsed / 1000)).toFixed(2) : '0';
        bar.increment(n, { note: text ? (pace ? `${text} | ` : ` | ${text}`) : '', rate });
      },
      stop() {
        if (stopped) return;
        stopped = true;
        bar.stop();
      },
    };
  }
  const every = options.everyMs ?? 15_000;
  const step = Math.max(1, Math.ceil(total / 20));
  let lastAt = started;
  let lastDone = 0;
  const print = () => {
    lastAt = now();
    lastDone = done;
    options.out(progressLine(label, unit, done, total, lastAt - started, note, options.pace ?? true));
  };
  options.out(`${label}: 0/${total} ${unit}`);
  return {
    tick(n = 1, text = '') {
      done += n;
      note = text;
      estimate();
      if (done >= total || done - lastDone >= step || now() - lastAt >= every) print();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (lastDone !== done) print();
    },
  };
}
