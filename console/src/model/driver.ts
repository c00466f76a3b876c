/**
 * Who is moving the run ("Driven by", on both kinds), in words a person reads without knowing
 * leases: a server-driven run (it has a reducer) is worked by the service's workers, so the
 * header speaks of the service and a worker; a client-driven run (no reducer) is moved by the
 * caller's own code, which holds a lease, so the header names the client and says why an
 * abandoned run still reads "running". When a holder stopped renewing, the note says when the
 * sweeper acts in the deployment's numbers (skew allowance, then its next pass), so its period
 * and the estimate agree. Pure: the lease view (lease.ts) and the timings are parameters.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases, recovery and
 * the sweeper".
 */
import type { PublicRunRecord } from '../../../lib/contracts/index.ts';
import { DEFAULT_TIMINGS, type Timings } from '../../../lib/contracts/timings.ts';
import type { LeaseView } from './lease.ts';
import { duration } from './run-words.ts';
import { stamp } from './words.ts';

export interface DriverWords {
  /** The fact's term: `Driven by`, on both kinds of run. */
  term: string;
  /** The term's hint: what "driven by" means. */
  hint: string;
  /** One line. */
  text: string;
  /** The line reports trouble (a holder that stopped responding). */
  warn: boolean;
  /** A longer explanation shown under the header, when the status needs one. */
  note?: string;
}

/** The sweeper timings the words quote (ms each): its period and its skew allowance. */
export type SweepTimings = Pick<Timings, 'sweep_interval_ms' | 'clock_skew_ms'>;

const TERM = 'Driven by';
const HINT =
  "Who moves the run forward: the service's own workers when the run has a reducer " +
  "(server-driven), else the caller's own code (client-driven).";

/** `45 seconds`, and past 90 seconds in minutes (`14 min`): run-words.ts's duration. */
const seconds = duration;

/**
 * Why "in about N seconds": where the hold on the run stands, then the service's regular check
 * (the sweeper) in the deployment's numbers (the skew allowance past the expiry, then its next
 * pass), so the period and the estimate never seem to disagree. "lease" and "sweeper" appear
 * once each, in parentheses. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
function takeoverWhy(
  lease: Extract<LeaseView, { kind: 'stale' }>,
  timings: SweepTimings,
  holder: 'client' | 'worker',
): string {
  const hold = holder === 'client' ? 'Its hold on the run (its lease)' : "The worker's hold on the run";
  const where =
    lease.expiresInS <= 0
      ? `${hold} ran out ${seconds(Math.abs(lease.expiresInS))} ago.`
      : `${hold} runs out in ${seconds(lease.expiresInS)}.`;
  const skew = seconds(Math.round(timings.clock_skew_ms / 1000));
  const sweep = seconds(Math.round(timings.sweep_interval_ms / 1000));
  return (
    `${where} The service checks for stalled runs every ${sweep} (the sweeper). It frees a hold ` +
    `once the hold is ${skew} past its end, to allow for clocks that differ between machines: ` +
    `within about ${seconds(lease.takeoverInS)}.`
  );
}

/** The words for `run`, given its lease view and the deployment's sweeper timings. */
export function driverWords(
  run: Pick<PublicRunRecord, 'reducer' | 'status'> & { open_requests?: PublicRunRecord['open_requests'] },
  lease: LeaseView,
  timings: SweepTimings = DEFAULT_TIMINGS,
): DriverWords {
  const ended = ['completed', 'failed', 'stopped'].includes(run.status);
  if (run.reducer !== null) {
    return serverDriven(run.status, ended, lease, timings, waitsFor(run.open_requests ?? []));
  }
  const why =
    `The run still reads "${run.status}" because a client-driven run ends only when its client ` +
    'ends it or someone stops it. ';
  if (lease.kind === 'held') {
    return {
      term: TERM,
      hint: HINT,
      text:
        `the client ${lease.owner}. It must renew its hold on the run (its lease) while it works; ` +
        `unless renewed, the hold runs out in ${seconds(Math.max(0, lease.expiresInS))}.`,
      warn: false,
    };
  }
  if (lease.kind === 'stale') {
    const what =
      lease.why === 'expired'
        ? `Its hold on the run ran out ${seconds(Math.abs(lease.expiresInS))} ago: it stopped renewing it.`
        : 'It has not renewed its hold on the run for a while.';
    return {
      term: TERM,
      hint: HINT,
      text: `the client ${lease.owner}. ${what}`,
      warn: true,
      note:
        `${why}${takeoverWhy(lease, timings, 'client')} The run then waits (status queued) for a client to ` +
        'take it again. The service never ends the run itself.',
    };
  }
  return {
    term: TERM,
    hint: HINT,
    text: ended ? 'nobody: the run has ended' : 'a client; none holds the run right now',
    warn: false,
    ...(ended
      ? {}
      : {
          note:
            `${run.status === 'queued' ? '' : why}The run waits for a client to take it again: nothing else ` +
            `moves a client-driven run${
              (run.open_requests ?? []).length > 0
                ? ", and the service's regular check only expires its open requests"
                : ''
            }.`,
        }),
  };
}

/**
 * When a client-driven run last heard from its client and what happens if the client does not
 * come back, for a run a client holds right now; null for a server-driven run (no lease words
 * there) or one no client holds. `updated_at` is the client's last write (a step or a renewal of
 * its hold); the hold ends at the lease's `expires_at`, after which the sweeper lets go of the run
 * (lib/core/run-machine/client-driven.ts expireClientLease) and the run waits, queued, for a
 * client to take it again; the service never ends it. Times in the console's one style (`stamp`).
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
export function clientHeardText(
  run: Pick<PublicRunRecord, 'reducer' | 'updated_at'> & {
    lease: { expires_at: number } | null;
  },
  now: number,
): string | null {
  if (run.reducer !== null || run.lease === null) return null;
  const ago =
    now - run.updated_at < 1_000 ? 'just now' : `${seconds(Math.round((now - run.updated_at) / 1000))} ago`;
  const heard = `Last heard from its client ${ago} (its last write to the run).`;
  const end = stamp(run.lease.expires_at);
  if (run.lease.expires_at > now) {
    return (
      `${heard} If the client does not come back by ${end}, its hold on the run ends: the runtime then ` +
      'lets go of the run and the run waits for a client to take it again.'
    );
  }
  return (
    `${heard} Its hold on the run ended at ${end}: the runtime lets go of the run and the run ` +
    'waits for a client to take it again.'
  );
}

/**
 * What a waiting run waits for, in words: `an approval`, `an answer to its question`, `an
 * external result`, joined by ` and ` when it waits on several kinds; `an answer` when unknown.
 */
export function waitsFor(requests: readonly { kind: string }[]): string {
  const kinds = new Set(requests.map((r) => r.kind));
  const parts = [
    kinds.has('approval') ? 'an approval' : '',
    kinds.has('input') ? 'an answer to its question' : '',
    kinds.has('result') ? 'an external result' : '',
  ].filter((s) => s !== '');
  return parts.length === 0 ? 'an answer' : parts.join(' and ');
}

function serverDriven(
  status: PublicRunRecord['status'],
  ended: boolean,
  lease: LeaseView,
  timings: SweepTimings,
  waiting: string,
): DriverWords {
  const words = (text: string, warn = false, note?: string, who = 'the service'): DriverWords => ({
    term: TERM,
    hint: HINT,
    text: `${who}: ${text}`,
    warn,
    ...(note !== undefined ? { note } : {}),
  });
  if (lease.kind === 'held') return words('a worker is on it now');
  if (lease.kind === 'stale') {
    return words(
      `its worker stopped responding; another takes over in about ${seconds(lease.takeoverInS)}`,
      true,
      takeoverWhy(lease, timings, 'worker'),
    );
  }
  if (ended) return words('the run has ended', false, undefined, 'nobody');
  if (status === 'paused') return words('idle while the run is paused');
  if (status === 'waiting') return words(`idle while the run waits for ${waiting}`);
  return words('a worker picks the run up as soon as it has work');
}
