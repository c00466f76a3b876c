/**
 * The HTTP API's errors: one JSON shape `{code, message, details}` with a stable code and a
 * fitting status, and the mapping from every error the layers below throw. Nothing else leaves
 * the API: an unexpected error becomes `internal` (500) without its stack or message.
 * docs/architecture.md, "Conventions".
 */
import type { z } from 'zod';
import { ERROR_CODES, type ErrorCode, type ErrorStatusMap } from '../contracts/error-codes.ts';
import { validationIssues, validationMessage } from '../contracts/validation-issues.ts';
import { EngineError } from '../engine/errors.ts';
import { EngineModuleError } from '../engine/module-error.ts';
import { RegistryError } from '../sandbox/function-registry.ts';
import { StoredRegistryError } from '../sandbox/stored-registry.ts';

/**
 * Every code the API answers with, and its HTTP status: derived from the one catalogue
 * (lib/contracts/error-codes.ts), where each code's meaning and remedy are.
 */
export const HTTP_ERROR_STATUS: ErrorStatusMap = Object.freeze(
  Object.fromEntries(Object.entries(ERROR_CODES).map(([code, entry]) => [code, entry.status])),
) as ErrorStatusMap;

export type HttpErrorCode = ErrorCode;
export type HttpErrorStatus = ErrorStatusMap[HttpErrorCode];

/** Seconds a client should wait before retrying a store_unavailable answer. */
export const RETRY_AFTER_SECONDS = 1;

/** The error body every failed request gets. */
export interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** An error the API answers with as is. Thrown by routes and middleware. */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly code: HttpErrorCode;
  readonly status: HttpErrorStatus;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(
    code: HttpErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions & { headers?: Record<string, string> },
  ) {
    super(message, options);
    this.code = code;
    this.status = HTTP_ERROR_STATUS[code];
    this.details = details;
    this.headers = options?.headers ?? {};
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export { type ValidationIssue, validationIssues } from '../contracts/validation-issues.ts';

/**
 * A validation_failed error naming where the input was (`json`, `query`, `param`, `header`), worded
 * `invalid request: field budgets.max_turns: <why>` (`query parameter limit`, `the body`, ...).
 */
export function validationFailed(
  target: string,
  issues: readonly z.core.$ZodIssue[] | readonly unknown[],
): HttpError {
  const flat = validationIssues(issues);
  return new HttpError('validation_failed', validationMessage(target, flat), { target, issues: flat });
}

/**
 * Maps any error to the HttpError the API answers with, by the stable code the layers below
 * give it (never by an SDK's error names: the adapters raise StoreUnavailable). Known errors
 * keep their code; `internal` is returned (and the original should be logged by the caller) for
 * anything else.
 */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof EngineError) return fromEngineError(err);
  if (err instanceof RegistryError) return new HttpError('invalid_artifact', err.message, {}, { cause: err });
  if (err instanceof StoredRegistryError && err.code === 'builtin_readonly') {
    return new HttpError(
      'builtin_readonly',
      err.message,
      { function_path: err.function_path },
      { cause: err },
    );
  }
  if (err instanceof EngineModuleError) {
    // A store refusal that outlasted the adapter's retries: the run stayed busy.
    if (err.code === 'transaction_conflict') return unavailable('the run is busy; retry', {}, err);
    if (err.code === 'commit_too_large')
      return new HttpError('payload_too_large', err.message, {}, { cause: err });
  }
  return new HttpError('internal', 'internal error', {}, { cause: err });
}

/** An EngineError as answered: its own code and details, with what some codes add. */
function fromEngineError(err: EngineError): HttpError {
  switch (err.code) {
    case 'validation_failed': {
      const target = typeof err.details.target === 'string' ? err.details.target : 'json';
      const failed = validationFailed(target, Array.isArray(err.details.issues) ? err.details.issues : []);
      // A refused turn outcome also names its turn outcome reason code (event-malformed).
      if (err.details.reason_code === undefined) return failed;
      return new HttpError('validation_failed', failed.message, {
        ...failed.details,
        reason_code: err.details.reason_code,
      });
    }
    case 'store_unavailable':
      return unavailable(err.message, err.details, err);
    case 'quota_exceeded':
      return new HttpError(err.code, err.message, err.details, {
        cause: err,
        ...(typeof err.details.retry_after_s === 'number'
          ? { headers: { 'Retry-After': String(err.details.retry_after_s) } }
          : {}),
      });
    default:
      return new HttpError(err.code, err.message, err.details, { cause: err });
  }
}

function unavailable(message: string, details: Record<string, unknown>, cause: unknown): HttpError {
  return new HttpError('store_unavailable', message, details, {
    cause,
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });
}
