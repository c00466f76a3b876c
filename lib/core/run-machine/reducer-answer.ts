/**
 * Applying a validated reducer answer: the effects of raisin.agent-run.reducer/1 become the
 * run's operation, requests, checkpoints and ending. docs/contracts/reducer.md, "Response".
 */
import {
  type Effect,
  isTerminalStatus,
  type NewRunEvent,
  type OpenRequest,
  type Operation,
  type Projection,
  type RunRecord,
} from '../../contracts/index.ts';
import { placeRequestedCompaction } from './compaction.ts';
import {
  append,
  clearedEpoch,
  closeAllRequests,
  type Draft,
  discardedSteers,
  dropGatedOperation,
  ev,
  finish,
  reject,
  type TransitionResult,
  terminalFields,
} from './draft.ts';
import { failRun } from './lifecycle.ts';

export interface ReducerAnswer {
  /** Seq of the event the reducer answered (inbox head). */
  event_seq: number;
  state_rev: number;
  effects: Effect[];
  projection: Projection | null | undefined;
  diagnostics: unknown[];
  /**
   * The hash of the reducer artifact that answered; pins the binding when the run has not pinned
   * one yet (docs/contracts/reducer.md, "Binding": the run pins the artifact hash).
   */
  artifact_hash?: string;
}

/** A draft and the events one effect adds to it. */
type Step = { draft: Draft; events: NewRunEvent[] };

/** The pending operation an operation effect (call_tool, request_model_turn) asks for. */
function operationOf(
  record: RunRecord,
  effect: Extract<Effect, { kind: 'call_tool' | 'request_model_turn' }>,
  n: number,
): Operation {
  return {
    op_id: `${record.run_id}/op/${n}`,
    kind: effect.kind === 'call_tool' ? 'tool_call' : 'model_turn',
    effect_id: effect.effect_id,
    effect,
    replay_safe: effect.kind === 'call_tool' ? effect.replay_safe : true,
    interruptible: effect.kind === 'call_tool' ? effect.interruptible : true,
    attempt: 1,
    started_at: null,
    ...(effect.kind === 'call_tool' && effect.for_call_id !== undefined
      ? { call_id: effect.for_call_id }
      : {}),
  };
}

/** The request an approval or question effect opens. */
function requestOf(
  record: RunRecord,
  effect: Extract<Effect, { kind: 'request_approval' | 'ask_user' }>,
  n: number,
  now: number,
): OpenRequest {
  const request_id = `${record.run_id}/req/${n}`;
  const expires_at = effect.expires_in_ms !== undefined ? now + effect.expires_in_ms : null;
  if (effect.kind === 'request_approval') {
    return {
      kind: 'approval',
      request_id,
      effect_id: effect.effect_id,
      subject: effect.subject,
      opened_at: now,
      expires_at,
    };
  }
  return {
    kind: 'input',
    request_id,
    effect_id: effect.effect_id,
    question: effect.question,
    ...(effect.choices !== undefined ? { choices: effect.choices } : {}),
    ...(effect.schema !== undefined ? { schema: effect.schema } : {}),
    opened_at: now,
    expires_at,
  };
}

/**
 * Whether `effect` may replace the pending operation `op`: a request_model_turn replaces a model
 * turn that has not started (the reducer re-asks with a newer transcript, e.g. after a steer it
 * saw at the boundary before that turn). Anything else while an operation is pending is
 * multiple_operations. docs/contracts/run-lifecycle.md, "Controls" (steer: "consumed at the next
 * safe boundary").
 */
function supersedes(op: Operation, effect: Effect): boolean {
  return op.started_at === null && op.kind === 'model_turn' && effect.kind === 'request_model_turn';
}

/**
 * One non-terminal effect applied to the draft (complete and fail are applied after every other
 * effect, so that an earlier gap is recorded first). Null: an operation effect while another
 * operation is pending.
 */
function applyEffect(
  draft: Draft,
  effect: Effect,
  record: RunRecord,
  stateRev: number,
  now: number,
): Step | null {
  switch (effect.kind) {
    case 'call_tool':
    case 'request_model_turn': {
      if (draft.operation !== null && !supersedes(draft.operation, effect)) return null;
      const n = draft.counters.next_op + 1;
      const next = {
        ...draft,
        operation: operationOf(record, effect, n),
        counters: { ...draft.counters, next_op: n },
        ...(effect.kind === 'request_model_turn' ? { unanswered_calls: [] } : {}),
      } as Draft;
      return { draft: next, events: [] };
    }
    case 'request_approval':
    case 'ask_user': {
      const n = draft.counters.next_req + 1;
      const request = requestOf(record, effect, n, now);
      const next = {
        ...draft,
        open_requests: [...draft.open_requests, request],
        counters: { ...draft.counters, next_req: n },
      } as Draft;
      return {
        draft: next,
        events: [ev('request_opened', now, { ...request }, { effect_id: effect.effect_id })],
      };
    }
    case 'withdraw_request': {
      const found = draft.open_requests.find((r) => r.request_id === effect.request_id);
      if (found === undefined) return { draft, events: [] }; // already closed: nothing to withdraw
      // Withdrawing the approval the policy gate opened withdraws the operation it held back.
      const next = dropGatedOperation(
        { ...draft, open_requests: draft.open_requests.filter((r) => r !== found) } as Draft,
        found,
      );
      const closed = ev(
        'request_closed',
        now,
        { request_id: found.request_id, reason: 'withdrawn' },
        { effect_id: found.effect_id },
      );
      return { draft: next, events: [closed] };
    }
    case 'checkpoint': {
      // A compaction asked for while the run lives is an operation before the next model turn.
      if (effect.reason === 'compaction' && !isTerminalStatus(record.status)) {
        return { draft: { ...draft, compaction_requested: true } as Draft, events: [] };
      }
      const n = draft.counters.checkpoints + 1;
      const written = ev('checkpoint_written', now, {
        checkpoint_no: n,
        reason: effect.reason ?? 'reducer',
        ...(effect.summary !== undefined ? { summary: effect.summary } : {}),
        state_rev: stateRev,
      });
      return {
        draft: { ...draft, counters: { ...draft.counters, checkpoints: n } } as Draft,
        events: [written],
      };
    }
    case 'capability_gap':
      return {
        draft,
        events: [ev('capability_gap', now, { gap: effect.gap }, { effect_id: effect.effect_id })],
      };
    case 'complete':
    case 'fail':
      return { draft, events: [] };
  }
}

/** Ends the run by its complete or fail effect: open requests closed, steers discarded, lease cleared. */
function endByEffect(
  draft: Draft,
  effect: Extract<Effect, { kind: 'complete' | 'fail' }>,
  record: RunRecord,
  now: number,
): Step {
  const closing = closeAllRequests(draft, now, 'run_ended');
  const events: NewRunEvent[] = [...closing.events];
  events.push(...discardedSteers(draft, now));
  if (effect.kind === 'complete') {
    events.push(
      ev('run_completed', now, {
        outcome: effect.outcome,
        summary: effect.summary ?? null,
        // Kept for the checked hand-back of a child run (its delegation's `returns`).
        ...(effect.artifacts !== undefined ? { artifacts: effect.artifacts } : {}),
      }),
    );
    const ended = {
      ...draft,
      status: 'completed',
      outcome: effect.outcome,
      ...(effect.summary !== undefined ? { summary: effect.summary } : {}),
      ...terminalFields(record, now, `completed:${effect.outcome}`),
      epoch: clearedEpoch(record),
    } as Draft;
    return { draft: ended, events };
  }
  events.push(ev('run_failed', now, { code: effect.code, message: effect.message }));
  const ended = {
    ...draft,
    status: 'failed',
    ...terminalFields(record, now, effect.code),
    epoch: clearedEpoch(record),
  } as Draft;
  return { draft: ended, events };
}

/**
 * Applies a validated reducer answer to the event at the inbox head: advances reduced_seq and
 * state_rev, records the projection, and applies each effect (operation, requests, checkpoint,
 * terminal). An operation effect while another operation is pending fails the run
 * (reducer_refused:multiple_operations), except a request_model_turn replacing a model turn that
 * has not started. Refused `invalid_state` on a paused run. docs/contracts/reducer.md, "Response",
 * effect table.
 */
export function applyReducerAnswer(record: RunRecord, answer: ReducerAnswer, now: number): TransitionResult {
  // A paused run's events wait for a resume: an answer computed before a pause landed (a step
  // whose commit lost the race to the pause and is replayed on it) is not applied.
  if (record.status === 'paused')
    return reject('invalid_state', 'the run is paused: its events reach the reducer after a resume');
  if (record.inbox[0] !== answer.event_seq) {
    return reject('not_inbox_head', `event ${answer.event_seq} is not the next undelivered event`);
  }
  let draft = {
    ...record,
    inbox: record.inbox.slice(1),
    reduced_seq: answer.event_seq,
    state_rev: answer.state_rev,
    projection: answer.projection === undefined ? record.projection : answer.projection,
    reducer:
      record.reducer !== null &&
      record.reducer.artifact_hash === undefined &&
      answer.artifact_hash !== undefined
        ? { ...record.reducer, artifact_hash: answer.artifact_hash }
        : record.reducer,
    updated_at: now,
  } as Draft;
  const newEvents: NewRunEvent[] = [
    ev('reducer_answered', now, {
      event_seq: answer.event_seq,
      state_rev: answer.state_rev,
      effects: answer.effects.map((e) => ({ effect_id: e.effect_id, kind: e.kind })),
      ...(answer.diagnostics.length > 0 ? { diagnostics: answer.diagnostics } : {}),
    }),
  ];
  const terminal = isTerminalStatus(record.status);
  for (const effect of answer.effects) {
    if (terminal && effect.kind !== 'checkpoint') continue; // validation refuses these; defensive
    const step = applyEffect(draft, effect, record, answer.state_rev, now);
    if (step === null) return failRun(record, 'reducer_refused:multiple_operations', now, answer.event_seq);
    draft = step.draft;
    newEvents.push(...step.events);
  }
  const terminalEffect = answer.effects.find(
    (e): e is Extract<Effect, { kind: 'complete' | 'fail' }> => e.kind === 'complete' || e.kind === 'fail',
  );
  if (terminalEffect !== undefined && !terminal) {
    const ended = endByEffect(draft, terminalEffect, record, now);
    const appended = append(ended.draft, [...newEvents, ...ended.events], now);
    return finish({ ...appended.draft, inbox: [] } as Draft, appended.events);
  }
  const appended = append(placeRequestedCompaction(draft), newEvents, now);
  return finish(appended.draft, appended.events);
}
