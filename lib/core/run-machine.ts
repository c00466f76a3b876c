/**
 * The run state machine: pure transitions over the closed run record. Each transition returns
 * the next record plus the events it appends (seq assigned from `record.last_seq`), or a typed
 * rejection with the contract's code. No I/O and no clock: `now` (ms since the epoch) is a
 * parameter. The store bumps `version` once per commit; transitions never touch it.
 * docs/contracts/run-lifecycle.md, "Lifecycle", "Operations", "Controls", "Budgets", "Leases,
 * recovery and the sweeper".
 *
 * This is the index of lib/core/run-machine/, one file per section: draft (shared parts),
 * lifecycle, lease, reducer-answer, operations, requests, controls, delegation, client-driven.
 */

export {
  acquireClientLease,
  beginClientOperation,
  type ClientOperationSpec,
  type ClientRequestSpec,
  completeClientRun,
  expireClientLease,
  failClientRun,
  finishClientOperation,
  isClientDriven,
  openClientRequest,
  releaseClientLease,
  renewClientLease,
  takeClientSteers,
} from './run-machine/client-driven.ts';
export {
  beginCompaction,
  type CompactionResult,
  finishCompaction,
} from './run-machine/compaction.ts';
export {
  type ControlDecision,
  type ControlLimits,
  DEFAULT_MAX_QUEUED_STEERS,
  decideControl,
  type StoredControlAck,
  stopRun,
  unansweredCalls,
} from './run-machine/controls.ts';
export { childEnded, isDelegateMessage, isDelegation, settleOwed } from './run-machine/delegation.ts';
export {
  type DeliveryDecision,
  decideDelivery,
  EARLY_RESULT_TTL_MS,
  heldBodyDigest,
  RESULT_EXPIRY_MS,
  type ResumeKeyEntry,
} from './run-machine/deliveries.ts';
export {
  chain,
  hasWork,
  InvariantViolation,
  LEASE_TTL_MS,
  type Ok,
  operationGated,
  REDUCER_VISIBLE_KINDS,
  type Rejected,
  seal,
  type TransitionResult,
} from './run-machine/draft.ts';
export {
  acquireLease,
  type Fence,
  heldByDeadPredecessor,
  holdsLease,
  leaseNamedBy,
  leaseOwnerOf,
  postponeWake,
  releaseLease,
  renewLease,
  takeOver,
  takeOverPredecessor,
  type WorkerIncarnation,
} from './run-machine/lease.ts';
export { type CreateRunParams, createRun, failRun, pauseRun } from './run-machine/lifecycle.ts';
export { finishOperation, type OperationResult, startOperation } from './run-machine/operations.ts';
export { noteProviderCall, noteProviderFailure, withProviderCalls } from './run-machine/provider-calls.ts';
export { applyReducerAnswer, type ReducerAnswer } from './run-machine/reducer-answer.ts';
export {
  consumeSteer,
  type DeliveryMark,
  deliverResult,
  expireRequests,
  gateOperation,
} from './run-machine/requests.ts';
