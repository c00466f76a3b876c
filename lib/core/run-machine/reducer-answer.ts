/**
 * Applying a validated reducer answer: the effects of raisin.agent-run.reducer/1 become the
 * run's operation, requests, checkpoints and ending. Seed: agent-run-contracts, "Response".
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
import {
  append,
  clearedEpoch,
  closeAllRequests,
  type Draft,
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
   * one yet (seed: agent-runs, "Domain reducers": "Pinned").
   */
  artifact_hash?: string;
}

/**
 * Applies a validated reducer answer to the event at the inbox head: advances reduced_seq and
 * state_rev, records the projection, and applies each effect (operation, requests, checkpoint,
 * terminal). An operation effect while another operation is pending fails the run
 * (reducer_refused:multiple_operations). Seed: agent-run-contracts, "Response", effect table.
 */
export function applyReducerAnswer(record: RunRecord, answer: ReducerAnswer, now: number): TransitionResult {
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
    switch (effect.kind) {
      case 'call_tool':
      case 'request_model_turn': {
        if (draft.operation !== null) {
          return failRun(record, 'reducer_refused:multiple_operations', now, answer.event_seq);
        }
        const n = draft.counters.next_op + 1;
        const op: Operation = {
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
        draft = { ...draft, operation: op, counters: { ...draft.counters, next_op: n } } as Draft;
        if (effect.kind === 'request_model_turn') draft = { ...draft, unanswered_calls: [] } as Draft;
        break;
      }
      case 'request_approval':
      case 'ask_user': {
        const n = draft.counters.next_req + 1;
        const request_id = `${record.run_id}/req/${n}`;
        const expires_at = effect.expires_in_ms !== undefined ? now + effect.expires_in_ms : null;
        const request: OpenRequest =
          effect.kind === 'request_approval'
            ? {
                kind: 'approval',
                request_id,
                effect_id: effect.effect_id,
                subject: effect.subject,
                opened_at: now,
                expires_at,
              }
            : {
                kind: 'input',
                request_id,
                effect_id: effect.effect_id,
                question: effect.question,
                ...(effect.choices !== undefined ? { choices: effect.choices } : {}),
                ...(effect.schema !== undefined ? { schema: effect.schema } : {}),
                opened_at: now,
                expires_at,
              };
        draft = {
          ...draft,
          open_requests: [...draft.open_requests, request],
          counters: { ...draft.counters, next_req: n },
        } as Draft;
        newEvents.push(ev('request_opened', now, { ...request }, { effect_id: effect.effect_id }));
        break;
      }
      case 'withdraw_request': {
        const found = draft.open_requests.find((r) => r.request_id === effect.request_id);
        if (found === undefined) break; // already closed: nothing to withdraw
        // Withdrawing the approval the policy gate opened withdraws the operation it held back.
        draft = dropGatedOperation(
          { ...draft, open_requests: draft.open_requests.filter((r) => r !== found) } as Draft,
          found,
        );
        newEvents.push(
          ev(
            'request_closed',
            now,
            { request_id: found.request_id, reason: 'withdrawn' },
            { effect_id: found.effect_id },
          ),
        );
        break;
      }
      case 'checkpoint': {
        const n = draft.counters.checkpoints + 1;
        draft = { ...draft, counters: { ...draft.counters, checkpoints: n } } as Draft;
        newEvents.push(
          ev('checkpoint_written', now, {
            checkpoint_no: n,
            reason: effect.reason ?? 'reducer',
            ...(effect.summary !== undefined ? { summary: effect.summary } : {}),
            state_rev: answer.state_rev,
          }),
        );
        break;
      }
      case 'capability_gap':
        newEvents.push(ev('capability_gap', now, { gap: effect.gap }, { effect_id: effect.effect_id }));
        break;
      case 'complete':
      case 'fail':
        break; // applied after the loop so that earlier effects (a gap) are recorded first
    }
  }
  const terminalEffect = answer.effects.find((e) => e.kind === 'complete' || e.kind === 'fail');
  if (terminalEffect !== undefined && !terminal) {
    const closing = closeAllRequests(draft, now, 'run_ended');
    newEvents.push(...closing.events);
    if (closing.discarded > 0) newEvents.push(ev('steers_discarded', now, { count: closing.discarded }));
    if (terminalEffect.kind === 'complete') {
      newEvents.push(
        ev('run_completed', now, {
          outcome: terminalEffect.outcome,
          summary: terminalEffect.summary ?? null,
        }),
      );
      draft = {
        ...draft,
        status: 'completed',
        outcome: terminalEffect.outcome,
        ...(terminalEffect.summary !== undefined ? { summary: terminalEffect.summary } : {}),
        ...terminalFields(record, now, `completed:${terminalEffect.outcome}`),
        epoch: clearedEpoch(record),
      } as Draft;
    } else if (terminalEffect.kind === 'fail') {
      newEvents.push(ev('run_failed', now, { code: terminalEffect.code, message: terminalEffect.message }));
      draft = {
        ...draft,
        status: 'failed',
        ...terminalFields(record, now, terminalEffect.code),
        epoch: clearedEpoch(record),
      } as Draft;
    }
    const appended = append(draft, newEvents, now);
    return finish({ ...appended.draft, inbox: [] } as Draft, appended.events);
  }
  const appended = append(draft, newEvents, now);
  return finish(appended.draft, appended.events);
}
