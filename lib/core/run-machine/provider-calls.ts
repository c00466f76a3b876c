/**
 * Provider requests of a model turn, counted durably before they are made: a dispatch's first
 * request stands on the commit that started it (a takeover of the lost dispatch counts it, see
 * lease.ts); before each retry the worker commits `noteProviderCall` (fenced), so that the run's
 * usage and the operation's `provider_calls` already hold it should the worker die in it. A
 * takeover that dispatches the turn again counts the lost request in `provider_calls`, and
 * the commit that ends the turn adds only the requests not counted yet. A retryable failure
 * answer is noted as it comes (`noteProviderFailure`, the operation's `provider_failures`): that
 * is the retry budget a takeover continues, so a request lost with its worker (whose answer
 * nobody saw) counts in usage but uses no retry. docs/contracts/run-lifecycle.md, "Budgets"
 * (usage counts every provider call, retries included).
 */
import type { Operation, RunRecord } from '../../contracts/index.ts';
import { type Draft, finish, reject, type TransitionResult, withProviderCalls } from './draft.ts';
import { type Fence, holdsLease } from './lease.ts';

export { withProviderCalls };

/**
 * One provider request of the in-flight model turn is about to be made: usage.model_calls + 1
 * (model_retries + 1 past the turn's first request) and the operation's `provider_calls` + 1, in a
 * commit of the lease holder. Rejected `lease_lost` for another fence or an expired lease,
 * `no_operation` when no model turn is in flight.
 */
export function noteProviderCall(record: RunRecord, fence: Fence, now: number): TransitionResult {
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  const op = record.operation;
  if (op === null || op.started_at === null || op.kind !== 'model_turn')
    return reject('no_operation', 'no model turn in flight');
  const before = op.provider_calls ?? 0;
  const operation: Operation = { ...op, provider_calls: before + 1 };
  const usage = withProviderCalls(record.usage, before, 1);
  return finish({ ...record, operation, usage, updated_at: now } as Draft, []);
}

/**
 * A provider request of the in-flight model turn answered a retryable failure: the operation's
 * `provider_failures` + 1, in a commit of the lease holder, so that a takeover continues the
 * turn's retry budget from what failed (not from requests lost with a dead worker, whose answer
 * nobody saw). Rejected as noteProviderCall is.
 */
export function noteProviderFailure(record: RunRecord, fence: Fence, now: number): TransitionResult {
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  const op = record.operation;
  if (op === null || op.started_at === null || op.kind !== 'model_turn')
    return reject('no_operation', 'no model turn in flight');
  const operation: Operation = { ...op, provider_failures: (op.provider_failures ?? 0) + 1 };
  return finish({ ...record, operation, updated_at: now } as Draft, []);
}
