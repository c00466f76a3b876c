/**
 * The loop scheduler's guard order (seed deterministic-seams): cancelled, invariant violation,
 * success verified, approval required, unrecoverable failure, no progress, budget exhausted,
 * then continue. The step loop asks `nextGuard` before each move; the first guard that holds
 * decides, so a successful-looking observation never overrides a cancellation.
 */
import type { RunRecord } from '../contracts/index.ts';
import { isTerminalStatus } from '../contracts/index.ts';
import { checkBudgets } from './budgets.ts';
import { operationGated } from './run-machine.ts';

export const GUARD_ORDER = [
  'cancelled',
  'invariant_violation',
  'success_verified',
  'approval_required',
  'unrecoverable_failure',
  'no_progress',
  'budget_exhausted',
  'continue',
] as const;
export type Guard = (typeof GUARD_ORDER)[number];

export interface GuardFacts {
  record: RunRecord;
  now: number;
  /** Whether the record still satisfies the closed schema and the worker's fence. */
  invariantsHold: boolean;
}

/** The first guard that holds for the run, in GUARD_ORDER. */
export function nextGuard({ record, now, invariantsHold }: GuardFacts): Guard {
  if (record.status === 'cancelling' || record.status === 'stopped') return 'cancelled';
  if (!invariantsHold) return 'invariant_violation';
  if (record.status === 'completed') return 'success_verified';
  if (operationGated(record) || record.open_requests.some((r) => r.kind === 'approval'))
    return 'approval_required';
  if (record.status === 'failed' || isTerminalStatus(record.status)) return 'unrecoverable_failure';
  const nothingToDo =
    record.inbox.length === 0 && record.operation === null && record.queued_steers.length === 0;
  if (nothingToDo) return 'no_progress';
  const op = record.operation;
  if (op !== null && op.started_at === null && checkBudgets(record, op, now) !== null)
    return 'budget_exhausted';
  return 'continue';
}
