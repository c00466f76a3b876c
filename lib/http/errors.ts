/**
 * The HTTP API's errors: one JSON shape `{code, message, details}` with a stable code and a
 * fitting status, and the mapping from every error the layers below throw. Nothing else leaves
 * the API: an unexpected error becomes `internal` (500) without its stack or message.
 * STYLE "Typed errors with stable codes"; issue 5 ("Errors are JSON {code, message, details}").
 */
import type { z } from 'zod';
import { CommitRejected, CommitTooLarge } from '../engine/commit-errors.ts';
import { EngineError } from '../engine/errors.ts';
import { RegistryError } from '../sandbox/function-registry.ts';
import { StoredRegistryError } from '../sandbox/stored-registry.ts';

/** Every code the API answers with, and its HTTP status. */
export const HTTP_ERROR_STATUS = {
  /** The body, a query parameter or a path parameter does not match the route's schema. */
  validation_failed: 400,
  /** The body is not JSON. */
  invalid_json: 400,
  /** A JSON body that is not valid UTF-8, or a string in the body, path or query that holds a lone UTF-16 surrogate (or invalid UTF-8 percent-encoding). */
  invalid_unicode: 400,
  /** A function artifact is not registrable (empty bytes, bad path). */
  invalid_artifact: 400,
  /** No credentials, or credentials that do not authenticate. */
  unauthenticated: 401,
  /** Authenticated, but not allowed (not the run's principal, not an admin, on_behalf_of by a non-system caller). */
  unauthorized: 403,
  /** A caller who may see the run presented an X-Control-Capability that does not match. */
  capability_invalid: 403,
  /** as_agent names an agent that is not registered, or that may not act for this user. */
  agent_not_allowed: 403,
  /** A write to a reserved system path (a function under /lib/raisin/ or /lib/models/): refused to every caller, admins included. */
  reserved_path: 403,
  /** The subject's workspace is not granted to the caller (decided before any run is looked up). */
  workspace_not_granted: 403,
  /** No such run, or one the caller may not see (the same answer: nothing is revealed). */
  run_not_found: 404,
  checkpoint_not_found: 404,
  /** No registry entry (tool, policy, agent) with that name or version. */
  registry_entry_not_found: 404,
  resume_key_not_found: 404,
  /** The run holds no stored domain state of that revision (or none it references). */
  state_not_found: 404,
  /** No function artifact is registered at that path (`GET /functions/{path}`). */
  function_not_found: 404,
  /** No route has this path. */
  not_found: 404,
  /** A route has this path, but not with this method (see the Allow header). */
  method_not_allowed: 405,
  /** The subject has a live run the caller may not see; nothing of it is revealed. */
  subject_busy: 409,
  /** The create key was already used for a different request. */
  create_key_reused: 409,
  /** Another delivery (another delivery_id) was already applied to the resume key. */
  result_already_delivered: 409,
  /** Another result is held for the resume key until its wait is recorded. */
  result_already_held: 409,
  /** The run ended: results can no longer be delivered to it. */
  run_terminal: 409,
  /** A published tool, policy or agent version never changes: publish a new version instead. */
  version_immutable: 409,
  /** A tool published as data may not take the name of a tool registered in code. */
  tool_name_reserved: 409,
  /** A client-driven write whose fence no longer holds: the lease was lost (expiry, takeover, stop, pause). */
  fenced_out: 409,
  /** Another client holds the run's lease until details.expires_at. */
  lease_held: 409,
  /** A client-driven route on a server-driven run. */
  not_client_driven: 409,
  /** The run's state does not allow this write now (details.reason). */
  invalid_state: 409,
  /** The runtime refused a turn outcome (details.reason_code, a turn-outcome-v1 reason code). */
  turn_outcome_refused: 409,
  /** The function path names a built-in artifact, which cannot be replaced. */
  builtin_readonly: 409,
  /** A fork's subject has a live run (the original's, while it lives): give another `subject`. */
  subject_taken: 409,
  /** An events cursor (`after`, Last-Event-ID) beyond the run's last seq: no such event exists yet. */
  cursor_ahead: 409,
  /** The checkpoint cannot be forked from (it waits on external results, or its run had ended). */
  checkpoint_not_forkable: 409,
  /** The body exceeds the size limit. */
  payload_too_large: 413,
  /** The Content-Type is not one the route accepts. */
  unsupported_media_type: 415,
  /** The create request names a reducer function that is not registered. */
  reducer_not_found: 422,
  /** A per-principal limit (live runs, creations per minute) is reached: retry after Retry-After seconds. */
  quota_exceeded: 429,
  /** The caller holds as many open long polls and event streams as it may (per process): retry after Retry-After seconds. */
  too_many_waits: 429,
  internal: 500,
  /** DynamoDB/S3/SQS could not be reached or throttled: retry after Retry-After seconds. */
  store_unavailable: 503,
} as const;

export type HttpErrorCode = keyof typeof HTTP_ERROR_STATUS;
export type HttpErrorStatus = (typeof HTTP_ERROR_STATUS)[HttpErrorCode];

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

/** One validation problem: `path` is dotted (`subject.path`, `budgets.max_turns`, `0.kind`), '' for the whole value. */
export interface ValidationIssue {
  path: string;
  code: string;
  message: string;
}

/** Flattens zod issues (or the engine's copy of them) into {path, code, message}. */
export function validationIssues(
  issues: readonly z.core.$ZodIssue[] | readonly unknown[],
): ValidationIssue[] {
  return issues.flatMap((raw) => {
    const issue = raw as { path?: readonly PropertyKey[]; code?: unknown; message?: unknown; keys?: unknown };
    const path = (issue.path ?? []).map((p) => String(p));
    // An unknown field (a typo such as budget_incrase) is named by its own path.
    if (issue.code === 'unrecognized_keys' && Array.isArray(issue.keys) && issue.keys.length > 0) {
      return issue.keys.map((key) => ({
        path: [...path, String(key)].join('.'),
        code: 'unrecognized_key',
        message: `unknown field ${JSON.stringify(String(key))}`,
      }));
    }
    // A custom rule's own code (e.g. too_large) rather than zod's `custom`.
    const own = issue.code === 'custom' ? (issue as { params?: { code?: unknown } }).params?.code : undefined;
    return [
      {
        path: path.join('.'),
        code: typeof own === 'string' ? own : String(issue.code ?? 'invalid'),
        message: String(issue.message ?? 'invalid value'),
      },
    ];
  });
}

/**
 * A validation_failed error naming where the input was (`json`, `query`, `param`, `header`), worded
 * `invalid request: field budgets.max_turns: <why>` (`query parameter limit`, `the body`, ...).
 */
export function validationFailed(
  target: string,
  issues: readonly z.core.$ZodIssue[] | readonly unknown[],
): HttpError {
  const flat = validationIssues(issues);
  const first = flat[0];
  const part = TARGET_WORDS[target] ?? { whole: target, field: target };
  const where = first === undefined || first.path === '' ? part.whole : `${part.field} ${first.path}`;
  return new HttpError(
    'validation_failed',
    `invalid request: ${where}${first === undefined ? '' : `: ${first.message}`}`,
    { target, issues: flat },
  );
}

/** How a validation message names the part of the request that failed, whole or one field of it. */
const TARGET_WORDS: Record<string, { whole: string; field: string }> = {
  json: { whole: 'the body', field: 'field' },
  query: { whole: 'the query', field: 'query parameter' },
  param: { whole: 'the path', field: 'path parameter' },
  header: { whole: 'the headers', field: 'header' },
};

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);
const UNAVAILABLE_NAMES = new Set([
  'TimeoutError',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'SlowDown',
  'TransactionConflictException',
]);

/** Whether an error says the storage could not answer now (network, throttling, a 5xx from AWS). */
export function isStoreUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; code?: unknown; $fault?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.name === 'string' && UNAVAILABLE_NAMES.has(e.name)) return true;
  if (e.$fault === 'server') return true;
  return e.cause !== undefined && e.cause !== err && isStoreUnavailable(e.cause);
}

/**
 * Maps any error to the HttpError the API answers with. Known errors keep their code;
 * `internal` is returned (and the original should be logged by the caller) for anything else.
 */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof EngineError) {
    switch (err.code) {
      case 'validation_failed': {
        const failed = validationFailed('json', Array.isArray(err.details.issues) ? err.details.issues : []);
        // A refused turn outcome also names its turn-outcome-v1 reason code (event-malformed).
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
      case 'invalid_cursor':
        return new HttpError('validation_failed', err.message, {
          target: 'query',
          issues: [{ path: 'cursor', code: 'invalid_cursor', message: 'not a cursor this API returned' }],
        });
      default:
        return new HttpError(err.code, err.message, err.details, { cause: err });
    }
  }
  if (err instanceof RegistryError) return new HttpError('invalid_artifact', err.message, {}, { cause: err });
  if (err instanceof StoredRegistryError && err.code === 'builtin_readonly') {
    return new HttpError(
      'builtin_readonly',
      err.message,
      { function_path: err.function_path },
      { cause: err },
    );
  }
  if (
    err instanceof CommitRejected &&
    (err.reason === 'transaction_conflict' || err.reason === 'throttled')
  ) {
    return unavailable('the run is busy; retry', {}, err);
  }
  if (err instanceof CommitTooLarge)
    return new HttpError('payload_too_large', err.message, {}, { cause: err });
  if (isStoreUnavailable(err)) return unavailable('the store cannot be reached; retry', {}, err);
  return new HttpError('internal', 'internal error', {}, { cause: err });
}

function unavailable(message: string, details: Record<string, unknown>, cause: unknown): HttpError {
  return new HttpError('store_unavailable', message, details, {
    cause,
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });
}
