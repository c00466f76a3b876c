/**
 * The client's one error type: every failed call throws an ApiError carrying the API's stable
 * `code`, the HTTP `status` and the `details` the API sent. Codes the client itself produces:
 * `unreachable` (status 0: no answer at all) and `invalid_response` (the answer does not have
 * the documented shape). STYLE "Typed errors with stable codes".
 */
export class ApiError extends Error {
  override name = 'ApiError';
  /** The API's code (`run_not_found`, `validation_failed`, ...) or `unreachable` / `invalid_response`. */
  readonly code: string;
  /** HTTP status; 0 when the API could not be reached. */
  readonly status: number;
  /** What the API added: the field a validation_failed names, a refusal's reason, a lease's expires_at, ... ({} when nothing). */
  readonly details: Record<string, unknown>;
  /** Seconds the API asked to wait before a retry (Retry-After), when it said so. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    code: string,
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
   * Whether retrying the same call later may succeed: unreachable (0), store_unavailable (503),
   * or a 429 that said when (Retry-After: `too_many_waits`, a rate limit; wait
   * `retryAfterSeconds` first). A 429 without Retry-After (a live-run quota) is not.
   */
  get retryable(): boolean {
    return (
      this.status === 0 ||
      this.status === 503 ||
      (this.status === 429 && this.retryAfterSeconds !== undefined)
    );
  }
}
