/**
 * What the run does with the reducer's answer to the event at its inbox head, while it runs and
 * after it ended: one rule for both. A valid answer is applied; a missing, timed-out or trapping
 * reducer pauses the run with reducer_unavailable, a changed artifact with reducer_changed; a
 * throw, a refusal or an invalid answer fails it with reducer_refused:<code>. After the run
 * ended only checkpoint effects apply and nothing can fail or pause it: an answer that cannot
 * be applied is recorded as an empty one (the state stays). docs/contracts/reducer.md,
 * "Validation".
 */
import type { ReducerRequest, RunEvent, RunRecord } from '../contracts/index.ts';
import { buildReducerRequest, toReducerEvent } from './reducer-request.ts';
import { type ReducerValidationResult, validateReducerResponse } from './reducer-validation.ts';
import { applyReducerAnswer, failRun, pauseRun, type TransitionResult } from './run-machine.ts';

/** How calling the reducer went (the engine's ReducerHost result, with the answer validated). */
export type ReducerOutcome =
  /** The event cannot be delivered (a bookkeeping kind in the inbox): an invariant broke. */
  | { kind: 'not_deliverable' }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'changed' }
  | { kind: 'threw'; code: string }
  | { kind: 'answered'; validation: ReducerValidationResult; artifact_hash: string };

/** The request for the event at seq `event.seq`, or null when that event is not reducer-visible. */
export function reducerRequestFor(record: RunRecord, state: unknown, event: RunEvent): ReducerRequest | null {
  const reducerEvent = toReducerEvent(event);
  return reducerEvent === null ? null : buildReducerRequest(record, state, reducerEvent);
}

/** Validates a raw reducer response against the request it answers. */
export function validateAnswer(request: ReducerRequest, raw: unknown): ReducerValidationResult {
  return validateReducerResponse(request, raw);
}

/**
 * The transition for the reducer's outcome on the inbox head of `record`, and the domain state
 * the commit must write (when the answer changed the state revision).
 */
export function applyReducerOutcome(
  record: RunRecord,
  outcome: ReducerOutcome,
  now: number,
): { transition: TransitionResult; state?: { rev: number; value: unknown } } {
  const seq = record.inbox[0];
  if (seq === undefined)
    return { transition: { ok: false, code: 'nothing_to_do', message: 'the inbox is empty' } };
  const ended = record.status === 'completed' || record.status === 'failed' || record.status === 'stopped';
  const empty = () =>
    applyReducerAnswer(
      record,
      { event_seq: seq, state_rev: record.state_rev, effects: [], projection: undefined, diagnostics: [] },
      now,
    );
  if (record.reducer === null) return { transition: empty() };
  const valid =
    outcome.kind === 'answered' && outcome.validation.ok && outcome.validation.response.refused === null
      ? outcome.validation.response
      : null;
  if (ended) {
    // After the end only checkpoints apply (docs/contracts/reducer.md, effects_after_terminal).
    if (valid === null || outcome.kind !== 'answered') return { transition: empty() };
    const transition = applyReducerAnswer(
      record,
      {
        event_seq: seq,
        state_rev: valid.state_rev,
        effects: valid.effects.filter((e) => e.kind === 'checkpoint'),
        projection: undefined,
        diagnostics: valid.diagnostics,
      },
      now,
    );
    return valid.state_rev !== record.state_rev
      ? { transition, state: { rev: valid.state_rev, value: valid.state } }
      : { transition };
  }
  switch (outcome.kind) {
    case 'not_deliverable':
      return { transition: failRun(record, 'invariant_violation:event_not_deliverable', now) };
    case 'unavailable':
      return { transition: pauseRun(record, 'reducer_unavailable', now) };
    case 'changed':
      return { transition: pauseRun(record, 'reducer_changed', now) };
    case 'threw':
      return { transition: failRun(record, `reducer_refused:${outcome.code}`, now) };
    case 'answered': {
      const v = outcome.validation;
      if (!v.ok) return { transition: failRun(record, `reducer_refused:${v.code}`, now) };
      if (v.response.refused !== null)
        return { transition: failRun(record, `reducer_refused:${v.response.refused.code}`, now) };
      const applied = applyReducerAnswer(
        record,
        {
          event_seq: seq,
          state_rev: v.response.state_rev,
          effects: v.response.effects,
          projection: v.response.projection,
          diagnostics: v.response.diagnostics,
          artifact_hash: outcome.artifact_hash,
        },
        now,
      );
      if (!applied.ok) return { transition: failRun(record, 'invariant_violation:reducer_answer', now) };
      return v.response.state_rev !== record.state_rev
        ? { transition: applied, state: { rev: v.response.state_rev, value: v.response.state } }
        : { transition: applied };
    }
  }
}
