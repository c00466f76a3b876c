/**
 * Budget checks, made each time an operation begins. docs/contracts/run-lifecycle.md, "Budgets".
 * Order (fixed, first exceeded wins): max_wall_ms, max_operations, max_turns (model turns),
 * max_model_calls (model turns), max_total_tokens, max_consecutive_op_failures, then for a
 * delegation (a call of DELEGATE_TOOL, which starts a child run): max_children (children started),
 * max_live_children (children not yet handed back), max_depth (a child of a run at depth d has
 * depth d + 1, allowed while d + 1 <= max_depth; the root has depth 0). A delegation dispatched
 * again after a takeover (attempt > 1) may have created its child already, so only max_depth
 * applies to it.
 */
import { ownUsed, treeUsed } from '../contracts/budget-use.ts';
import { DELEGATE_TOOL } from '../contracts/delegation.ts';
import {
  type BudgetLimit,
  type Budgets,
  type Operation,
  type RunRecord,
  TREE_LIMITS,
  type TreeAmounts,
  type TreeLimit,
} from '../contracts/index.ts';

export interface BudgetExceeded {
  which: BudgetLimit;
  limit: number;
  used: number;
}

/** Returns the first exceeded limit for starting `op` at `now`, or null when all allow it. */
export function checkBudgets(record: RunRecord, op: Operation, now: number): BudgetExceeded | null {
  const b = record.budgets;
  const isModel = op.kind === 'model_turn';
  const isDelegation = op.effect.kind === 'call_tool' && op.effect.tool === DELEGATE_TOOL;
  const first = isDelegation && op.attempt === 1;
  const checks: [BudgetLimit, number | undefined, number, boolean][] = [
    ['max_wall_ms', b.max_wall_ms, now - record.created_at, true],
    ['max_operations', b.max_operations, treeUsed(record, 'max_operations'), true],
    ['max_turns', b.max_turns, treeUsed(record, 'max_turns'), isModel],
    ['max_model_calls', b.max_model_calls, treeUsed(record, 'max_model_calls'), isModel],
    ['max_total_tokens', b.max_total_tokens, treeUsed(record, 'max_total_tokens'), true],
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

export { ownUsed, treeUsed };

/** What a run used with its descendants per tree limit (own + charged): its charge to its parent. */
export function treeTotals(record: RunRecord): TreeAmounts {
  const totals: TreeAmounts = {};
  for (const which of TREE_LIMITS)
    totals[which] = ownUsed(record.usage, which) + (record.tree_usage[which] ?? 0);
  return totals;
}

/**
 * The share of what a parent has left of a tree limit that a child gets when the delegation names
 * no budget for it: half (rounded down), so that a parent can start several children and keep
 * some for itself.
 */
export const DEFAULT_CHILD_SHARE = 0.5;

/** A child's tree budgets: its limits (each also reserved from the parent), or the limit it cannot get. */
export type ChildReservation =
  | { ok: true; budgets: Budgets; reserved: TreeAmounts }
  | { ok: false; which: TreeLimit | 'max_wall_ms'; requested: number; remaining: number };

/**
 * Reserves a child's limits from `parent`'s remaining tree budget while the parent's delegate
 * operation is in flight (that operation counts as one of the parent's operations). For each tree
 * limit the parent has: the child's own limit is the one `requested` (refused when over what is
 * left) or {@link DEFAULT_CHILD_SHARE} of what is left (refused when that is under 1), and it is
 * reserved. A limit the parent does not have is the child's own (`requested`), not reserved.
 * `max_wall_ms` is capped by the parent's remaining wall time (a ceiling, not reserved). A refusal
 * is the delegation's `child_budget_exceeded:<which>`. docs/contracts/run-lifecycle.md, "Budgets".
 */
export function reserveChildBudgets(parent: RunRecord, requested: Budgets, now: number): ChildReservation {
  const budgets: Budgets = { ...requested };
  const reserved: TreeAmounts = {};
  for (const which of TREE_LIMITS) {
    const limit = parent.budgets[which];
    if (limit === undefined) continue;
    const inFlight = which === 'max_operations' && parent.operation?.started_at != null ? 1 : 0;
    const remaining = Math.max(0, limit - treeUsed(parent, which) - inFlight);
    const asked = requested[which];
    const share = asked ?? Math.floor(remaining * DEFAULT_CHILD_SHARE);
    if (share > remaining || share < 1) return { ok: false, which, requested: share, remaining };
    budgets[which] = share;
    reserved[which] = share;
  }
  const wall = parent.budgets.max_wall_ms;
  if (wall !== undefined) {
    const remaining = parent.created_at + wall - now;
    if (remaining < 1)
      return { ok: false, which: 'max_wall_ms', requested: requested.max_wall_ms ?? 0, remaining: 0 };
    budgets.max_wall_ms = Math.min(remaining, requested.max_wall_ms ?? remaining);
  }
  return { ok: true, budgets, reserved };
}

/** A budget_increase that would raise a limit past Number.MAX_SAFE_INTEGER. */
export interface BudgetOverflow {
  which: BudgetLimit;
  /** The run's limit now (0 when unlimited). */
  limit: number;
  increase: number;
}

/**
 * The first limit of `increase` whose sum with `budgets` (an absent limit counts as 0) is not a
 * safe integer, or null when every sum is one. A resume that raises a limit adds the two, and
 * a run record's limits are safe integers: such a resume is refused as invalid before it is
 * decided.
 */
export function budgetIncreaseOverflow(
  budgets: Budgets,
  increase: Partial<Record<BudgetLimit, number>>,
): BudgetOverflow | null {
  for (const [key, inc] of Object.entries(increase)) {
    if (typeof inc !== 'number') continue;
    const which = key as BudgetLimit;
    const limit = budgets[which] ?? 0;
    if (!Number.isSafeInteger(limit + inc)) return { which, limit, increase: inc };
  }
  return null;
}
