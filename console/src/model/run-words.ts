/**
 * The run page's fourth round of words: durations in minutes past 90 seconds, what a live run
 * waits on a person for (beside its status), the current operation's state after a takeover,
 * what a checkpoint holds, what an open request's expiry does, what approving does while the run
 * is paused, and the usage line's hints. Pure. docs/guides/web-console.md.
 */
import { isTerminalStatus, type OpenRequest, type RunStatus } from '../../../lib/contracts/index.ts';

/**
 * A duration in seconds for people: `1 second`, `45 seconds`, and past 90 seconds in minutes
 * (`14 min`), past 90 minutes in hours (`2.5 h`). Negative values read as their size.
 */
export function duration(s: number): string {
  const abs = Math.abs(Math.round(s));
  if (abs <= 90) return abs === 1 ? '1 second' : `${abs} seconds`;
  if (abs <= 90 * 60) return `${Math.round(abs / 60)} min`;
  return `${(abs / 3600).toFixed(1)} h`;
}

/**
 * What a live run waits on a person for, shown beside its status whatever the status word
 * (a client-driven run reads "running" while its client waits too): `waits for your answer`
 * (a question), `waits for an approval`, or both joined by ` and `; null when the run has ended
 * or has no approval or question open (a parked result waits on something outside, not a person).
 */
export function personWaitText(run: {
  status: RunStatus;
  open_requests: readonly Pick<OpenRequest, 'kind'>[];
}): string | null {
  if (isTerminalStatus(run.status)) return null;
  const kinds = new Set(run.open_requests.map((r) => r.kind));
  const parts = [kinds.has('approval') ? 'an approval' : '', kinds.has('input') ? 'your answer' : ''];
  const what = parts.filter((p) => p !== '').join(' and ');
  return what === '' ? null : `waits for ${what}`;
}

/**
 * The current operation's state in the header: `in flight` (started), `pending: not started
 * yet`, or, for an operation begun again after its holder was lost (attempt above 1),
 * `to be run again: attempt 2; the first attempt was lost with its worker or client` (a model
 * turn kept after a provider outage says so instead, while the run is paused for it).
 */
export function operationStateText(
  op: { started_at: number | null; attempt: number },
  pauseReason?: string,
): string {
  if (op.started_at !== null) return op.attempt > 1 ? `in flight, attempt ${op.attempt}` : 'in flight';
  if (op.attempt <= 1) return 'pending: not started yet';
  const earlier = op.attempt === 2 ? 'the first attempt was' : 'the earlier attempts were';
  const why =
    pauseReason === 'provider_outage'
      ? `${earlier} cut short: the model provider was unavailable`
      : `${earlier} lost with its worker or client`;
  return `to be run again: attempt ${op.attempt}; ${why}`;
}

/** The current operation fact's hint. */
export const OPERATION_HINT =
  'The model turn or tool call the run is on now: pending (asked for, not started), in flight ' +
  '(started, not ended), or to be run again (an earlier attempt was lost).';

/**
 * What a checkpoint references, after `Checkpoint N, written …:`: `state revision 1, the log up
 * to event #5, with a tool call pending` (`the conversation` for a conversation-mode run; `under
 * way` only when the checkpoint's operation had started). `core` is the checkpoint's copy of
 * what core owns (its `operation`, with `kind` and `started_at`).
 */
export function checkpointParts(
  core: Record<string, unknown>,
  conversation: boolean,
): { log: string; operation: string } {
  const op = core.operation as { kind?: unknown; started_at?: unknown } | null | undefined;
  const kind = typeof op?.kind === 'string' ? op.kind.replaceAll('_', ' ') : null;
  const started = typeof op?.started_at === 'number';
  return {
    log: conversation ? 'the conversation' : 'the log',
    operation: kind === null ? '' : `, with a ${kind} ${started ? 'under way' : 'pending (not started)'}`,
  };
}

/** The checkpoints card when the list is empty: `None yet.` on a live run, `None.` on an ended one. */
export function noCheckpointsText(status: RunStatus): string {
  return isTerminalStatus(status) ? 'None.' : 'None yet.';
}

/**
 * What happens when an open request expires (lib/core/run-machine/requests.ts expireRequests):
 * the request closes as expired, the wait ends, and whoever moves the run (its reducer, or its
 * client) is told and decides what comes next; an approval's call is then not run.
 */
export function expiryWhat(kind: OpenRequest['kind'], hasReducer: boolean): string {
  const told = hasReducer ? "the run's reducer is told and decides what comes next" : 'its client is told';
  const what =
    kind === 'approval'
      ? 'the approval closes unanswered (the call it guards is not run)'
      : kind === 'input'
        ? 'the question closes unanswered'
        : 'the wait for the result closes';
  return `If it is still open then, ${what} and ${told}.`;
}

/**
 * What approving or rejecting does while the run is paused (lib/core/run-machine/controls.ts: an
 * approval is accepted on a paused run, and the run stays paused).
 */
export const APPROVAL_PAUSED =
  'The run is paused: your decision is recorded now and the run stays paused; it acts on the ' +
  'decision once it is resumed.';

/** The usage line's hints beside budgets.ts's: what a tool call counts, what the AWS cost is. */
export const USAGE_HINTS = {
  toolCalls:
    'A tool call counts once it was made, its result in or not: when its tool answered, failed or ' +
    'was lost. A tool that parks its work (hands it to something outside the run) answers at once, ' +
    'and its result arrives later; the plan counts a call finished only once its result is in.',
  aws: 'an estimate of what these requests would cost on AWS',
} as const;
