/**
 * What a run looked like each time its reducer was called, read back from its log: the parts of
 * the record the engine copies into a `raisin.agent-run.reducer/1` request (status, turn,
 * last_seq, usage, open_requests, unanswered_calls; run_id, subject and budgets are the
 * exported record's), folded over the events before each delivery. The request itself is then
 * built by core's own `reducerRequestFor`, so a check sends what the engine sent.
 *
 * What the log cannot say: model retries inside a turn that completed (its event does not hold
 * its calls: counted 1; a failed turn's `attempts` are recorded), budgets raised on a resume (the
 * record's current budgets are used), and a delivery the worker rebased onto a concurrent
 * control's commit (the request then had the summary before that control's events).
 * docs/contracts/reducer.md, "Request".
 */
import {
  EMPTY_USAGE,
  OpenRequest,
  type RunEvent,
  type RunRecord,
  type RunStatus,
  type Usage,
} from '../../contracts/index.ts';
import { toReducerEvent } from '../../core/reducer-request.ts';
import { withProviderCalls } from '../../core/run-machine.ts';

/** The record fields a reducer request copies, as they stood when an event was delivered. */
export type RunSummary = Pick<
  RunRecord,
  | 'run_id'
  | 'status'
  | 'turn'
  | 'last_seq'
  | 'usage'
  | 'budgets'
  | 'open_requests'
  | 'unanswered_calls'
  | 'subject'
>;

/** One delivery found in the log: the event delivered, and what the run looked like then. */
export interface Delivery {
  /** The delivered event (the inbox head). */
  event: RunEvent;
  /** The run as the engine gave it to the reducer (last_seq = the answer's seq - 1). */
  run: RunSummary;
  /** The state revision the reducer was given (the previous answer's, 0 before any). */
  state_rev: number;
  /** How the run recorded the answer: a `reducer_answered` event, or the refusal that ended or paused it. */
  recorded: RecordedAnswer;
}

/** The recorded outcome of one delivery. */
export type RecordedAnswer =
  | { kind: 'answered'; seq: number; data: Record<string, unknown> }
  /** `run_failed` with `reducer_refused:<code>`, or `paused` with `reducer_unavailable`. */
  | { kind: 'refused'; seq: number; code: string };

/** The events that end a started operation (and charge its usage), by operation_id. */
const OPERATION_ENDS = new Set([
  'model_turn_completed',
  'tool_result',
  'request_opened',
  'operation_failed',
  'operation_cancelled',
  'provider_outage',
]);

/** The running fold: the summary fields plus what it needs to keep them (started operations, the inbox). */
interface Fold {
  status: RunStatus;
  turn: number;
  usage: Usage;
  open_requests: RunRecord['open_requests'];
  unanswered_calls: string[];
  /** Started operations not yet ended, by op_id → kind. */
  started: Map<string, string>;
  /** Provider calls of a model turn counted before its end (takeovers of lost dispatches), by op_id. */
  counted: Map<string, number>;
  /** Seqs of reducer-visible events not yet answered, oldest first. */
  inbox: number[];
  state_rev: number;
}

const TERMINAL_BY_EVENT: Readonly<Record<string, RunStatus>> = {
  run_completed: 'completed',
  run_failed: 'failed',
  stopped: 'stopped',
};

function isEnded(status: RunStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'stopped';
}

/**
 * Usage after the started operation of kind `kind` ended with `event` (the rules of core's
 * usageAfter and usageOfEnded): one operation; a model turn its calls (`attempts`, which a
 * failed turn and an outage record; 1 otherwise) and, unless kept for a retry by an outage, a
 * turn; a tool call one tool call; the tokens the event carries.
 */
function chargeEnd(usage: Usage, kind: string, event: RunEvent, counted = 0): Usage {
  let next: Usage = { ...usage, operations: usage.operations + 1 };
  if (kind === 'model_turn') {
    // `attempts` (a failure's, an outage's) holds every call of the turn; otherwise this dispatch
    // made one, after the `counted` ones its lost dispatches made (core withProviderCalls).
    const added = typeof event.data.attempts === 'number' ? Math.max(0, event.data.attempts - counted) : 1;
    next = withProviderCalls(next, counted, added);
    if (event.kind !== 'provider_outage') next.turns += 1;
  } else if (kind === 'tool_call') {
    next.tool_calls += 1;
  }
  const tokens = event.data.usage as { input_tokens?: unknown; output_tokens?: unknown } | undefined;
  if (typeof tokens?.input_tokens === 'number') next.input_tokens += tokens.input_tokens;
  if (typeof tokens?.output_tokens === 'number') next.output_tokens += tokens.output_tokens;
  return next;
}

/** Applies one event to the fold (everything but the delivery it may record). */
function step(f: Fold, e: RunEvent): void {
  const ended = TERMINAL_BY_EVENT[e.kind];
  if (ended !== undefined) {
    f.status = ended;
    f.open_requests = [];
  } else if (!isEnded(f.status)) {
    if (e.kind === 'stop_requested') f.status = 'cancelling';
    else if (e.kind === 'paused') f.status = 'paused';
    else if (e.kind === 'resumed') f.status = 'running';
  }
  if (e.kind === 'operation_started' && e.operation_id !== undefined) {
    f.started.set(e.operation_id, String(e.data.kind));
  } else if (OPERATION_ENDS.has(e.kind) && e.operation_id !== undefined) {
    const kind = f.started.get(e.operation_id);
    if (kind !== undefined) {
      f.usage = chargeEnd(f.usage, kind, e, f.counted.get(e.operation_id));
      f.started.delete(e.operation_id);
      f.counted.delete(e.operation_id);
    }
  }
  if (e.kind === 'lease_taken_over' && typeof e.data.provider_calls === 'number') {
    // The lost dispatch of the started model turn: its first request counted by the takeover.
    for (const [opId, kind] of f.started) {
      if (kind !== 'model_turn') continue;
      const before = f.counted.get(opId) ?? 0;
      f.usage = withProviderCalls(f.usage, before, 1);
      f.counted.set(opId, before + 1);
    }
  }
  if (e.kind === 'checkpoint_written' && e.data.reason === 'compaction') {
    // A compaction is an operation of its own (core's finishCompaction), ended by its checkpoint.
    f.usage = { ...f.usage, operations: f.usage.operations + 1 };
    if (e.operation_id !== undefined) f.started.delete(e.operation_id);
  }
  if (e.kind === 'model_turn_completed') {
    f.turn += 1;
    const calls = Array.isArray(e.data.tool_calls) ? (e.data.tool_calls as { call_id?: unknown }[]) : [];
    f.unanswered_calls = calls.map((c) => String(c.call_id));
  }
  if (e.kind === 'request_opened') {
    const opened = OpenRequest.safeParse(e.data);
    if (opened.success) f.open_requests = [...f.open_requests, opened.data];
  } else if (e.kind === 'request_closed' || e.kind === 'request_resolved' || e.kind === 'result_delivered') {
    f.open_requests = f.open_requests.filter((r) => r.request_id !== e.data.request_id);
  }
  if (toReducerEvent(e) !== null) f.inbox.push(e.seq);
}

/** What a `reducer_answered` event changes in the fold besides step's part. */
function answerStep(f: Fold, e: RunEvent): void {
  f.inbox = f.inbox.filter((s) => s !== Number(e.data.event_seq));
  if (typeof e.data.state_rev === 'number') f.state_rev = e.data.state_rev;
  // A request_model_turn answers every call of the last turn (core's applyEffect).
  const effects = Array.isArray(e.data.effects) ? (e.data.effects as { kind?: unknown }[]) : [];
  if (effects.some((x) => x.kind === 'request_model_turn')) f.unanswered_calls = [];
}

function emptyFold(): Fold {
  return {
    status: 'running',
    turn: 0,
    usage: { ...EMPTY_USAGE },
    open_requests: [],
    unanswered_calls: [],
    started: new Map(),
    counted: new Map(),
    inbox: [],
    state_rev: 0,
  };
}

/**
 * The run as it stood after the last of `events` (seq 1 upward, contiguous): the summary fields
 * folded from the log (`last_seq` the last event's) and the domain state revision then. Used by
 * the time-travel read (`GET /runs/{id}/at/{seq}`).
 */
export function summaryAfter(
  run: Pick<RunRecord, 'run_id' | 'subject' | 'budgets'>,
  events: readonly RunEvent[],
): { run: RunSummary; state_rev: number } {
  const f = emptyFold();
  for (const e of events) {
    if (e.kind === 'reducer_answered') answerStep(f, e);
    step(f, e);
  }
  return {
    run: {
      run_id: run.run_id,
      subject: run.subject,
      budgets: run.budgets,
      status: f.status,
      turn: f.turn,
      last_seq: events.at(-1)?.seq ?? 0,
      usage: f.usage,
      open_requests: f.open_requests,
      unanswered_calls: f.unanswered_calls,
    },
    state_rev: f.state_rev,
  };
}

/** The refusal code a `run_failed` or `paused` event records for the inbox head, or null. */
function refusalOf(e: RunEvent): string | null {
  const code = e.kind === 'run_failed' ? e.data.code : e.kind === 'paused' ? e.data.reason : undefined;
  if (typeof code !== 'string') return null;
  // A `reducer_changed` pause is no decision: the artifact was swapped, and the event is
  // delivered again once the change is accepted.
  return code.startsWith('reducer_refused:') || code === 'reducer_unavailable' ? code : null;
}

/** The first index of the commit that ends at `i`: the run_ended closes and discards failRun writes first. */
function commitStart(events: readonly RunEvent[], i: number): number {
  let j = i;
  for (;;) {
    const prev = events[j - 1];
    const closing =
      prev !== undefined &&
      ((prev.kind === 'request_closed' && prev.data.reason === 'run_ended') ||
        prev.kind === 'steers_discarded');
    if (!closing) return j;
    j -= 1;
  }
}

/**
 * Every delivery of `events` (the whole log, seq 1 upward, as the store returns it) to the
 * reducer of `run` (the exported record: run_id, subject and budgets are read from it), in log
 * order. A `reducer_answered` names the event it answered; a refusal (`run_failed`
 * reducer_refused:*, `paused` reducer_unavailable) answers the inbox head.
 */
export function deliveriesOf(
  run: Pick<RunRecord, 'run_id' | 'subject' | 'budgets'>,
  events: readonly RunEvent[],
): Delivery[] {
  const f = emptyFold();
  const bySeq = new Map(events.map((e) => [e.seq, e]));
  const out: Delivery[] = [];
  /** The summary before each event (index), with the inbox head and state revision then. */
  const before: { run: RunSummary; head: number | undefined; state_rev: number }[] = [];
  for (const [i, e] of events.entries()) {
    before.push({
      run: {
        run_id: run.run_id,
        subject: run.subject,
        budgets: run.budgets,
        status: f.status,
        turn: f.turn,
        last_seq: e.seq - 1,
        usage: { ...f.usage },
        open_requests: f.open_requests,
        unanswered_calls: f.unanswered_calls,
      },
      head: f.inbox[0],
      state_rev: f.state_rev,
    });
    if (e.kind === 'reducer_answered') {
      const delivered = bySeq.get(Number(e.data.event_seq));
      const then = before[i];
      if (delivered !== undefined && then !== undefined) {
        out.push({
          event: delivered,
          run: then.run,
          state_rev: then.state_rev,
          recorded: { kind: 'answered', seq: e.seq, data: e.data },
        });
      }
      answerStep(f, e);
    } else {
      const refusal = refusalOf(e);
      const then = refusal !== null ? before[commitStart(events, i)] : undefined;
      const head = then?.head !== undefined ? bySeq.get(then.head) : undefined;
      if (refusal !== null && then !== undefined && head !== undefined) {
        out.push({
          event: head,
          run: then.run,
          state_rev: then.state_rev,
          recorded: { kind: 'refused', seq: e.seq, code: refusal },
        });
      }
    }
    step(f, e);
  }
  return out;
}
