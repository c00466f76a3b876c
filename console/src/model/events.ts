/**
 * One line of text per persisted event for the timeline, read from the event's data by kind.
 * The data is parsed with the reducer contract's schemas where one exists (lib/contracts), and
 * read defensively otherwise: a reader ignores what it does not know (growth rule), so an event
 * whose data has another shape still gets a line (its kind). docs/reference/storage.md.
 */
import {
  BudgetExceededData,
  ModelTurnCompletedData,
  OperationFailedData,
  RequestResolvedData,
  type RunEvent,
  RunEventKind,
  ToolResultData,
} from '../../../lib/contracts/index.ts';
import { refusalWords } from './controls.ts';
import { REDUCER_HINT, reasonText, shortId, tokensText } from './words.ts';

/** How a kind is shown: a tone for its marker. */
export type EventTone = 'neutral' | 'good' | 'bad' | 'attention' | 'model' | 'tool' | 'control';

const TONES: Partial<Record<RunEventKind, EventTone>> = {
  run_started: 'good',
  run_completed: 'good',
  run_failed: 'bad',
  stopped: 'bad',
  operation_failed: 'bad',
  control_rejected: 'bad',
  request_opened: 'attention',
  budget_exceeded: 'attention',
  paused: 'attention',
  lease_taken_over: 'attention',
  capability_gap: 'attention',
  model_turn_completed: 'model',
  tool_result: 'tool',
  operation_started: 'tool',
  steer_queued: 'control',
  steer_consumed: 'control',
  stop_requested: 'control',
  pause_requested: 'control',
  resumed: 'control',
  request_resolved: 'control',
};

export function eventTone(kind: RunEventKind): EventTone {
  return TONES[kind] ?? 'neutral';
}

/**
 * What each tone's bar (a timeline row's coloured left edge) means: the timeline's legend, in
 * the order it lists them, and each row's bar title.
 */
export const TONE_WORDS: Record<EventTone, string> = {
  good: 'the run started or finished',
  bad: 'a failure, a refused control or a stop',
  attention: 'needs a look: a request, a budget used up, a pause, a takeover',
  model: 'the model answered',
  tool: 'a tool call started or answered',
  control: "a person's control, answer or message",
  neutral: "other: the reducer's answers, checkpoints, deliveries",
};

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/** A short text of any JSON value (strings as they are), cut to `max` characters. */
export function brief(value: unknown, max = 80): string {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * The timeline's one-line description of `event` (without its seq, kind or time), read after
 * its headline (eventHeadline). `freeNow`: the run holds no lease now and this is its latest
 * takeover (the takeover's line then says so). `afterEnd`: the run had ended before this event
 * (a reducer's answer then says so). `answered`: for a reducer's answer, the event it answered,
 * when loaded (an answer with no new steps to an approval then says the call goes on).
 */
export function describeEvent(
  event: RunEvent,
  freeNow = false,
  afterEnd = false,
  answered?: Pick<RunEvent, 'kind' | 'data'>,
): string {
  const d = event.data;
  switch (event.kind) {
    case 'run_started':
      return brief(d.objective ?? d.input);
    case 'model_turn_completed': {
      const turn = ModelTurnCompletedData.safeParse(d);
      if (!turn.success) return '';
      const calls = turn.data.tool_calls.map((c) => c.name);
      const text = turn.data.message.text ?? '';
      const tokens = tokensText(turn.data.usage.input_tokens, turn.data.usage.output_tokens);
      return [calls.length > 0 ? `calls ${calls.join(', ')}` : brief(text), tokens]
        .filter((s) => s !== '')
        .join(' · ');
    }
    case 'tool_result': {
      const result = ToolResultData.safeParse(d);
      if (!result.success) return str(d.tool) ?? '';
      const env = result.data.envelope;
      // A bare answer (not an envelope) is wrapped as succeeded: the status is the runtime's, not the tool's.
      const status =
        env.legacy === true && env.status === 'succeeded' ? `succeeded ${DEFAULT_STATUS_NOTE}` : env.status;
      return `${result.data.tool}: ${status}${env.error_class !== undefined ? ` (${env.error_class})` : ''}`;
    }
    case 'operation_started':
      return [
        str(d.kind)?.replaceAll('_', ' '),
        str(d.tool),
        num(d.attempt) !== undefined ? `attempt ${d.attempt}` : undefined,
      ]
        .filter((s) => s !== undefined)
        .join(' · ');
    case 'operation_failed': {
      const failed = OperationFailedData.safeParse(d);
      if (!failed.success) return '';
      // The engine's message names a worker; a client-driven run's holder is a client.
      if (failed.data.error_class === 'lease_expired') return `${LOST_TEXT} (lease_expired)`;
      const unknown = failed.data.outcome_unknown ? ` ${UNKNOWN_OUTCOME_TEXT}` : '';
      return `${brief(failed.data.message)} (${failed.data.error_class})${unknown}`;
    }
    case 'request_opened': {
      const kind = str(d.kind);
      if (kind === 'approval') {
        const subject = d.subject as { summary?: unknown } | undefined;
        return brief(subject?.summary);
      }
      if (kind === 'input') return brief(d.question);
      if (kind === 'result')
        return `for the tool ${str(d.tool) ?? '?'} (delivery key ${shortId(str(d.resume_key) ?? '')})`;
      return kind ?? '';
    }
    case 'request_resolved': {
      const resolved = RequestResolvedData.safeParse(d);
      if (!resolved.success) return '';
      return resolved.data.kind === 'approval'
        ? `approval ${resolved.data.decision ?? 'approved'}`
        : `answered: ${brief(resolved.data.value)}`;
    }
    case 'request_closed': {
      const reason = str(d.reason) ?? '';
      const why = reason === 'stopped' ? 'the run was stopped' : reason.replaceAll('_', ' ');
      return `${shortId(str(d.request_id) ?? '')} closed: ${why}`;
    }
    case 'steer_queued':
    case 'steer_consumed':
      return brief(d.input);
    case 'control_rejected':
      return `${str(d.command) ?? ''} refused: ${refusalWords(str(d.reason) ?? '')}`;
    case 'stop_requested':
    case 'stopped':
    case 'pause_requested':
    case 'paused':
      return reasonText(str(d.reason) ?? '');
    case 'budget_exceeded': {
      const b = BudgetExceededData.safeParse(d);
      return b.success ? `${b.data.which}: ${b.data.used} of ${b.data.limit}` : '';
    }
    case 'checkpoint_written':
      return `checkpoint ${num(d.checkpoint_no) ?? '?'} (${str(d.reason) ?? ''})`;
    case 'lease_taken_over':
      return takeoverText(str(d.previous_owner) ?? '?', num(d.previous_epoch), freeNow);
    case 'run_completed':
      return [str(d.outcome), brief(d.summary ?? '')].filter((s) => s !== undefined && s !== '').join(': ');
    case 'run_failed':
      return [str(d.code), str(d.message)].filter((s) => s !== undefined).join(': ');
    case 'reducer_answered':
      return reducerAnswerText(d, afterEnd, answered);
    case 'result_delivered':
      return `delivery key ${shortId(str(d.resume_key) ?? '')}`;
    case 'steers_discarded':
      return `${num(d.count) ?? '?'} discarded`;
    case 'resumed':
      return num(d.from_checkpoint_no) !== undefined ? `from checkpoint ${d.from_checkpoint_no}` : '';
    case 'capability_gap': {
      const gap = d.gap as { requested_outcome?: unknown } | undefined;
      return brief(gap?.requested_outcome);
    }
    default:
      return '';
  }
}

/** What a reducer's answer asks for, by effect kind (lib/contracts/reducer.ts EFFECT_KINDS); the CLI's words too. */
export const EFFECT_WORDS: Record<string, string> = {
  call_tool: 'calls a tool',
  request_model_turn: 'asks for a model turn',
  request_approval: 'asks for an approval',
  ask_user: 'asks a question',
  withdraw_request: 'withdraws a request',
  checkpoint: 'writes a checkpoint',
  complete: 'completes the run',
  fail: 'fails the run',
  capability_gap: 'reports a capability gap',
};

/** An effect kind in words (EFFECT_WORDS; a kind it does not know, `_` read as spaces). */
export function effectWords(kind: string): string {
  return EFFECT_WORDS[kind] ?? kind.replaceAll('_', ' ');
}

/**
 * A reducer's answer as a sentence after its headline ("The reducer answered"): `it read event
 * #10 and calls a tool, then completes the run`. With no new steps it says why that is no stall:
 * after the run's end, that the run had ended; after an approval, that the call it held back
 * goes on (the reducer asked for it before); otherwise that what it asked for earlier stands.
 */
function reducerAnswerText(
  d: Record<string, unknown>,
  afterEnd: boolean,
  answered?: Pick<RunEvent, 'kind' | 'data'>,
): string {
  const kinds = Array.isArray(d.effects)
    ? (d.effects as { kind?: unknown }[]).map((e) => effectWords(str(e?.kind) ?? '?'))
    : [];
  const read = `it read event #${num(d.event_seq) ?? '?'}`;
  if (kinds.length > 0) return `${read} and ${kinds.join(', then ')}`;
  if (afterEnd) return `${read} and asks for nothing: the run had ended`;
  const approved =
    answered?.kind === 'request_resolved' &&
    answered.data.kind === 'approval' &&
    answered.data.decision === 'approved';
  return approved
    ? `${read} and asks for nothing new: the call the approval held back, asked for earlier, now goes on`
    : `${read} and asks for nothing new: what it asked for earlier still stands`;
}

/**
 * Beside a wrapped result's `succeeded` (lib/core/tool-result-validation.ts: a bare answer, not a
 * raisin.tool-result/1 envelope, is wrapped with status succeeded and legacy: true).
 */
export const DEFAULT_STATUS_NOTE =
  "(the runtime's default: the answer was not a result envelope, so it carried no status)";

/** The line for an operation lost with its holder (the engine's `lease_expired` failure). */
export const LOST_TEXT =
  'the worker or client running this operation was lost; its outcome is unknown. ' +
  'If it may have written something, check whether the write applied before you retry.';

/** What to do about an operation whose outcome is unknown. */
export const UNKNOWN_OUTCOME_TEXT =
  'Its outcome is unknown: check whether its write applied before you retry.';

/** Whether a lease owner is a worker of the service (`slot@start/…`), not a client. */
const isWorkerOwner = (owner: string): boolean => /@\d+\//.test(owner);

/**
 * `lease_taken_over` read out, after its headline (eventHeadline): for a worker's owner
 * `slot@start/…`, that the runtime (or a restarted worker of its slot) took the run over from
 * it; for a client's, that the runtime let go of the run (it never held it); what the hold's
 * epoch number was, and, when `freeNow`, that nobody holds the run now (lib/core/run-machine/lease.ts).
 */
export function takeoverText(owner: string, epoch: number | undefined, freeNow = false): string {
  const number =
    epoch === undefined ? '' : `, hold number ${epoch}: the epoch, each new holder gets the next number`;
  const held = `(held by ${owner}${number})${freeNow ? '; nobody holds it now' : ''}`;
  return isWorkerOwner(owner)
    ? `the runtime (or a restarted worker of the same slot) took the run over ${held}`
    : `the runtime let go of the run ${held}`;
}

/**
 * The bold headline of a timeline row, by what the event is: its kind's words
 * (EVENT_KIND_WORDS), except where those depend on the data: a request asks a person only for an
 * approval or an answer (a tool's result request waits for an outside system), and a takeover
 * from a client is its hold running out.
 */
export function eventHeadline(event: Pick<RunEvent, 'kind' | 'data'>): string {
  const d = event.data;
  if (event.kind === 'request_opened') {
    if (d.kind === 'approval') return 'Asked a person to approve';
    if (d.kind === 'input') return 'Asked a person a question';
    if (d.kind === 'result') return 'Waiting for an outside result';
  }
  if (event.kind === 'lease_taken_over' && !isWorkerOwner(str(d.previous_owner) ?? ''))
    return "The client's hold ran out";
  return eventWords(event.kind);
}

/**
 * Whether `event` says nothing a reader needs: a reducer answer with no new steps (after a
 * stop, the reducer is told and answers so). The timeline shows it dimmed.
 */
export function isQuietEvent(event: Pick<RunEvent, 'kind' | 'data'>): boolean {
  return (
    event.kind === 'reducer_answered' && Array.isArray(event.data.effects) && event.data.effects.length === 0
  );
}

/**
 * What each event kind means, in one line a newcomer reads without the contracts: the kind
 * filter's option titles, the row's kind title and the line under the filter. Every kind has one
 * (the Record's type sees to it). docs/contracts/reducer.md, "Event kinds"; docs/concepts.md.
 */
export const EVENT_KIND_HINTS: Record<RunEventKind, string> = {
  run_started: 'The run was created, with its input.',
  run_completed: 'The run ended with an outcome and a summary.',
  run_failed: 'The run ended in failure, with a code saying why.',
  stopped:
    'The run was stopped before it finished. Its open requests close, and the reducer is told of the stop; it answers with no new steps.',
  result_delivered:
    'A result the run was waiting for arrived from outside, quoting its delivery key (resume_key: the name the run gave that wait).',
  checkpoint_written:
    'A checkpoint of the run was saved (its state at this point), to resume from later or to fork from (start a new run from this point).',
  capability_gap:
    'The agent could not do what was asked with the tools it has, and recorded what is missing.',
  model_turn_completed: 'The model answered: its text, the tools it calls, the tokens it used.',
  operation_started: 'The run started a model turn or a tool call.',
  tool_result: 'A tool call ended; its result says what it read, wrote and proved.',
  operation_failed: 'A model turn or tool call failed.',
  operation_cancelled: 'A model turn or tool call was cancelled.',
  provider_outage: 'The model provider stayed unavailable after its retries; the turn is kept for later.',
  reducer_answered: `${REDUCER_HINT} It read an event and answered with its next steps; an answer with no new steps is shown dimmed.`,
  request_opened:
    'The run asked a person (an approval or a question), or a tool waits for its result from an outside system.',
  request_resolved: 'A person approved, denied or answered.',
  request_closed: 'A request ended without an answer: it expired, was cancelled or withdrawn.',
  steer_queued: 'Someone sent the run a message; it is read at the next turn.',
  steer_consumed: 'The run read a queued message.',
  steers_discarded: 'Queued messages were dropped unread, because the run ended first.',
  pause_requested: 'Someone asked the run to pause.',
  paused: 'The run paused.',
  resumed: 'The run was resumed.',
  stop_requested: 'Someone asked the run to stop.',
  control_rejected: 'A control (steer, stop, pause, resume, ...) was refused, with the reason.',
  budget_exceeded: 'A budget was used up before the next step.',
  lease_taken_over:
    "The worker or client moving the run stopped renewing its hold, and the runtime (its sweeper: a regular check for stalled runs) ended that hold: it takes a worker's run over, and lets go of a client's.",
};

/**
 * What happened, in a person's words: the main text of a timeline row, ahead of its line
 * (describeEvent). The kind itself stays on the row as a small tag, for the filter and the docs.
 */
export const EVENT_KIND_WORDS: Record<RunEventKind, string> = {
  run_started: 'Run started',
  run_completed: 'Run finished',
  run_failed: 'Run failed',
  stopped: 'Run stopped',
  result_delivered: 'Result arrived',
  checkpoint_written: 'Checkpoint saved',
  capability_gap: 'Missing a tool',
  model_turn_completed: 'The model answered',
  operation_started: 'Started',
  tool_result: 'Tool answered',
  operation_failed: 'Failed',
  operation_cancelled: 'Cancelled',
  provider_outage: 'Model provider unavailable',
  reducer_answered: 'The reducer answered',
  request_opened: 'Request opened',
  request_resolved: 'A person answered',
  request_closed: 'Request closed unanswered',
  steer_queued: 'Message sent to the run',
  steer_consumed: 'The run read a message',
  steers_discarded: 'Messages dropped unread',
  pause_requested: 'Pause asked for',
  paused: 'Paused',
  resumed: 'Resumed',
  stop_requested: 'Stop asked for',
  control_rejected: 'Control refused',
  budget_exceeded: 'Budget used up',
  lease_taken_over: 'Taken over by the runtime',
};

/** A kind the console does not know (a newer server's) reads as its name with spaces. */
export function eventWords(kind: string): string {
  return (EVENT_KIND_WORDS as Record<string, string>)[kind] ?? kind.replaceAll('_', ' ');
}

/** The line for a kind filter that names one kind (undefined for '' and groups). */
export function kindFilterHint(filter: string): string | undefined {
  const kind = RunEventKind.safeParse(filter);
  return kind.success ? EVENT_KIND_HINTS[kind.data] : undefined;
}

/** The timeline's kind filter, in groups a reader recognises; each kind is in exactly one group. */
export const EVENT_KIND_GROUPS: readonly { label: string; kinds: readonly RunEventKind[] }[] = [
  {
    label: 'Run lifecycle',
    kinds: [
      'run_started',
      'run_completed',
      'run_failed',
      'stopped',
      'result_delivered',
      'checkpoint_written',
      'capability_gap',
    ],
  },
  {
    label: 'Model and tools',
    kinds: [
      'model_turn_completed',
      'operation_started',
      'tool_result',
      'operation_failed',
      'operation_cancelled',
      'provider_outage',
      'reducer_answered',
    ],
  },
  { label: 'Questions and approvals', kinds: ['request_opened', 'request_resolved', 'request_closed'] },
  {
    label: 'Steers and controls',
    kinds: [
      'steer_queued',
      'steer_consumed',
      'steers_discarded',
      'pause_requested',
      'paused',
      'resumed',
      'stop_requested',
      'control_rejected',
    ],
  },
  { label: 'Budgets and recovery', kinds: ['budget_exceeded', 'lease_taken_over'] },
];

/**
 * Whether `event` passes the timeline's filter: '' (every kind), `group:{label}` (a group of
 * EVENT_KIND_GROUPS) or one kind.
 */
export function matchesKindFilter(event: Pick<RunEvent, 'kind'>, filter: string): boolean {
  if (filter === '') return true;
  if (filter.startsWith('group:')) {
    const group = EVENT_KIND_GROUPS.find((g) => `group:${g.label}` === filter);
    return group?.kinds.includes(event.kind) ?? false;
  }
  return event.kind === filter;
}
