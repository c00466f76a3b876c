/**
 * Usage against budgets, one bar per limit, in the order core checks them (lib/core/budgets.ts):
 * what counts as used for each limit is what the check compares. Pure: `now` is a parameter.
 * docs/contracts/run-lifecycle.md, "Budgets".
 */
import { budgetUsed } from '../../../lib/client/budget-use.ts';
import { reasonText } from './words.ts';
import { BUDGET_LIMITS, type BudgetLimit, type PublicRunRecord } from '../../../lib/contracts/index.ts';

export interface BudgetBar {
  limit: BudgetLimit;
  label: string;
  /** What the limit counts, in one line (the label's tooltip). */
  hint: string;
  used: number;
  /** Absent: unlimited. */
  max?: number;
  unit: 'count' | 'tokens' | 'ms';
}

/**
 * What usage.model_calls counts: provider calls, retries included, and, for a model turn lost in
 * a takeover, the one call its lost worker or client may have made (lib/core/run-machine/lease.ts).
 */
export const MODEL_CALLS_HINT =
  'A model call is one request to the model provider, retries included, so calls can outnumber ' +
  'turns (a turn is one answer of the model). It includes a call a lost worker or client may ' +
  'have made: a model turn lost in a takeover counts as one call, made or not.';

/**
 * MODEL_CALLS_HINT on a client-driven run (no reducer): its client reports turns, not provider
 * requests, so each reported turn counts one call (lib/core/run-machine/operations.ts usageAfter).
 */
export function modelCallsHint(hasReducer: boolean): string {
  return hasReducer
    ? MODEL_CALLS_HINT
    : `${MODEL_CALLS_HINT} On this client-driven run the client reports model turns, not requests to the provider, so each turn it reports counts as one model call.`;
}

/** What usage's turn count counts: answers of the model, not requests to its provider. */
export const MODEL_TURNS_HINT =
  'A model turn is one answer of the model, child runs included; one turn can take several model ' +
  'calls (requests to the provider, retries included).';

/** What the wall time counts: all the time since the run was created, waits for people included. */
export const WALL_TIME_HINT =
  'Time since the run was created, time spent waiting for people (approvals, answers) included.';

const LABELS: Record<BudgetLimit, [string, BudgetBar['unit'], string]> = {
  max_wall_ms: ['wall time', 'ms', WALL_TIME_HINT],
  max_operations: [
    'operations ended',
    'count',
    'Model turns and tool calls that have ended (finished, failed, or lost with their worker or ' +
      'client), child runs included. One still in flight is counted when it ends; a tool call ' +
      'that parks its work ends when its tool answers, at once, before its result arrives.',
  ],
  max_turns: ['model turns', 'count', MODEL_TURNS_HINT],
  max_model_calls: ['model calls', 'count', MODEL_CALLS_HINT],
  max_total_tokens: ['tokens (in + out)', 'tokens', 'Tokens sent to and received from the model.'],
  max_consecutive_op_failures: [
    'failed operations in a row',
    'count',
    'Operations (model turns or tool calls) that failed one after another; a success starts it again from 0.',
  ],
  max_children: ['child runs started', 'count', 'Runs this run handed work to (delegated), in all.'],
  max_live_children: ['child runs still going', 'count', 'Child runs started and not yet ended.'],
  max_depth: [
    'delegation depth',
    'count',
    'How many delegations separate this run from the run a person started (0: this is that run).',
  ],
};

/** Every limit, with its budget when one is set: bounded ones first (they are what can pause the run). */
export function budgetBars(record: PublicRunRecord, now: number): BudgetBar[] {
  const bars = BUDGET_LIMITS.map((limit): BudgetBar => {
    const [label, unit, hint] = LABELS[limit];
    const max = record.budgets[limit];
    const used = budgetUsed(record, limit, now);
    return max === undefined ? { limit, label, hint, used, unit } : { limit, label, hint, used, max, unit };
  });
  return [...bars.filter((b) => b.max !== undefined), ...bars.filter((b) => b.max === undefined)];
}

/** The budget limit a `budget_exceeded:<which>` pause names, or null. */
export function budgetPauseLimit(record: PublicRunRecord): BudgetLimit | null {
  if (record.status !== 'paused') return null;
  const match = /^budget_exceeded:(\w+)$/.exec(record.pause_reason);
  const which = match?.[1];
  return which !== undefined && (BUDGET_LIMITS as readonly string[]).includes(which)
    ? (which as BudgetLimit)
    : null;
}

/** A value in the bar's unit, for people: `12.3 s`, `1,234 tokens`, `3`. */
export function formatAmount(value: number, unit: BudgetBar['unit']): string {
  if (unit === 'ms')
    return value >= 60_000 ? `${(value / 60_000).toFixed(1)} min` : `${(value / 1000).toFixed(1)} s`;
  const n = value.toLocaleString('en-US');
  return unit === 'tokens' ? `${n} tokens` : n;
}

/** US dollars for people: `$0`, `$0.00042` (two significant digits under a cent), `$1.25`. */
export function formatUsd(value: number): string {
  if (value === 0) return '$0';
  return value < 0.01 ? `$${value.toPrecision(2)}` : `$${value.toFixed(2)}`;
}

/**
 * Why a paused run is paused, for people: `the max turns budget is used up`, `the model
 * provider is unavailable`, else the reason as given (`_` read as spaces). Never the status it
 * was paused from (`queued` says nothing to the reader).
 */
export function pauseText(record: PublicRunRecord): string {
  if (record.status !== 'paused') return '';
  const budget = budgetPauseLimit(record);
  if (budget !== null) return `the ${budget.replaceAll('_', ' ')} budget is used up`;
  if (record.pause_reason === 'provider_outage') return 'the model provider is unavailable';
  return reasonText(record.pause_reason);
}

/**
 * The paused line (status detail, resume form): `paused: the max turns budget is used up`, or
 * the reason alone when it already says so (`paused by a person (a pause control)`).
 */
export function pausedLine(record: PublicRunRecord): string {
  const why = pauseText(record);
  return why.startsWith('paused') ? why : `paused: ${why}`;
}
