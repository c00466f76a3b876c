/**
 * The step loop's scheduler: before each move the worker asks `nextMove`, which evaluates the
 * guards in a stable order (docs/architecture.md, "The step": cancelled, invariant violation,
 * success verified, approval required, unrecoverable failure, no progress, budget exhausted,
 * then continue; `paused`, an operator's or the reducer host's pause, sits right after
 * cancelled) and returns the first that holds with the move it allows. The first guard decides,
 * so a successful-looking observation never overrides a cancellation. While the run lives, an
 * undelivered event always goes to the reducer first.
 */
import type { RunRecord } from '../contracts/index.ts';
import { checkBudgets } from './budgets.ts';
import { operationGated } from './run-machine.ts';

export const GUARD_ORDER = [
  'cancelled',
  'paused',
  'invariant_violation',
  'success_verified',
  'approval_required',
  'unrecoverable_failure',
  'no_progress',
  'budget_exhausted',
  'continue',
] as const;
export type Guard = (typeof GUARD_ORDER)[number];

/**
 * What the worker does next: stop looping (`end`), let the lease go and rest (`rest`), deliver
 * the inbox head to the reducer, consume the queued steers, or start the pending operation
 * (startOperation applies the budget rule: pause or fail when a budget is exhausted).
 */
export type Move = 'end' | 'rest' | 'deliver_event' | 'consume_steers' | 'start_operation';

/** The first guard that holds for `record`. `fenceHeld`: whether the worker still holds the lease. */
export function guardOf(record: RunRecord, now: number, fenceHeld: boolean): Guard {
  if (record.status === 'cancelling' || record.status === 'stopped') return 'cancelled';
  if (record.status === 'paused') return 'paused';
  if (!fenceHeld) return 'invariant_violation';
  if (record.status === 'completed') return 'success_verified';
  if (operationGated(record) || record.open_requests.some((r) => r.kind === 'approval'))
    return 'approval_required';
  if (record.status === 'failed') return 'unrecoverable_failure';
  const op = record.operation;
  if (record.inbox.length === 0 && op === null && record.queued_steers.length === 0) return 'no_progress';
  if (op !== null && op.started_at === null && checkBudgets(record, op, now) !== null)
    return 'budget_exhausted';
  return 'continue';
}

/**
 * The guard that holds and the move it allows. docs/architecture.md, "The seams of a step" ("The
 * loop scheduler").
 */
export function nextMove(record: RunRecord, now: number, fenceHeld: boolean): { guard: Guard; move: Move } {
  const guard = guardOf(record, now, fenceHeld);
  switch (guard) {
    case 'cancelled':
    case 'paused':
    case 'invariant_violation':
    case 'success_verified':
    case 'unrecoverable_failure':
      return { guard, move: 'end' };
    default:
      if (record.inbox.length > 0) return { guard, move: 'deliver_event' };
  }
  const op = record.operation;
  const pending = op !== null && op.started_at === null;
  switch (guard) {
    case 'approval_required':
      // Held by its approval: a steer is consumed now (the reducer may withdraw the call).
      return { guard, move: record.queued_steers.length > 0 ? 'consume_steers' : 'rest' };
    case 'no_progress':
      return { guard, move: 'rest' };
    case 'budget_exhausted':
      return { guard, move: 'start_operation' };
    default:
      // Every boundary between operations consumes the queued steers: the reducer sees them
      // (user_input) before the pending operation starts, and may re-ask its model turn.
      if (record.queued_steers.length > 0 && (op === null || pending))
        return { guard, move: 'consume_steers' };
      if (pending) return { guard, move: 'start_operation' };
      return { guard, move: 'rest' };
  }
}

export { type OperationEnd, operationMustEnd } from './operation-end.ts';
