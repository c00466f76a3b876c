/**
 * Engine errors with stable codes. Each is terminal (the request is wrong: fix it) or
 * retryable (the infrastructure failed: try again). A rejected control is not an error: it is
 * an ack. docs/architecture.md, "Conventions".
 */
import type { EngineErrorCode } from '../contracts/error-codes.ts';
import { EngineModuleError } from './module-error.ts';

/** The codes an EngineError carries: the catalogue's (lib/contracts/error-codes.ts) with source `engine`. */
export type { EngineErrorCode };

export class EngineError extends EngineModuleError {
  override name = 'EngineError';
  readonly code: EngineErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;
  constructor(
    code: EngineErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions & { retryable?: boolean },
  ) {
    super(message, options);
    this.code = code;
    this.details = details;
    this.retryable = options?.retryable ?? false;
  }
}

/**
 * DynamoDB, S3 or SQS could not answer now: unreachable (a network error, a timeout), throttled
 * (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded, a transaction
 * cancelled for throttling after the adapter's own retries), or failing (InternalServerError,
 * ServiceUnavailable, any 5xx). Retryable: the same request may succeed later. Raised by the
 * adapters (lib/store, lib/blobs, lib/queue) so that nothing above them inspects an SDK's error
 * names; the cause is the SDK's error. The API answers 503 store_unavailable with Retry-After.
 */
export class StoreUnavailable extends EngineError {
  override name = 'StoreUnavailable';
  constructor(message: string, options?: ErrorOptions) {
    super('store_unavailable', message, {}, { ...options, retryable: true });
  }
}

/** The step worker lost its lease (fenced out): it stops and writes nothing more. */
export class LeaseLost extends EngineModuleError {
  override name = 'LeaseLost';
  readonly code = 'lease_lost';
  /** The worker stops; the step is another worker's now. */
  readonly retryable = false;
}
