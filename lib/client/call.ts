/**
 * The one request function a client is built on: a method, a path, a JSON or bytes body, the
 * run's capability, and the zod schema of the documented answer. Its own module so that the
 * client (client.ts) and the client-driven methods (client-driven.ts) share it without
 * importing each other; `httpCaller` is the one over HTTP.
 */
import { z } from 'zod';
import { ApiError } from './errors.ts';

export interface Call<T extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  query?: Record<string, string | number | undefined>;
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
}

const ErrorBody = z.object({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).default({}),
});

/** The request function of a client at `baseUrl` (no trailing slash): JSON in, the parsed shape out, ApiError on failure. */
export function httpCaller(baseUrl: string, options: CallerOptions): CallFn {
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
      const error = ErrorBody.safeParse(json);
      const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
      const retry = Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {};
      if (error.success) {
        throw new ApiError(error.data.code, response.status, error.data.message, error.data.details, retry);
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
