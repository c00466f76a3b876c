/**
 * The runs list's words for people: what each filter and column means (the hints under the
 * filters and the column titles), what a run waits on a person for, and the count line. Pure.
 * docs/contracts/run-lifecycle.md, "Subject, principal and admission" and "Requests".
 */
import { isTerminalStatus, type OpenRequest, type PublicRunRecord } from '../../../lib/contracts/index.ts';
import { plural, reasonText } from './words.ts';

/** What "principal" means, on the list's filter and the run page's header alike. */
export const PRINCIPAL_HINT = 'Who the run acts for, as kind:id (user:alice, agent:billing)';

/** One line per filter or column a newcomer asked about. */
export const LIST_HINTS = {
  principal: `${PRINCIPAL_HINT}; any part of it matches.`,
  subject: 'What the run is about, as workspace:/path; matches that path and everything under it.',
  turn:
    'How many times the model has answered in the run; empty while it has not answered (a reducer ' +
    'that calls no model, such as a plain Starlark one, never asks it).',
  run: "The run's id; open it to see the run.",
  status:
    'queued: ready for its next step; running: a worker or client is on it; waiting: it waits for ' +
    'a person or an outside result; paused: held until someone resumes it; cancelling: stopping ' +
    'after its current step; completed: ended with an outcome (succeeded, partial or blocked, shown ' +
    'beside it); failed: ended in failure (why, beside it); stopped: ended early by a stop. A client-driven run nobody holds says "waits for its client" beside ' +
    'its status: its own client moves it, not you.',
  created: 'When the run was created (its full time on hover).',
  updated:
    'When the run last changed: an event, a control, or a renewal of its hold (its full time on hover).',
  needsYou:
    'Approvals to decide, questions to answer and results to deliver from outside; empty when the ' +
    'run needs nothing from you (a client-driven run waiting for its client says so under its status).',
} as const;

/**
 * What the run waits on you for: `1 approval to decide`, `2 questions to answer`, `1 result
 * to deliver` (a parked tool call's external result), joined by `, `; '' when nothing.
 */
export function needsYouText(requests: readonly Pick<OpenRequest, 'kind'>[]): string {
  const count = (kind: OpenRequest['kind']) => requests.filter((r) => r.kind === kind).length;
  const [approvals, questions, results] = [count('approval'), count('input'), count('result')];
  return [
    approvals > 0 ? `${plural(approvals, 'approval')} to decide` : '',
    questions > 0 ? `${plural(questions, 'question')} to answer` : '',
    results > 0 ? `${plural(results, 'result')} to deliver` : '',
  ]
    .filter((s) => s !== '')
    .join(', ');
}

/**
 * The note under a run's status in the list: `waits for its client` for a client-driven run (no
 * reducer) that nobody holds and that has not ended (nothing for you to do: its client moves
 * it); '' otherwise.
 */
export function statusNoteText(run: Pick<PublicRunRecord, 'reducer' | 'status' | 'lease'>): string {
  return run.reducer === null && run.lease === null && !isTerminalStatus(run.status)
    ? 'waits for its client'
    : '';
}

/**
 * How an ended run ended, beside its status in the list: a completed run's outcome (`succeeded`,
 * `partial`, `blocked`), a failed or stopped run's terminal reason when it says more than the
 * status (`budget exceeded`); '' for a live run. The run page says the same in its status line.
 */
export function outcomeText(run: PublicRunRecord): string {
  if (run.status === 'completed') return run.outcome;
  if (run.status === 'failed' || run.status === 'stopped')
    return run.terminal_reason !== run.status ? reasonText(run.terminal_reason) : '';
  return '';
}

/** The Model turns cell: the count, or '' while the model has not answered (LIST_HINTS.turn says why). */
export function turnText(turn: number): string {
  return turn === 0 ? '' : turn.toLocaleString('en-US');
}

/**
 * The count line: the filters apply to the pages loaded so far, so it says how many of those
 * match and whether older pages remain (`Load more`).
 */
export function shownText(shown: number, loaded: number, more: boolean): string {
  const of =
    shown === loaded
      ? plural(shown, 'run')
      : `${plural(shown, 'run')} ${shown === 1 ? 'matches' : 'match'} the filters, of ${loaded} loaded`;
  return more ? `${of}; older runs not loaded yet (Load more)` : of;
}
