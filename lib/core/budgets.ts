/**
 * Budget checks, made each time an operation begins. Seed: agent-runs, "Budgets".
 * Order (fixed, first exceeded wins): max_wall_ms, max_operations, max_turns (model turns),
 * max_model_calls (model turns), max_total_tokens, max_consecutive_op_failures.
 * The delegation limits (max_children, max_live_children, max_depth) are checked when a child
 * run is created, not here.
 */
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
  ];
  for (const [which, limit, used, applies] of checks) {
    if (applies && limit !== undefined && used >= limit) return { which, limit, used };
  }
  return null;
}
