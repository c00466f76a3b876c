/**
 * Why a run is not moving, in plain words, with the exact CLI command that moves it on: what
 * `agent-runs runs get` and `agent-runs watch` print under "waiting". A pure function of the run
 * record the API returns and the reader's clock; it decides nothing (core does), it explains.
 * Every command it returns is a complete line that works when pasted (quoted for a POSIX shell),
 * starting the way the user runs the CLI (`agent-runs`, `npx agent-runs`, `npm run agent-runs --`:
 * cliInvocation); a line that is only advice carries no command. docs/contracts/run-lifecycle.md
 * ("Controls", "Leases", "Budgets").
 */
import type { BudgetLimit, PublicRunRecord } from '../contracts/index.ts';
import { DEFAULT_TIMINGS, type Timings, takeoverEstimate } from '../contracts/timings.ts';
import { budgetUsed } from './budget-use.ts';
import { DEFAULT_CLI, shellQuote } from './cli-invocation.ts';
import type { AgentRunsClient } from './client.ts';
import { ApiError } from './errors.ts';
import { controlReasonText } from './reason-words.ts';

export { cliInvocation, DEFAULT_CLI, shellQuote } from './cli-invocation.ts';

/** One reason a run is not moving, and the commands that move it on (none when it moves by itself). */
export interface WaitingReason {
  /** One sentence: what the run waits for. */
  text: string;
  /** Complete command lines (`agent-runs ...`, or as cliInvocation says), each working when pasted. */
  commands: string[];
  /** The child run waited for, when the reason is a child (its own reasons explain the rest). */
  child_run_id?: string;
}

/**
 * The deployment's timings as the reader knows them (lib/contracts/timings.ts; `GET /config` answers a
 * deployment's own): the lease, its heartbeat, the skew allowance and the sweeper's period.
 */
export type LeaseTiming = Pick<
  Timings,
  'lease_ttl_ms' | 'heartbeat_ms' | 'clock_skew_ms' | 'sweep_interval_ms'
>;

/** The runtime's defaults (lib/contracts/timings.ts DEFAULT_TIMINGS), for a deployment that does not say. */
export const DEFAULT_LEASE_TIMING: LeaseTiming = DEFAULT_TIMINGS;

/**
 * The timings the hints about `run` need: the deployment's from `GET /config` when the run is
 * running (held by a lease: only those hints depend on them), else the defaults without a request.
 * An API that answers no timings (an older one: 404, or an answer of another shape) gives the
 * defaults too, the hints being advice; an API that cannot be reached throws (ApiError
 * `unreachable`), as the run's own read would.
 */
export async function timingFor(
  run: PublicRunRecord,
  client: Pick<AgentRunsClient, 'getConfig'>,
): Promise<LeaseTiming> {
  return run.status === 'running' ? deploymentTiming(client) : DEFAULT_LEASE_TIMING;
}

/** The deployment's timings from `GET /config`, or the defaults as {@link timingFor} says. */
export async function deploymentTiming(client: Pick<AgentRunsClient, 'getConfig'>): Promise<LeaseTiming> {
  try {
    return (await client.getConfig()).timings;
  } catch (err) {
    if (err instanceof ApiError && err.status !== 0) return DEFAULT_LEASE_TIMING;
    throw err;
  }
}

/** How long a queued run is left unexplained (ms): a step worker normally picks it up sooner. */
const QUEUED_QUIET_MS = 5_000;

/** Builds complete command lines that start with `cli` (each part quoted for a POSIX shell). */
type Cmd = (...parts: string[]) => string;
const commandsOf =
  (cli: string): Cmd =>
  (...parts) =>
    [cli, ...parts.map(shellQuote)].join(' ');
/**
 * A duration for people: seconds up to 90 s (`7 s`), minutes above, with the seconds left under
 * ten minutes (`2 min 10 s`, `3 min`) and whole minutes from there (`25 min`).
 */
export function durationWords(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s <= 90) return `${s} s`;
  if (s >= 600) return `${Math.round(s / 60)} min`;
  return s % 60 === 0 ? `${s / 60} min` : `${Math.floor(s / 60)} min ${s % 60} s`;
}
const seconds = durationWords;

/** What an answer hint pastes when the question offers no choices: the person puts theirs in its place. */
export const ANSWER_PLACEHOLDER = '<your answer>';

/**
 * The reasons `run` is not moving at `now` (ms epoch), most important first; empty when it is
 * moving by itself right now (a fresh lease, a step queued a moment ago) or has ended. Commands
 * start with `cli` (default {@link DEFAULT_CLI}; the CLI passes cliInvocation(env)).
 */
export function waitingReasons(
  run: PublicRunRecord,
  now: number,
  timing: LeaseTiming = DEFAULT_LEASE_TIMING,
  cli: string = DEFAULT_CLI,
): WaitingReason[] {
  const id = run.run_id;
  const cmd = commandsOf(cli);
  switch (run.status) {
    case 'completed':
    case 'failed':
    case 'stopped':
      return [];
    case 'paused':
      return [pausedReason(run, now, cmd)];
    case 'cancelling':
      return [
        {
          text: `stopping (${controlReasonText(run.stop_reason)}): the operation in flight ends first (an interruptible one is aborted within seconds)`,
          commands: [],
        },
      ];
    case 'waiting':
      return [...run.open_requests.map((r) => requestReason(id, r, cmd)), ...wakeReason(run, now)];
    case 'running':
      // A client-driven run's holder may wait on a request it opened (an approval of a tool call).
      return run.reducer === null
        ? [
            ...run.open_requests.map((r) => requestReason(id, r, cmd)),
            ...clientLeaseReason(run, now, timing, cmd),
          ]
        : leaseReason(run, now, timing);
    case 'queued':
      if (run.reducer === null) return [clientDrivenReason()];
      // A step message is on its way; only a run queued for a while is worth explaining.
      return now - run.updated_at < QUEUED_QUIET_MS ? [] : [queuedReason(run, now)];
  }
}

function requestReason(runId: string, r: PublicRunRecord['open_requests'][number], cmd: Cmd): WaitingReason {
  const expires = r.expires_at === null ? '' : ` (closes ${new Date(r.expires_at).toISOString()})`;
  switch (r.kind) {
    case 'approval':
      return {
        text: `waiting for approval ${r.request_id}: ${r.subject.summary} (digest ${r.subject.digest})${expires}`,
        commands: [
          cmd('approve', runId, r.request_id, '--digest', r.subject.digest),
          cmd(
            'approve',
            runId,
            r.request_id,
            '--digest',
            r.subject.digest,
            '--reject',
            '--reason',
            'not now',
          ),
        ],
      };
    case 'input':
      return {
        text: `waiting for an answer to ${r.request_id}: ${r.question}${r.choices ? ` [${r.choices.join(' | ')}]` : ''}${expires}${
          r.choices?.[0] === undefined
            ? ` (put your answer in place of '${ANSWER_PLACEHOLDER}')`
            : ' (the line answers the first choice: put another in its place)'
        }`,
        commands: [cmd('answer', runId, r.request_id, r.choices?.[0] ?? ANSWER_PLACEHOLDER)],
      };
    case 'result': {
      const child = r.resume_key.startsWith('child:') ? r.resume_key.slice('child:'.length) : null;
      if (child !== null) {
        return {
          text: `waiting for child run ${child} to end (its outcome comes back as the result of ${r.tool})`,
          commands: [cmd('runs', 'get', child), cmd('stop', child, '--reason', 'the parent stops waiting')],
          child_run_id: child,
        };
      }
      return {
        text: `waiting for a result of ${r.tool} under key ${r.resume_key}${expires} (put your result in place of {"ok":true})`,
        commands: [cmd('deliver', r.resume_key, '{"ok":true}')],
      };
    }
  }
}

function wakeReason(run: PublicRunRecord, now: number): WaitingReason[] {
  if (run.open_requests.length > 0 || run.wake_at === null) return [];
  return [
    {
      text: `waiting until ${new Date(run.wake_at).toISOString()} (in ${seconds(run.wake_at - now)}), then the runtime wakes it`,
      commands: [],
    },
  ];
}

function pausedReason(
  run: Extract<PublicRunRecord, { status: 'paused' }>,
  now: number,
  cmd: Cmd,
): WaitingReason {
  const id = run.run_id;
  const reason = run.pause_reason;
  if (reason.startsWith('budget_exceeded:')) {
    const which = reason.slice('budget_exceeded:'.length) as BudgetLimit;
    const limit = run.budgets[which];
    const used = budgetUsed(run, which, now);
    if (which === 'max_depth' && run.parent_run_id !== undefined) {
      return {
        text: 'paused by budget max_depth, which a child run cannot raise: stop it (the parent gets it back as failed)',
        commands: [cmd('stop', id, '--reason', 'max_depth')],
      };
    }
    const increase = budgetIncrease(which, limit, used);
    return {
      text: `paused by budget ${which} (used ${used} of ${limit ?? '?'}): resume it with more`,
      commands: [cmd('resume', id, '--budget-increase', JSON.stringify({ [which]: increase }))],
    };
  }
  if (reason === 'reducer_changed') {
    // The check first: would the artifact published now have decided what the old one did?
    const path = run.reducer?.function_path;
    return {
      text: "paused because the reducer's artifact changed since the run started: check the new one against this run, then resume to accept it",
      commands: [
        ...(path !== undefined ? [cmd('reducers', 'check', '--path', path, '--run', id)] : []),
        cmd('resume', id, '--accept-reducer-change'),
      ],
    };
  }
  if (reason.startsWith('provider_outage:')) {
    return {
      text: `paused by a model provider outage (${reason.slice('provider_outage:'.length)}): resume to try the turn again`,
      commands: [cmd('resume', id)],
    };
  }
  return {
    text: `paused (${controlReasonText(reason)}): resume it when ready`,
    commands: [cmd('resume', id)],
  };
}

/** An increase that lets the pending operation through: at least past what is used, else the limit again. */
function budgetIncrease(which: BudgetLimit, limit: number | undefined, used: number): number {
  const past = used - (limit ?? 0) + 1;
  if (which === 'max_wall_ms') return Math.max(past, 0) + 600_000;
  return Math.max(past, limit ?? 1, 1);
}

function leaseReason(
  run: Extract<PublicRunRecord, { status: 'running' }>,
  now: number,
  timing: LeaseTiming,
): WaitingReason[] {
  const { owner, expires_at } = run.lease;
  const renewedAt = expires_at - timing.lease_ttl_ms;
  const takeover = takeoverEstimate(expires_at, now, timing);
  // A live worker renews every heartbeat; one renewal late (plus a second of slack) means it stopped.
  if (now - renewedAt <= timing.heartbeat_ms + 1_000) return [];
  const op = run.operation;
  const during = op === null ? '' : ` (during ${op.kind} ${op.op_id})`;
  return [
    {
      text: `lease held by worker ${owner}, which stopped renewing it ${seconds(now - renewedAt)} ago${during}: ${
        takeover.fromMs > 0
          ? `the runtime takes the run over in ${seconds(takeover.fromMs)} to ${seconds(takeover.byMs)}`
          : `the runtime takes the run over at its next check for stalled runs, within ${seconds(takeover.byMs)}`
      }${op === null ? '' : `, and the operation runs again${op.replay_safe ? '' : ' (it is not replay-safe: its effect may be checked first)'}`}`,
      commands: [],
    },
  ];
}

/** A client-driven run (no reducer) moves only when its own client leases it and writes. */
function clientDrivenReason(): WaitingReason {
  return {
    text: "client-driven (no reducer): the server never steps it. It moves when its client takes the lease (POST /runs/{id}/lease; the client library's takeLease, no CLI command) and writes its steps",
    commands: [],
  };
}

/**
 * A running client-driven run: when the service last heard from its client (`updated_at`: its
 * last write, a step or a lease renewal) and what happens if it does not come back: its lease
 * ends at `expires_at`, the sweeper lets the run go (the skew allowance past its end, then its
 * next pass), and the run waits, queued, for a client to take it again. The service never ends
 * it. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
function clientLeaseReason(
  run: Extract<PublicRunRecord, { status: 'running' }>,
  now: number,
  timing: LeaseTiming,
  cmd: Cmd,
): WaitingReason[] {
  const { owner, expires_at } = run.lease;
  const commands = [cmd('lease', run.run_id)];
  // No CLI command moves a client-driven run; the one offered shows its lease, and a stop ends it.
  const only = ' (the command below only shows who holds the lease; to end the run instead, stop it)';
  const heard = `client-driven: last heard from client ${owner} ${heardAgo(run.updated_at, now)} (its last write to the run)`;
  if (now < expires_at) {
    return [
      {
        text: `${heard}; if it does not come back by ${new Date(expires_at).toISOString()} (in ${seconds(expires_at - now)}, when its lease ends unless it renews it), the runtime lets go of the run and the run waits, queued, for a client to take it again; until then the run moves only when that client writes its next step${only}`,
        commands,
      },
    ];
  }
  const takeover = takeoverEstimate(expires_at, now, timing);
  const when =
    takeover.fromMs > 0
      ? `in ${seconds(takeover.fromMs)} to ${seconds(takeover.byMs)}`
      : `at its next check for stalled runs, within ${seconds(takeover.byMs)}`;
  return [
    {
      text: `${heard}; its lease ran out ${seconds(now - expires_at)} ago, the runtime lets go of the run ${when}, and the run then waits, queued, for a client to take it again${only}`,
      commands,
    },
  ];
}

/** `12 s ago`, `just now` under a second (a clock a little ahead reads as just now too). */
function heardAgo(at: number, now: number): string {
  return now - at < 1_000 ? 'just now' : `${seconds(now - at)} ago`;
}

function queuedReason(run: PublicRunRecord, now: number): WaitingReason {
  const since = seconds(now - run.updated_at);
  const wake =
    run.wake_at === null
      ? ''
      : `; the runtime wakes it at ${new Date(run.wake_at).toISOString()} if no worker does`;
  return {
    text: `queued for ${since}: waiting for a step worker to pick it up (is the stack's poller running?)${wake}`,
    commands: [],
  };
}
