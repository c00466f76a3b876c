/**
 * Why a planned commit was refused, classified from the role of each write that failed (the
 * plan's writes are data, planned-write.ts), one documented reaction per reason
 * (engine/ports.ts). Shared by both RunStore adapters. docs/architecture.md, "The commit".
 */
import type { RunRecord } from '../contracts/index.ts';
import { leaseNamedBy } from '../core/run-machine.ts';
import { type Commit, CommitRejected, StoreUnavailable } from '../engine/ports.ts';
import type { CommitPlan } from './commit-plan.ts';

/**
 * Why a planned commit was refused, from the code of each write (DynamoDB's CancellationReasons
 * codes: 'None', 'ConditionalCheckFailed', 'TransactionConflict', 'ThrottlingError',
 * 'ValidationError', ...), aligned with `plan.writes`. `current` is the run record as it was
 * when the record's condition failed (ALL_OLD), or null. Throttling is StoreUnavailable (retryable).
 */
export function classifyRefusal(
  commit: Commit,
  plan: CommitPlan,
  codes: string[],
  messages: string[],
  current: RunRecord | null,
  cause?: unknown,
): CommitRejected | StoreUnavailable {
  const options = cause === undefined ? undefined : { cause };
  if (codes.includes('ThrottlingError') || codes.includes('ProvisionedThroughputExceeded')) {
    return new StoreUnavailable(`DynamoDB throttled the commit: ${codes.join(',')}`, options);
  }
  if (codes.includes('TransactionConflict')) {
    return new CommitRejected('transaction_conflict', 'commit met a concurrent transaction', null, options);
  }
  if (codes.includes('ValidationError')) {
    return new CommitRejected('validation', `invalid transaction: ${messages.join('; ')}`, null, options);
  }
  const failed = plan.writes.filter((_, i) => codes[i] === 'ConditionalCheckFailed').map((w) => w.role);
  if (commit.expectedVersion === null) {
    if (failed.includes('subject'))
      return new CommitRejected('subject_taken', 'the subject already has a live run', null, options);
    if (failed.includes('create_key'))
      return new CommitRejected('create_key_taken', 'the create key was already used', null, options);
    if (failed.includes('quota_slot') || failed.includes('quota_window'))
      return new CommitRejected(
        'quota_moved',
        'another create of the principal took the quota first',
        null,
        options,
      );
    if (failed.includes('record'))
      return new CommitRejected('stale_version', 'the run already exists', null, options);
  } else if (failed.includes('record')) {
    if (commit.fence !== undefined && current !== null && !leaseNamedBy(current, commit.fence))
      return new CommitRejected('fenced_out', 'the lease is no longer ours', current, options);
    return new CommitRejected('stale_version', 'the run changed since it was read', current, options);
  }
  if (failed.includes('resume_key'))
    return new CommitRejected(
      'resume_key_held',
      'the resume key is held: by a result that arrived first, or by another principal',
      null,
      options,
    );
  if (failed.includes('resume_key_release'))
    return new CommitRejected('early_result_gone', 'the early result is no longer held', null, options);
  if (failed.includes('control_ack'))
    return new CommitRejected('control_ack_exists', 'the control id already has an ack', null, options);
  return new CommitRejected('validation', `commit refused: ${codes.join(',')}`, null, options);
}
