/**
 * The one request function a client is built on: a method, a path, a JSON or bytes body, the
 * run's capability, and the zod schema of the documented answer. Its own module so that the
 * client (client.ts) and the client-driven methods (client-driven.ts) share it without
 * importing each other; `httpCaller` is the one over HTTP. It retries an answer that says "not
 * now" (503 store_unavailable, 429) as long as its Retry-After says (`CallerOptions.retry`). A
 * call whose path or query parameters the operation's schemas refuse is not sent at all.
 */
import type { z } from 'zod';
import { isErrorCode } from '../contracts/error-codes.ts';
import { ErrorBody } from '../contracts/http-api.ts';
import { validationIssues, validationMessage } from '../contracts/validation-issues.ts';
import { ApiError, type ApiErrorCode } from './errors.ts';

export interface Call<T extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  /** The values `path` was built from, and the operation's schema of them (lib/contracts/http-params.ts). */
  params?: { schema: z.ZodType; values: Record<string, string | number> };
  query?: Record<string, string | number | undefined>;
  /** The operation's schema of `query` (lib/contracts/http-params.ts). */
  querySchema?: z.ZodType;
  json?: unknown;
  body?: { bytes: Uint8Array; contentType: string };
  capability?: string | undefined;
  schema: T;
}

/** The one request function of a client: JSON or bytes in, the parsed documented shape out. */
export type CallFn = <T extends z.ZodType>(c: Call<T>) => Promise<z.infer<T>>;

/** How a client's requests authenticate and reach the API. */
export interface CallerOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as `X-Control-Capability` on every call that names a run. */
  capability?: string;
  /** Replaces global fetch (tests: `(req) => app.fetch(req)`). */
  fetch?: (request: Request) => Response | Promise<Response>;
  /** How answers 503 and 429 are retried (default: 3 tries, Retry-After up to 10 s waited out). */
  retry?: RetryOptions;
}

/**
 * The retry of an answer 503 (store_unavailable) or 429 (too_many_waits, quota_exceeded, the
 * stage's throttling): the same request again, after Retry-After seconds when the answer said
 * so, else after a backoff. Writes are safe to resend (control_id, delivery_id, create_key and
 * the subject make them idempotent). An unreachable API (status 0) is not retried here.
 */
export interface RetryOptions {
  /** Tries in all, the first included (default 3; 1 turns retrying off). */
  attempts?: number;
  /** The longest Retry-After waited out, ms (default 10_000): a longer one is thrown at once, for the caller to decide. */
  maxWaitMs?: number;
  /** The wait without Retry-After before retry n (from 1): backoffMs * 2^(n-1), ms (default 250). */
  backoffMs?: number;
  /** Waits `ms` (default: a timer); tests record the waits instead. */
  sleep?: (ms: number) => Promise<void>;
}

/** The code an error answer of `status` names: the API's when this client knows it, else `http_<status>`. */
export function answeredCode(code: string | undefined, status: number): ApiErrorCode {
  return code !== undefined && isErrorCode(code) ? code : `http_${status}`;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_MAX_WAIT_MS = 10_000;
const DEFAULT_BACKOFF_MS = 250;

/** Retry-After as seconds (a delay, or an HTTP date from now), or undefined when absent or unreadable. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The contract's error body, read leniently: an answer without `details` (a proxy's) is still the API's code. */
const ErrorAnswer = ErrorBody.extend({ details: ErrorBody.shape.details.default({}) });

/** The request function of a client at `baseUrl` (no trailing slash): JSON in, the parsed shape out, ApiError on failure. */
export function httpCaller(baseUrl: string, options: CallerOptions): CallFn {
  const once = onceCaller(baseUrl, options);
  const attempts = Math.max(1, options.retry?.attempts ?? DEFAULT_ATTEMPTS);
  const maxWaitMs = options.retry?.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const backoffMs = options.retry?.backoffMs ?? DEFAULT_BACKOFF_MS;
  const sleep = options.retry?.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return async function call<T extends z.ZodType>(c: Call<T>): Promise<z.infer<T>> {
    const refused = refusedParameters(c);
    if (refused !== undefined) throw refused;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await once(c);
      } catch (err) {
        const notNow = err instanceof ApiError && (err.status === 503 || err.status === 429);
        if (!notNow || attempt >= attempts) throw err;
        const waitMs =
          err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : backoffMs * 2 ** (attempt - 1);
        if (waitMs > maxWaitMs) throw err;
        await sleep(waitMs);
      }
    }
  };
}

/**
 * The ApiError `validation_failed` (status 0: nothing was sent) for parameters the operation's
 * own schemas refuse, worded and detailed as the API would answer it (`{target, issues}`), or
 * undefined when they pass. The values are checked as text, as the API receives them.
 */
export function refusedParameters(c: Call<z.ZodType>): ApiError | undefined {
  const checks = [
    ['param', c.params?.schema, c.params?.values],
    ['query', c.querySchema, c.query],
  ] as const;
  for (const [target, schema, values] of checks) {
    if (schema === undefined) continue;
    const text = Object.entries(values ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]]));
    const parsed = schema.safeParse(Object.fromEntries(text));
    if (parsed.success) continue;
    const issues = validationIssues(parsed.error.issues);
    return new ApiError('validation_failed', 0, `${validationMessage(target, issues)} (not sent)`, {
      target,
      issues,
    });
  }
  return undefined;
}

/** One try of a call: the request, then the parsed answer or an ApiError. */
function onceCaller(baseUrl: string, options: CallerOptions): CallFn {
  const doFetch = options.fetch ?? ((request: Request): Promise<Response> => fetch(request));
  return async function call<T extends z.ZodType>(c: Call<T>): Promise<z.infer<T>> {
    const url = new URL(baseUrl + c.path);
    for (const [k, v] of Object.entries(c.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers = new Headers({ accept: 'application/json' });
    if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`);
    const capability = c.capability ?? options.capability;
    if (capability !== undefined) headers.set('x-control-capability', capability);
    let body: string | ArrayBuffer | undefined;
    if (c.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(c.json);
    } else if (c.body !== undefined) {
      headers.set('content-type', c.body.contentType);
      body = c.body.bytes.slice().buffer;
    }
    let response: Response;
    try {
      response = await doFetch(new Request(url, { method: c.method, headers, ...(body ? { body } : {}) }));
    } catch (err) {
      throw new ApiError(
        'unreachable',
        0,
        `cannot reach ${baseUrl}: ${(err as Error).message}`,
        {},
        { cause: err },
      );
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const error = ErrorAnswer.safeParse(json);
      const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
      const retry = retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {};
      if (error.success) {
        const code = answeredCode(error.data.code, response.status);
        // A code this client does not know (a newer API) is kept in details.code.
        const details =
          code === error.data.code ? error.data.details : { ...error.data.details, code: error.data.code };
        throw new ApiError(code, response.status, error.data.message, details, retry);
      }
      throw new ApiError(
        `http_${response.status}`,
        response.status,
        `${c.method} ${c.path}: HTTP ${response.status} ${text.slice(0, 200)}`,
        {},
        retry,
      );
    }
    const parsed = c.schema.safeParse(json);
    if (!parsed.success) {
      throw new ApiError(
        'invalid_response',
        response.status,
        `${c.method} ${c.path}: the response does not have the documented shape`,
        { issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
      );
    }
    return parsed.data;
  };
}

/** Sleeps `ms`, or less when `signal` aborts first. */
export function pauseFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted === true) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
