/** What a run has used of each budget limit, for the CLI's waiting hints and the console's bars. */
import { type BudgetLimit, isTerminalStatus, type PublicRunRecord, treeUsed } from '../contracts/index.ts';

/**
 * The amount `record` has used of budget `limit` at `now` (ms epoch), as core's budget check
 * counts it (lib/core/budgets.ts): the tree limits (operations, turns, model calls, tokens in +
 * out) by `treeUsed`, with the run's children; consecutive failures, children started, live
 * children, depth; wall time in ms since creation (stopping at `finished_at` once the run
 * ended). docs/contracts/run-lifecycle.md, "Budgets".
 */
export function budgetUsed(record: PublicRunRecord, limit: BudgetLimit, now: number): number {
  switch (limit) {
    case 'max_wall_ms': {
      const end = isTerminalStatus(record.status) && 'finished_at' in record ? record.finished_at : now;
      return Math.max(0, end - record.created_at);
    }
    case 'max_operations':
    case 'max_turns':
    case 'max_model_calls':
    case 'max_total_tokens':
      // Tree limits: the run's own usage, its ended children's charges and live reservations.
      return treeUsed(record, limit);
    case 'max_consecutive_op_failures':
      return record.counters.consecutive_op_failures;
    case 'max_children':
      return record.counters.children;
    case 'max_live_children':
      return record.live_children.length;
    case 'max_depth':
      return record.depth;
  }
}
