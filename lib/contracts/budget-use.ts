/**
 * What counts as used against a tree limit, shared by core's budget check (lib/core/budgets.ts)
 * and the client's waiting hints and console bars (which cannot import core). Pure reads of the
 * run record. docs/contracts/run-lifecycle.md, "Budgets" (children reserve against the parent).
 */
import type { RunRecord, TreeLimit, Usage } from './run.ts';

/** A run's own usage of one tree limit. */
export function ownUsed(usage: Usage, which: TreeLimit): number {
  switch (which) {
    case 'max_turns':
      return usage.turns;
    case 'max_operations':
      return usage.operations;
    case 'max_model_calls':
      return usage.model_calls;
    case 'max_total_tokens':
      return usage.input_tokens + usage.output_tokens;
  }
}

/**
 * What counts against a tree limit of `record`: its own usage, the usage its ended children
 * charged back (tree_usage), and what its live children hold reserved.
 * docs/contracts/run-lifecycle.md, "Budgets" (children reserve against the parent).
 */
export function treeUsed(record: RunRecord, which: TreeLimit): number {
  let reserved = 0;
  for (const terms of Object.values(record.child_terms)) reserved += terms.reserved[which] ?? 0;
  return ownUsed(record.usage, which) + (record.tree_usage[which] ?? 0) + reserved;
}
