/**
 * The HTTP API's middleware: error mapping (every error is `{code, message, details}`, 404 and
 * 405 answered with the routes' own table), authentication on every non-public route, body
 * limits, and the JSON-body check of body routes.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { overLimitMessage } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { jsonDepth, MAX_JSON_DEPTH } from '../core/canonical.ts';
import { rateLimitedLog } from '../core/rate-limited-log.ts';
import { decodesToWellFormedText, illFormedPath } from '../core/text.ts';
import { type Authenticate, CAPABILITY_HEADER, type HttpCaller } from './auth.ts';
import { HttpError, type HttpError as HttpErrorType, toHttpError } from './errors.ts';
import { PUBLIC_PATHS, ROUTES } from './routes.ts';

export type AppEnv = { Bindings: Record<string, unknown>; Variables: { caller: HttpCaller } };
export type HttpApp = OpenAPIHono<AppEnv>;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
/** The media type of a Content-Type header, lower-cased, without parameters. */
export const mediaTypeOf = (header: string | undefined) =>
  (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';

/** The warn line of requests whose client went away before they were answered (rate-limited). */
export const CLIENT_GONE_MESSAGE = 'client went away before its request was answered';

/** Every error becomes `{code, message, details}`; an unknown path is 404, a known path with another method 405. */
export function installErrorHandling(
  app: HttpApp,
  log: (entry: Record<string, unknown>) => void,
  options: { dropLogIntervalMs?: number; now?: () => number } = {},
): void {
  // A client that went away (its request signal aborted, e.g. mid-body) is no fault of ours,
  // and one a client can cause at will: a warn line at most every dropLogIntervalMs.
  const gone = rateLimitedLog(
    (message, attributes) => log({ level: 'warn', message, ...attributes }),
    CLIENT_GONE_MESSAGE,
    {
      ...(options.dropLogIntervalMs !== undefined ? { intervalMs: options.dropLogIntervalMs } : {}),
      now: options.now ?? (() => Date.now()),
    },
  );
  app.onError((err, c) => {
    const httpError = err instanceof HTTPException ? fromHttpException(err) : toHttpError(err);
    if (httpError.code === 'internal' && c.req.raw.signal.aborted) {
      gone.note({
        method: c.req.method,
        path: c.req.path,
        error: err instanceof Error ? err.name : 'unknown',
      });
    } else if (httpError.code === 'internal') {
      log({
        level: 'error',
        message: 'unhandled error',
        method: c.req.method,
        path: c.req.path,
        error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    }
    return errorResponse(c, httpError);
  });

  app.notFound((c) => {
    const allowed = ROUTES.filter((r) => r.pattern.test(c.req.path)).map((r) => r.method);
    if (allowed.length > 0) {
      const allow = [...new Set(allowed.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])))].join(', ');
      return errorResponse(
        c,
        new HttpError(
          'method_not_allowed',
          `${c.req.method} is not allowed on ${c.req.path}`,
          { allow },
          { headers: { Allow: allow } },
        ),
      );
    }
    return errorResponse(c, new HttpError('not_found', `no route ${c.req.method} ${c.req.path}`, {}));
  });
}

/** Where a caller without credentials gets a token: the 401's message says it. */
const TOKEN_HINT =
  'send Authorization: Bearer <token>; on the local stack `npx agent-runs token --sub NAME` prints one';

/** Authentication on every route but the public ones (401 without credentials), and the body limits. */
export function installAuthAndLimits(
  app: HttpApp,
  auth: Authenticate,
  limits: { bodyLimitBytes: number; functionBodyLimitBytes: number },
): void {
  app.use('*', async (c, next) => {
    if (PUBLIC_PATHS.has(c.req.path)) return next();
    const caller = await auth(c.req.raw, c.env as unknown);
    if (caller === null) {
      throw new HttpError(
        'unauthenticated',
        `missing or invalid credentials: ${TOKEN_HINT}`,
        {},
        {
          headers: { 'WWW-Authenticate': 'Bearer' },
        },
      );
    }
    // A header sent empty is a capability presented, and a wrong one: never ignored.
    const capability = c.req.header(CAPABILITY_HEADER);
    c.set('caller', capability !== undefined ? { ...caller, capability } : caller);
    return next();
  });
  app.use('*', (c, next) => {
    refuseIllFormedUrl(c.req.url);
    return next();
  });

  const tooLarge = (limit: number) => (c: Context) => {
    const declared = Number(c.req.header('content-length'));
    const bytes = Number.isSafeInteger(declared) && declared > limit ? declared : undefined;
    throw new HttpError('payload_too_large', overLimitMessage('the body', limit, bytes), {
      limit_bytes: limit,
      ...(bytes !== undefined ? { bytes } : {}),
    });
  };
  const bodyLimitBytes = limits.bodyLimitBytes;
  const functionLimitBytes = limits.functionBodyLimitBytes;
  const defaultLimit = bodyLimit({ maxSize: bodyLimitBytes, onError: tooLarge(bodyLimitBytes) });
  const functionLimit = bodyLimit({ maxSize: functionLimitBytes, onError: tooLarge(functionLimitBytes) });
  app.use('*', (c, next) => (c.req.path.startsWith('/functions/') ? functionLimit : defaultLimit)(c, next));
  app.use('*', refuseInvalidUtf8Body);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * 400 invalid_unicode (details.target `json`) when a JSON body (by its Content-Type) is not valid
 * UTF-8, rather than reading it with U+FFFD in place of the bad bytes. Runs inside the body
 * limit; later reads of the body get the bytes it read (hono caches them).
 */
const refuseInvalidUtf8Body: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.raw.body === null || !JSON_MEDIA_TYPE.test(mediaTypeOf(c.req.header('content-type')))) {
    return next();
  }
  const bytes = await c.req.arrayBuffer();
  try {
    UTF8.decode(bytes);
  } catch (err) {
    throw new HttpError('invalid_unicode', 'the body is not valid UTF-8', { target: 'json' }, { cause: err });
  }
  return next();
};

export /** Route middleware of JSON-body routes: 415 unless JSON, 400 when empty or not JSON. */
const jsonBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  const type = c.req.header('content-type');
  if (!JSON_MEDIA_TYPE.test(mediaTypeOf(type))) {
    throw new HttpError('unsupported_media_type', 'expected Content-Type: application/json', {
      content_type: type ?? null,
    });
  }
  const text = await c.req.text();
  if (text.trim() === '') {
    throw new HttpError('validation_failed', 'a JSON body is required', {
      target: 'json',
      issues: [{ path: '', code: 'required', message: 'a JSON body is required' }],
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new HttpError('invalid_json', `the body is not JSON: ${(err as Error).message}`, {});
  }
  if (jsonDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    const message = `the body nests deeper than ${MAX_JSON_DEPTH} levels`;
    throw new HttpError('validation_failed', message, {
      target: 'json',
      issues: [{ path: '', code: 'too_deep', message }],
    });
  }
  const illFormed = illFormedPath(body);
  if (illFormed !== null) {
    throw new HttpError('invalid_unicode', `a string at '${illFormed}' holds a lone UTF-16 surrogate`, {
      target: 'json',
      path: illFormed,
    });
  }
  return next();
};

/**
 * 400 invalid_unicode when a path segment or a query parameter of `url` decodes to text that is
 * not well-formed (invalid UTF-8 percent-encoding, a lone surrogate): nothing is looked up with it.
 */
function refuseIllFormedUrl(url: string): void {
  const { pathname, search } = new URL(url);
  const segment = pathname.split('/').find((s) => !decodesToWellFormedText(s));
  if (segment !== undefined) {
    throw new HttpError('invalid_unicode', 'a path segment is not well-formed UTF-8', {
      target: 'path',
      segment,
    });
  }
  for (const pair of search.replace(/^\?/, '').split('&')) {
    const [name = '', value = ''] = pair.split('=');
    if (!decodesToWellFormedText(name) || !decodesToWellFormedText(value)) {
      throw new HttpError('invalid_unicode', 'a query parameter is not well-formed UTF-8', {
        target: 'query',
        parameter: decodesToWellFormedText(name) ? decodeURIComponent(name) : name,
      });
    }
  }
}

/** The engine's Caller of a request (its principal and any capability it presented). */
export const callerOf = (c: Context<AppEnv>): Caller => {
  const { principal, capability } = c.get('caller');
  return capability === undefined ? { principal } : { principal, capability };
};

/**
 * The engine's Caller of a create or fork: callerOf's, plus `admin` when the caller has admin
 * rights (an admin may create in every workspace but other users' own, core/workspaces.ts).
 * Only these routes pass it: no other engine call depends on it.
 */
export const creatorOf = (c: Context<AppEnv>): Caller =>
  c.get('caller').admin === true ? { ...callerOf(c), admin: true } : callerOf(c);

function errorResponse(c: Context, error: HttpErrorType): Response {
  return c.json(error.toBody(), error.status, error.headers);
}

function fromHttpException(err: HTTPException): HttpError {
  switch (err.status) {
    case 413:
      return new HttpError('payload_too_large', 'the body is over the size limit', {}, { cause: err });
    case 415:
      return new HttpError('unsupported_media_type', 'unsupported Content-Type', {}, { cause: err });
    case 400:
      return new HttpError('invalid_json', 'the body is not JSON', {}, { cause: err });
    default:
      return toHttpError(err);
  }
}
