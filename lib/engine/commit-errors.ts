/**
 * Why a commit of the run store was refused, with one documented reaction per reason. Thrown by
 * every RunStore adapter (DynamoDB, memory); the engine and the HTTP layer react to these (and to
 * StoreUnavailable, errors.ts, for throttling and an unreachable store), never to an adapter's
 * own errors. DESIGN section 5 ("Failure reasons are classified").
 */
import type { RunRecord } from '../contracts/index.ts';
import { EngineModuleError } from './module-error.ts';

/** Why a commit was refused, each with one reaction (see {@link CommitRejected}). */
export type CommitFailure =
  /** The run record's lease owner or epoch is not the committer's: stop, write nothing more. */
  | 'fenced_out'
  /** The run record changed since it was read: re-read and recompute. */
  | 'stale_version'
  /** Another transaction touched the same items: retried with backoff here; thrown when exhausted. */
  | 'transaction_conflict'
  /** The subject already has a live run (create only). */
  | 'subject_taken'
  /** The create key was already used (create only). */
  | 'create_key_taken'
  /** Another create of the same principal took the quota slot or window count first (create only): re-read. */
  | 'quota_moved'
  /** The control id already has an ack (a concurrent duplicate): re-read the ack. */
  | 'control_ack_exists'
  /**
   * A wait on a resume key for which a result arrived first (held by the key): read it and
   * deliver it in the same commit as the wait.
   */
  | 'early_result_held'
  /** The early result a commit applied is no longer held (it expired): recompute without it. */
  | 'early_result_gone'
  /** A bug: the request itself is invalid (too many items, a bad expression). Fail loudly. */
  | 'validation';

/**
 * A refused commit. Reactions: fenced_out → the worker stops; stale_version → re-read the run
 * and recompute; transaction_conflict → already retried with backoff, the caller treats it as
 * retryable (throttling that outlasts the retries is StoreUnavailable instead); subject_taken / create_key_taken → return the existing run;
 * control_ack_exists → answer from the stored ack; validation → a bug, surfaced as is.
 * `current` is the run record as DynamoDB returned it (ReturnValuesOnConditionCheckFailure).
 */
export class CommitRejected extends EngineModuleError {
  override name = 'CommitRejected';
  /** Why the commit was refused: the reaction to take (see above). */
  readonly code: CommitFailure;
  /** Whether the same commit may go through later: a conflict that outlasted the adapter's retries. */
  readonly retryable: boolean;
  readonly current: RunRecord | null;
  constructor(
    code: CommitFailure,
    message: string,
    current: RunRecord | null = null,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.code = code;
    this.retryable = code === 'transaction_conflict';
    this.current = current;
  }
}

/** A commit too large for one transaction: it is refused whole, never truncated. */
export class CommitTooLarge extends EngineModuleError {
  override name = 'CommitTooLarge';
  readonly code = 'commit_too_large';
  readonly retryable = false;
}
