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

const seconds = (s: number) => (s === 1 ? '1 second' : `${s} seconds`);

/**
 * Why "in about N seconds": where the lease stands, then the sweeper's rule in the deployment's
 * numbers (the skew allowance past the expiry, then its next pass), so the period and the
 * estimate never seem to disagree. docs/contracts/run-lifecycle.md, "Leases, recovery and the
 * sweeper".
 */
function takeoverWhy(lease: Extract<LeaseView, { kind: 'stale' }>, timings: SweepTimings): string {
  const where =
    lease.expiresInS <= 0
      ? `The lease ran out ${seconds(Math.abs(lease.expiresInS))} ago.`
      : `The lease runs out in ${seconds(lease.expiresInS)}.`;
  const skew = seconds(Math.round(timings.clock_skew_ms / 1000));
  const sweep = seconds(Math.round(timings.sweep_interval_ms / 1000));
  return (
    `${where} The sweeper (the service's regular check for stalled runs) lets a lost lease go once it is ${skew} past its end (room for clocks ` +
    `that differ between machines), at its next pass (it passes every ${sweep}): in about ` +
    `${seconds(lease.takeoverInS)} at the latest.`
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
      text: `the client ${lease.owner} (its lease is renewed while it works)`,
      warn: false,
    };
  }
  if (lease.kind === 'stale') {
    const what =
      lease.why === 'expired'
        ? `stopped renewing its lease, which ran out ${seconds(Math.abs(lease.expiresInS))} ago`
        : 'has not renewed its lease for a while';
    return {
      term: TERM,
      hint: HINT,
      text: `the client ${lease.owner}, which ${what}`,
      warn: true,
      note:
        `${why}${takeoverWhy(lease, timings)} The run then waits, queued, for a client to take it ` +
        'up again. The sweeper never ends the run.',
    };
  }
  return {
    term: TERM,
    hint: HINT,
    text: ended ? 'a client (the run has ended)' : 'a client; none holds the run right now',
    warn: false,
    ...(ended
      ? {}
      : {
          note:
            `${run.status === 'queued' ? '' : why}The run waits for a client to take it up again: nothing else ` +
            'moves a client-driven run, and the sweeper only expires its open requests.',
        }),
  };
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
  const words = (text: string, warn = false, note?: string): DriverWords => ({
    term: TERM,
    hint: HINT,
    text: `the service: ${text}`,
    warn,
    ...(note !== undefined ? { note } : {}),
  });
  if (lease.kind === 'held') return words('a worker is on it now');
  if (lease.kind === 'stale') {
    return words(
      `its worker stopped responding; another takes over in about ${seconds(lease.takeoverInS)}`,
      true,
      takeoverWhy(lease, timings),
    );
  }
  if (ended) return words('no worker, the run has ended');
  if (status === 'paused') return words('no worker while the run is paused');
  if (status === 'waiting') return words(`no worker while the run waits for ${waiting}`);
  return words('no worker right now; one picks the run up as soon as it has work');
}
