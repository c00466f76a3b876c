/**
 * Who is moving the run, in words a person reads without knowing leases: a server-driven run
 * (it has a reducer) is worked by the service's workers, so the header speaks of a worker; a
 * client-driven run (no reducer) is moved by the caller's own code, which holds a lease, so the
 * header names the client and says why an abandoned run still reads "running" and when the
 * sweeper acts. Pure: the lease view (lease.ts) and the timers are parameters.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases, recovery and
 * the sweeper".
 */
import type { PublicRunRecord } from '../../../lib/contracts/index.ts';
import { DEFAULT_TIMINGS } from '../../../lib/contracts/timings.ts';
import type { LeaseView } from './lease.ts';

export interface DriverWords {
  /** The fact's term: `Worker` (server-driven) or `Driven by` (client-driven). */
  term: string;
  /** One line. */
  text: string;
  /** The line reports trouble (a holder that stopped responding). */
  warn: boolean;
  /** A longer explanation shown under the header, when the status needs one. */
  note?: string;
}

const seconds = (s: number) => (s === 1 ? '1 second' : `${s} seconds`);

/** The words for `run`, given its lease view and the sweeper's period (ms). */
export function driverWords(
  run: Pick<PublicRunRecord, 'reducer' | 'status'>,
  lease: LeaseView,
  sweepIntervalMs: number = DEFAULT_TIMINGS.sweep_interval_ms,
): DriverWords {
  const ended = ['completed', 'failed', 'stopped'].includes(run.status);
  if (run.reducer !== null) return serverDriven(run.status, ended, lease);
  const sweep = seconds(Math.round(sweepIntervalMs / 1000));
  const why =
    `The run still reads "${run.status}" because a client-driven run ends only when its client ` +
    'ends it or someone stops it. ';
  if (lease.kind === 'held') {
    return {
      term: 'Driven by',
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
      term: 'Driven by',
      text: `the client ${lease.owner}, which ${what}`,
      warn: true,
      note:
        `${why}The sweeper, which passes every ${sweep}, lets the lost lease go (in about ` +
        `${seconds(lease.takeoverInS)}): the run then waits, queued, for a client to take it up again. ` +
        'The sweeper never ends the run.',
    };
  }
  return {
    term: 'Driven by',
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

function serverDriven(status: PublicRunRecord['status'], ended: boolean, lease: LeaseView): DriverWords {
  const term = 'Worker';
  if (lease.kind === 'held') return { term, text: 'a worker is on it now', warn: false };
  if (lease.kind === 'stale') {
    return {
      term,
      text: `the worker stopped responding; another takes over in about ${seconds(lease.takeoverInS)}`,
      warn: true,
    };
  }
  if (ended) return { term, text: 'none: the run has ended', warn: false };
  if (status === 'paused') return { term, text: 'none: the run is paused', warn: false };
  if (status === 'waiting') return { term, text: 'none: the run is waiting for an answer', warn: false };
  return { term, text: 'none right now: a worker picks the run up as soon as it has work', warn: false };
}
