/**
 * The client's one error type: every failed call throws an ApiError carrying the API's stable
 * `code` (one of the catalogue's, lib/contracts/error-codes.ts; docs/reference/errors.md), the
 * HTTP `status` and the `details` the API sent, or one of the client's own codes
 * (ClientErrorCode). docs/architecture.md, "Conventions".
 */
// A type only: the CLI loads this file for --help, and the catalogue is not needed for that.
import type { ErrorCode } from '../contracts/error-codes.ts';

/**
 * The codes the client itself gives: `unreachable` (status 0: no answer at all),
 * `invalid_response` (the answer does not have the documented shape), `http_<status>` (an error
 * answer without the API's error body, or with a code this client does not know: then
 * `details.code`), `unsupported` (no WebSocket on this platform), and the live socket's
 * `token_expired` and `invalid_message`.
 */
export type ClientErrorCode =
  | 'unreachable'
  | 'invalid_response'
  | 'unsupported'
  | 'token_expired'
  | 'invalid_message'
  | `http_${number}`;

/** Every code an ApiError carries. */
export type ApiErrorCode = ErrorCode | ClientErrorCode;

/** How every call of the client fails: the API's (or the client's own) stable `code`, the HTTP `status`, the `details`. */
export class ApiError extends Error {
  override name = 'ApiError';
  /** The API's code (`run_not_found`, `validation_failed`, ...) or one of the client's own. */
  readonly code: ApiErrorCode;
  /** HTTP status; 0 when no answer came: the API could not be reached, or the client refused the call. */
  readonly status: number;
  /** What the API added: the field a validation_failed names, a refusal's reason, a lease's expires_at, ... ({} when nothing). */
  readonly details: Record<string, unknown>;
  /** Seconds the API asked to wait before a retry (Retry-After), when it said so. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    code: ApiErrorCode,
    status: number,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions & { retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.code = code;
    this.status = status;
    this.details = details;
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }

  /**
   * Whether retrying the same call later may succeed: `unreachable`, 503 (store_unavailable)
   * or 429 (too_many_waits, quota_exceeded, the stage's throttling); wait `retryAfterSeconds`
   * first when the API said so. The client's own retries (call.ts) already waited some out. A
   * call the client itself refused before sending it (status 0, e.g. `validation_failed`) is not.
   */
  get retryable(): boolean {
    return this.code === 'unreachable' || this.status === 503 || this.status === 429;
  }
}
