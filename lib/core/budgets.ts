/**
 * Budget checks, made each time an operation begins. Seed: agent-runs, "Budgets".
 * Order (fixed, first exceeded wins): max_wall_ms, max_operations, max_turns (model turns),
 * max_model_calls (model turns), max_total_tokens, max_consecutive_op_failures, then for a
 * delegation (a call of DELEGATE_TOOL, which starts a child run): max_children (children started),
 * max_live_children (children not yet handed back), max_depth (a child of a run at depth d has
 * depth d + 1, allowed while d + 1 <= max_depth; the root has depth 0). A delegation dispatched
 * again after a takeover (attempt > 1) may have created its child already, so only max_depth
 * applies to it.
 */
import { DELEGATE_TOOL } from '../contracts/delegation.ts';
import type { BudgetLimit, Operation, RunRecord } from '../contracts/index.ts';

export interface BudgetExceeded {
  which: BudgetLimit;
  limit: number;
  used: number;
}

/** Returns the first exceeded limit for starting `op` at `now`, or null when all allow it. */
export function checkBudgets(record: RunRecord, op: Operation, now: number): BudgetExceeded | null {
  const b = record.budgets;
  const u = record.usage;
  const isModel = op.kind === 'model_turn';
  const isDelegation = op.effect.kind === 'call_tool' && op.effect.tool === DELEGATE_TOOL;
  const first = isDelegation && op.attempt === 1;
  const checks: [BudgetLimit, number | undefined, number, boolean][] = [
    ['max_wall_ms', b.max_wall_ms, now - record.created_at, true],
    ['max_operations', b.max_operations, u.operations, true],
    ['max_turns', b.max_turns, u.turns, isModel],
    ['max_model_calls', b.max_model_calls, u.model_calls, isModel],
    ['max_total_tokens', b.max_total_tokens, u.input_tokens + u.output_tokens, true],
    [
      'max_consecutive_op_failures',
      b.max_consecutive_op_failures,
      record.counters.consecutive_op_failures,
      true,
    ],
    ['max_children', b.max_children, record.counters.children, first],
    ['max_live_children', b.max_live_children, record.live_children.length, first],
    ['max_depth', b.max_depth, record.depth, isDelegation],
  ];
  for (const [which, limit, used, applies] of checks) {
    if (applies && limit !== undefined && used >= limit) return { which, limit, used };
  }
  return null;
}
