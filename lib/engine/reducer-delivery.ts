/**
 * Delivering the inbox head to the reducer: build the raisin.agent-run.reducer/1 request, call
 * the reducer host under the deterministic policy, validate the answer, and let core turn it
 * into the run's next transition. One routine for a running run (the step worker) and an ended
 * one (its final events, e.g. `stopped`). docs/contracts/reducer.md, "Request", "Validation".
 */
import type { RunEvent, RunRecord } from '../contracts/index.ts';
import {
  applyReducerOutcome,
  type ReducerOutcome,
  reducerRequestFor,
  validateAnswer,
} from '../core/reducer-outcome.ts';
import type { TransitionResult } from '../core/run-machine.ts';
import type { EngineDeps } from './deps.ts';

/** Where the delivery reads the event and the reducer's state (a worker's caches, or the store). */
export interface DeliveryReads {
  /** The persisted event at `seq`; null when it cannot be found. */
  event(seq: number): Promise<RunEvent | null>;
  /** The domain state of revision `rev` of the record. */
  state(rev: number): Promise<unknown>;
}

/**
 * Calls the reducer for the inbox head of `record` and returns its outcome (validated), for
 * core's applyReducerOutcome. `faultPoint`: offer the crash point `after_reducer_answer` (the
 * step worker does; the delivery after the end does not).
 */
export async function askReducer(
  deps: EngineDeps,
  record: RunRecord,
  reads: DeliveryReads,
  options: { faultPoint: boolean },
): Promise<ReducerOutcome> {
  const seq = record.inbox[0];
  const binding = record.reducer;
  if (seq === undefined || binding === null) return { kind: 'not_deliverable' };
  const event = await reads.event(seq);
  const request =
    event === null ? null : reducerRequestFor(record, await reads.state(record.state_rev), event);
  if (request === null) return { kind: 'not_deliverable' };
  const res = await deps.reducers.reduce(binding, request);
  if (options.faultPoint) await deps.faults('after_reducer_answer', record.run_id);
  switch (res.kind) {
    case 'unavailable':
      deps.log({ level: 'warn', message: 'reducer unavailable', run_id: record.run_id, reason: res.reason });
      return res;
    case 'changed':
      return { kind: 'changed' };
    case 'threw':
      return { kind: 'threw', code: res.code };
    case 'answered': {
      const validation = validateAnswer(request, res.response);
      if (!validation.ok)
        deps.log({
          level: 'warn',
          message: 'reducer response refused',
          run_id: record.run_id,
          code: validation.code,
          detail: validation.message,
        });
      return { kind: 'answered', validation, artifact_hash: res.artifact_hash };
    }
  }
}

/**
 * The transition for the reducer's answer to the inbox head of `record` (plus the domain state
 * the commit must write): askReducer, then core's applyReducerOutcome.
 */
export async function deliverInboxHead(
  deps: EngineDeps,
  record: RunRecord,
  reads: DeliveryReads,
  options: { faultPoint: boolean },
): Promise<{ transition: TransitionResult; state?: { rev: number; value: unknown } }> {
  const outcome = await askReducer(deps, record, reads, options);
  return applyReducerOutcome(record, outcome, deps.clock.now());
}
