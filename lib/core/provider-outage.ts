/**
 * Provider outages: a model turn whose provider stayed unavailable after every retry the model
 * host made (error class rate_limited, transient or timeout, still retryable) is not the
 * reducer's to judge under `on_provider_outage: pause` (the default): the run pauses
 * `provider_outage:<class>` and keeps the turn, which is dispatched again (attempt + 1) when the
 * run is resumed. Under `fail` the reducer receives the operation_failed, as for any failure.
 * docs/architecture.md, "The seams of a step" (the policy adapter) (retries are not invisible).
 */
import type { Operation, RunRecord } from '../contracts/index.ts';

/** The error classes of a provider that could not be reached or kept refusing for load. */
export const OUTAGE_ERROR_CLASSES: ReadonlySet<string> = new Set([
  'rate_limited',
  'transient',
  'timeout',
  // The turn's retries were used up before a takeover (lib/models/host.ts).
  'retries_exhausted',
]);

/** What a failed operation reported, as far as the outage rule reads it. */
export interface FailedTurn {
  error_class: string;
  retryable: boolean;
}

/**
 * Whether `failure` of the started operation `op` of `record` pauses the run as a provider
 * outage: a model turn, a retryable outage class, `on_provider_outage` pause, and a run that
 * is not being stopped (a stop wins).
 */
export function pausesForOutage(record: RunRecord, op: Operation, failure: FailedTurn): boolean {
  return (
    op.kind === 'model_turn' &&
    failure.retryable &&
    OUTAGE_ERROR_CLASSES.has(failure.error_class) &&
    record.on_provider_outage !== 'fail' &&
    record.status === 'running'
  );
}

/** The pause reason of an outage. */
export function outagePauseReason(errorClass: string): string {
  return `provider_outage:${errorClass}`;
}

/**
 * The operation kept for resume: not started, its next attempt, its retry budget whole again (a
 * resume is the owner's decision to try the provider anew; the calls made stay in usage).
 */
export function keptForRetry(op: Operation): Operation {
  const { provider_calls: _made, provider_failures: _failed, ...kept } = op;
  return { ...kept, started_at: null, attempt: op.attempt + 1 };
}
