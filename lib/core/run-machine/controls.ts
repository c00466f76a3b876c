/**
 * Controls: one decision per control (duplicate, rejected with a reason, applied) and the
 * transitions of stop, pause, resume, steer, approve and provide_input.
 * docs/contracts/run-lifecycle.md, "Controls".
 */
import {
  type Budgets,
  type Control,
  isTerminalStatus,
  type NewRunEvent,
  type RunEvent,
  type RunRecord,
  TREE_LIMITS,
  type TreeLimit,
} from '../../contracts/index.ts';
import { type BudgetExceeded, checkBudgets } from '../budgets.ts';
import {
  append,
  closeAllRequests,
  type Draft,
  discardedSteers,
  dropGatedOperation,
  ev,
  finish,
  InvariantViolation,
  reject,
  seal,
  settleIdle,
  type TransitionResult,
  terminalFields,
} from './draft.ts';
import { pauseRun } from './lifecycle.ts';

/** What the store holds for a control id already seen (`K#{control_id}`). */
export interface StoredControlAck {
  digest: string;
  seq: number;
}

export type ControlDecision =
  | { kind: 'applied'; record: RunRecord; events: RunEvent[]; seq: number }
  | { kind: 'duplicate'; original_seq: number }
  /**
   * Rejected with `reason`. With events: logged as a control_rejected event (seq); without
   * (a run that ended): nothing is written, and seq is the run's last event.
   */
  | { kind: 'rejected'; reason: string; record: RunRecord; events: RunEvent[]; seq: number };

/**
 * Decides one control of a caller who may act on the run (the engine checks that first: see
 * core/authority.ts) in one step: duplicate (same id and command digest), rejected (logged as a
 * control_rejected event, whose seq the ack carries; on a run that ended, nothing is written and
 * the seq is its last event) or applied (its events, the first of which the ack's seq names).
 * Never throws for a rejected control. `digest` is the canonical digest of the command without
 * its control_id. docs/contracts/run-lifecycle.md, "Controls".
 */
export function decideControl(
  record: RunRecord,
  control: Control,
  digest: string,
  previous: StoredControlAck | null,
  now: number,
  limits: ControlLimits = {},
): ControlDecision {
  const ended = isTerminalStatus(record.status);
  if (previous !== null) {
    if (previous.digest === digest) return { kind: 'duplicate', original_seq: previous.seq };
    return ended
      ? unlogged(record, 'control_id_reused')
      : rejectControl(record, control, 'control_id_reused', now);
  }
  // An ended run's log is final: a control sent to it is rejected without an event or an ack.
  if (ended) return unlogged(record, 'run_terminal');
  const result = applyControl(record, control, now, limits);
  if (!result.ok) return rejectControl(record, control, result.code, now);
  const first = result.events[0];
  if (first === undefined) throw new InvariantViolation('an applied control appends at least one event', []);
  return { kind: 'applied', record: result.record, events: result.events, seq: first.seq };
}

/** A rejection that writes nothing: the ack's seq is the run's last event. */
function unlogged(record: RunRecord, reason: string): ControlDecision {
  return { kind: 'rejected', reason, record, events: [], seq: record.last_seq };
}

function rejectControl(record: RunRecord, control: Control, reason: string, now: number): ControlDecision {
  const appended = append(
    { ...record } as Draft,
    [ev('control_rejected', now, { control_id: control.control_id, command: control.command, reason })],
    now,
  );
  const recordOut = seal(appended.draft);
  const first = appended.events[0] as RunEvent;
  return { kind: 'rejected', reason, record: recordOut, events: appended.events, seq: first.seq };
}

/** Bounds a deployment sets on what controls may queue. */
export interface ControlLimits {
  /**
   * The reducer check of a run paused `reducer_changed`, when the deployment requires one
   * (EngineOptions.requireReducerCheck): a resume accepting the change is rejected
   * `reducer_check_failed` unless it passed.
   */
  reducerCheck?: { passed: boolean };
  /** Queued steers a run may hold; one more is rejected `steer_queue_full` (default DEFAULT_MAX_QUEUED_STEERS; AdmissionConfig.max_queued_steers). */
  maxQueuedSteers?: number;
}

/** Default bound of a run's queued steers: each lives in the run record until consumed. */
export const DEFAULT_MAX_QUEUED_STEERS = 32;

/**
 * The rejection of an answer (approve, provide_input) to `requestId` when no open request has
 * that id: `request_already_resolved` when it names a request this run opened (ids are
 * `{run_id}/req/{n}`, n up to counters.next_req) that is no longer open (answered, or closed:
 * expired, withdrawn, stopped), else `request_not_found`. Decided from the record alone.
 * docs/contracts/run-lifecycle.md, "Controls".
 */
function noOpenRequest(record: RunRecord, requestId: string): TransitionResult {
  const prefix = `${record.run_id}/req/`;
  const n = requestId.startsWith(prefix) ? Number(requestId.slice(prefix.length)) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= 1 && n <= record.counters.next_req && `${prefix}${n}` === requestId)
    return reject('request_already_resolved', 'the request was already answered or closed');
  return reject('request_not_found', 'no open request with that id');
}

function applyControl(
  record: RunRecord,
  control: Control,
  now: number,
  limits: ControlLimits,
): TransitionResult {
  switch (control.command) {
    case 'stop':
      return stopRun(record, control.reason ?? 'stopped by control', now, control.control_id);
    case 'pause':
      return pauseControl(record, control.reason ?? 'paused by control', now);
    case 'resume':
      return resumeRun(record, control, now, limits);
    case 'steer':
      if (record.queued_steers.length >= (limits.maxQueuedSteers ?? DEFAULT_MAX_QUEUED_STEERS))
        return reject(
          'steer_queue_full',
          `the run already holds ${record.queued_steers.length} queued steers`,
        );
      return steerRun(record, control, now);
    case 'approve': {
      const request = record.open_requests.find((r) => r.request_id === control.request_id);
      if (request === undefined) return noOpenRequest(record, control.request_id);
      if (request.kind !== 'approval')
        return reject('request_kind_mismatch', 'the request is not an approval');
      if (request.subject.digest !== control.subject_digest)
        return reject('digest_mismatch', 'the approval quotes a stale digest');
      let draft = { ...record, open_requests: record.open_requests.filter((r) => r !== request) } as Draft;
      const op = draft.operation;
      if (control.decision === 'approved' && op !== null && op.effect_id === request.effect_id) {
        draft = { ...draft, operation: { ...op, approved_digest: request.subject.digest } } as Draft;
      } else if (control.decision === 'rejected') {
        draft = dropGatedOperation(draft, request);
      }
      const appended = append(
        draft,
        [
          ev(
            'request_resolved',
            now,
            {
              request_id: request.request_id,
              kind: 'approval',
              decision: control.decision,
              subject_digest: control.subject_digest,
              ...(control.reason !== undefined ? { reason: control.reason } : {}),
            },
            { effect_id: request.effect_id },
          ),
        ],
        now,
      );
      return finish(settleIdle(appended.draft, now), appended.events);
    }
    case 'provide_input': {
      const request = record.open_requests.find((r) => r.request_id === control.request_id);
      if (request === undefined) return noOpenRequest(record, control.request_id);
      if (request.kind !== 'input') return reject('request_kind_mismatch', 'the request is not a question');
      const draft = { ...record, open_requests: record.open_requests.filter((r) => r !== request) } as Draft;
      const appended = append(
        draft,
        [
          ev(
            'request_resolved',
            now,
            { request_id: request.request_id, kind: 'input', value: control.value },
            { effect_id: request.effect_id },
          ),
        ],
        now,
      );
      return finish(settleIdle(appended.draft, now), appended.events);
    }
  }
}

/**
 * Steer: queued (event steer_queued), consumed at the next boundary between operations. While an
 * operation is in flight, `when_busy` decides: `enqueue` (default) queues it; `reject` refuses it
 * `run_busy`; `interrupt` queues it and, when the operation is interruptible and the run is not
 * stopping, marks the record `interrupt_requested` (the operation's executor cancels it; the
 * steer_queued event names the operation in `interrupts`). A waiting run is woken.
 * docs/contracts/run-lifecycle.md, "Controls" (steer).
 */
function steerRun(record: RunRecord, control: Extract<Control, { command: 'steer' }>, now: number) {
  const whenBusy = control.when_busy ?? 'enqueue';
  const op = record.operation;
  const inFlight = op !== null && op.started_at !== null ? op : null;
  if (inFlight !== null && whenBusy === 'reject')
    return reject('run_busy', `operation ${inFlight.op_id} is in flight`);
  const interrupts =
    inFlight !== null &&
    whenBusy === 'interrupt' &&
    inFlight.interruptible &&
    record.status === 'running' &&
    !('interrupt_requested' in record && record.interrupt_requested !== undefined);
  const n = record.counters.next_steer + 1;
  const steer_id = `${record.run_id}/steer/${n}`;
  let draft = { ...record, counters: { ...record.counters, next_steer: n } } as Draft;
  const data = {
    steer_id,
    control_id: control.control_id,
    input: control.input,
    ...(control.when_busy !== undefined ? { when_busy: control.when_busy } : {}),
    ...(interrupts ? { interrupts: inFlight.op_id } : {}),
  };
  const appended = append(draft, [ev('steer_queued', now, data)], now);
  const seq = appended.events[0]?.seq ?? 0;
  draft = {
    ...appended.draft,
    queued_steers: [
      ...record.queued_steers,
      { steer_id, control_id: control.control_id, input: control.input, seq },
    ],
    ...(interrupts ? { interrupt_requested: steer_id } : {}),
  } as Draft;
  if (draft.status === 'waiting') draft = { ...draft, status: 'queued', wake_at: now } as Draft;
  return finish(draft, appended.events);
}

/**
 * Stop: immediate between operations (open requests closed, steers discarded, lease cleared with
 * epoch + 1, a pending operation dropped); during a started operation the run enters cancelling
 * and becomes stopped when the operation returns. docs/contracts/run-lifecycle.md, "Controls"
 * (stop).
 */
export function stopRun(
  record: RunRecord,
  reason: string,
  now: number,
  controlId?: string,
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  if (record.status === 'cancelling') return reject('already_stopping', 'run is already stopping');
  const op = record.operation;
  if (op !== null && op.started_at !== null && record.lease !== null) {
    const draft = {
      ...record,
      status: 'cancelling',
      stop_reason: reason,
      pause_requested: undefined,
    } as Draft;
    const appended = append(
      draft,
      [ev('stop_requested', now, { reason, ...(controlId ? { control_id: controlId } : {}) })],
      now,
    );
    return finish(appended.draft, appended.events);
  }
  const draft = { ...record } as Draft;
  const closing = closeAllRequests(draft, now, 'stopped');
  const newEvents: NewRunEvent[] = [
    ev('stopped', now, { reason, ...(controlId ? { control_id: controlId } : {}) }),
    ...closing.events,
  ];
  newEvents.push(...discardedSteers(draft, now));
  const stopped = {
    ...draft,
    status: 'stopped',
    epoch: record.lease !== null ? record.epoch + 1 : record.epoch,
    ...terminalFields(record, now, 'stopped'),
  } as Draft;
  const appended = append(stopped, newEvents, now);
  return finish(appended.draft, appended.events);
}

function pauseControl(record: RunRecord, reason: string, now: number): TransitionResult {
  if (record.status === 'paused') return reject('already_paused', 'run is already paused');
  if (record.status === 'cancelling') return reject('already_stopping', 'run is stopping; it cannot pause');
  const op = record.operation;
  if (op !== null && op.started_at !== null) {
    const draft = { ...record, pause_requested: reason } as Draft;
    const appended = append(draft, [ev('pause_requested', now, { reason })], now);
    return finish(appended.draft, appended.events);
  }
  return pauseRun(record, reason, now);
}

/**
 * Resume a paused run: budget_increase adds to the limits; a `reducer_changed` pause needs
 * accept_reducer_change (the artifact pin is then cleared and re-taken at the next call).
 * Event resumed {from_checkpoint_no} reaches the reducer. docs/contracts/run-lifecycle.md,
 * "Controls" (resume), "Budgets".
 */
function resumeRun(
  record: RunRecord,
  control: Extract<Control, { command: 'resume' }>,
  now: number,
  limits: ControlLimits,
): TransitionResult {
  if (record.status !== 'paused') return reject('not_paused', 'only a paused run can be resumed');
  if (record.pause_reason === 'reducer_changed' && control.accept_reducer_change !== true) {
    return reject(
      'reducer_change_not_accepted',
      'the reducer artifact changed: resume with accept_reducer_change: true',
    );
  }
  if (record.pause_reason === 'reducer_changed' && limits.reducerCheck?.passed === false) {
    return reject(
      'reducer_check_failed',
      'the new reducer artifact does not decide this run as the old one did (agent-runs reducers check)',
    );
  }
  if (record.parent_run_id !== undefined && control.budget_increase?.max_depth !== undefined) {
    return reject(
      'max_depth_inherited',
      "a child run's max_depth is its parent's ceiling; it cannot be raised on the child",
    );
  }
  const raised = Object.keys(control.budget_increase ?? {});
  const tree = raised.find(
    (k) => (TREE_LIMITS as readonly string[]).includes(k) && record.reserved?.[k as TreeLimit] !== undefined,
  );
  if (tree !== undefined) {
    return reject(
      'tree_budget_reserved',
      `a child run's ${tree} is its reservation of its parent's budget; it cannot be raised on the child`,
    );
  }
  const budgets: Budgets = { ...record.budgets };
  for (const [key, inc] of Object.entries(control.budget_increase ?? {})) {
    const k = key as keyof Budgets;
    if (typeof inc === 'number') budgets[k] = (budgets[k] ?? 0) + inc;
  }
  const still = stillExceeded(record, budgets, now);
  if (still !== null) {
    return reject(
      'budget_still_exceeded',
      `${still.which} is still exceeded (used ${still.used} of ${still.limit}): resume with a budget_increase that covers it`,
    );
  }
  let reducer = record.reducer;
  if (control.accept_reducer_change === true && reducer !== null) {
    const { artifact_hash: _dropped, ...rest } = reducer;
    reducer = rest;
  }
  const { pause_reason: _r, paused_from: _p, ...rest } = record;
  const draft = {
    ...rest,
    status: 'queued',
    budgets,
    reducer,
    counters: { ...record.counters, consecutive_op_failures: 0 },
  } as Draft;
  const appended = append(
    draft,
    [ev('resumed', now, { from_checkpoint_no: record.counters.checkpoints })],
    now,
  );
  return finish(settleIdle(appended.draft, now), appended.events);
}

/**
 * The budget that would refuse the pending operation at once after a resume with `budgets`
 * (consecutive failures count from zero again after a resume), or null. A resume that cannot
 * resume is rejected rather than applied and re-paused. docs/contracts/run-lifecycle.md, "Budgets".
 */
function stillExceeded(record: RunRecord, budgets: Budgets, now: number): BudgetExceeded | null {
  const op = record.operation;
  if (op === null || op.started_at !== null) return null;
  const resumed = {
    ...record,
    budgets,
    counters: { ...record.counters, consecutive_op_failures: 0 },
  };
  return checkBudgets(resumed, op, now);
}

/** The ids of model tool calls the run still owes the model an answer for. */
export function unansweredCalls(record: RunRecord): string[] {
  return record.unanswered_calls;
}
