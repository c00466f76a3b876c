/**
 * The HTTP API: hono + @hono/zod-openapi over the engine. Every handler parses its input with
 * the route's zod schemas, calls one engine use case (reads included: the HTTP layer never reads
 * the store), and maps the result; every error becomes `{code, message, details}` (errors.ts).
 * The same app runs in Lambda (functions/control.ts, hono's aws-lambda adapter), in the local
 * stack, and in-process in tests (`app.request(...)`). DESIGN sections 2 and 7; issue 5.
 *
 * Routes and statuses:
 *   GET  /health                       200 (no auth)
 *   GET  /openapi.json                 200 OpenAPI 3.1 (no auth)
 *   POST /runs                         201 created / 200 existing live run or create_key replay
 *   GET  /runs?status=|subject_...     200 {runs, cursor?}
 *   GET  /runs/{id}                    200 run (effective projection)
 *   GET  /runs/{id}/events             200 {events, next_after, last_seq, status}; long polls with wait
 *   GET  /runs/{id}/checkpoints[/{n}]  200
 *   GET  /runs/{id}/children           200
 *   POST /runs/{id}/controls           200 ack, whether applied, duplicate or rejected
 *   POST /results/{resume_key}         200 {run_id, seq}
 *   GET  /v1/tools                     200 {tools}
 *   PUT  /functions/{path+}            200 artifact summary (admin)
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { jsonDepth, MAX_JSON_DEPTH } from '../core/canonical.ts';
import type { Caller } from '../core/controls.ts';
import type { Engine } from '../engine/engine.ts';
import type { ToolHost } from '../engine/ports.ts';
import type { ArtifactKind, FunctionRegistry } from '../sandbox/function-registry.ts';
import { DEFAULT_SANDBOX_LIMITS } from '../sandbox/limits.ts';
import { compileWasmReducer } from '../sandbox/wasm-module.ts';
import { type Authenticate, CAPABILITY_HEADER, type HttpCaller } from './auth.ts';
import { HttpError, type HttpError as HttpErrorType, toHttpError, validationFailed } from './errors.ts';
import {
  checkpointRoute,
  checkpointsRoute,
  childrenRoute,
  controlRoute,
  createRunRoute,
  deliverRoute,
  eventsRoute,
  getRunRoute,
  healthRoute,
  listRunsRoute,
  openapiRoute,
  PUBLIC_PATHS,
  putFunctionRoute,
  ROUTES,
  TAGS,
  toolsRoute,
} from './routes.ts';
import { FunctionParams, MAX_WAIT_SECONDS } from './schemas.ts';

/** Default request body limit: 1 MiB. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** Default body limit of `PUT /functions/...` (artifacts): 4 MiB (under Lambda's 6 MB payload). */
export const DEFAULT_FUNCTION_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** How often a long poll re-reads the run record, in milliseconds. */
export const DEFAULT_POLL_INTERVAL_MS = 250;
/** The `info.version` of the OpenAPI document. */
export const API_VERSION = '1.0.0';

export interface HttpAppOptions {
  engine: Engine;
  /** Where `PUT /functions/...` registers artifacts (use the stored registry in AWS). */
  functions: FunctionRegistry;
  tools: Pick<ToolHost, 'list'>;
  /** Request → caller, or null (401). See auth.ts: bearerTokenAuth, jwtClaimsAuth, authFromEnv. */
  auth: Authenticate;
  /** Maximum request body in bytes (default 1 MiB); larger → 413 payload_too_large. */
  bodyLimitBytes?: number;
  /** Maximum artifact size for `PUT /functions/...` in bytes (default 4 MiB). */
  functionBodyLimitBytes?: number;
  /** Long-poll re-read interval in ms (default 250). */
  pollIntervalMs?: number;
  /** Structured log sink for internal errors (default: one JSON line on stderr). */
  log?: (entry: Record<string, unknown>) => void;
}

type AppEnv = { Bindings: Record<string, unknown>; Variables: { caller: HttpCaller } };
export type HttpApp = OpenAPIHono<AppEnv>;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const mediaTypeOf = (header: string | undefined) => (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';

/** Builds the app. Does no I/O until a request arrives. */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const { engine, functions, tools, auth } = options;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const log = options.log ?? ((entry) => console.error(JSON.stringify(entry)));

  const app: HttpApp = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationFailed(result.target, result.error.issues);
    },
  });

  // ------------------------------------------------------------ errors, 404 and 405

  app.onError((err, c) => {
    const httpError = err instanceof HTTPException ? fromHttpException(err) : toHttpError(err);
    if (httpError.code === 'internal') {
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

  // ------------------------------------------------------------ authentication, body limits

  app.use('*', async (c, next) => {
    if (PUBLIC_PATHS.has(c.req.path)) return next();
    const caller = await auth(c.req.raw, c.env as unknown);
    if (caller === null) {
      throw new HttpError(
        'unauthenticated',
        'missing or invalid credentials',
        {},
        {
          headers: { 'WWW-Authenticate': 'Bearer' },
        },
      );
    }
    const capability = c.req.header(CAPABILITY_HEADER);
    c.set('caller', capability ? { ...caller, capability } : caller);
    return next();
  });

  const tooLarge = (limit: number) => () => {
    throw new HttpError('payload_too_large', `the body exceeds ${limit} bytes`, { limit_bytes: limit });
  };
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const functionLimitBytes = options.functionBodyLimitBytes ?? DEFAULT_FUNCTION_BODY_LIMIT_BYTES;
  const defaultLimit = bodyLimit({ maxSize: bodyLimitBytes, onError: tooLarge(bodyLimitBytes) });
  const functionLimit = bodyLimit({ maxSize: functionLimitBytes, onError: tooLarge(functionLimitBytes) });
  app.use('*', (c, next) => (c.req.path.startsWith('/functions/') ? functionLimit : defaultLimit)(c, next));

  /** Route middleware of JSON-body routes: 415 unless JSON, 400 when empty or not JSON. */
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
    return next();
  };

  const callerOf = (c: Context<AppEnv>): Caller => {
    const { principal, capability } = c.get('caller');
    return capability === undefined ? { principal } : { principal, capability };
  };

  // ------------------------------------------------------------ public

  let document: unknown;
  app.openapi(healthRoute, (c) => c.json({ status: 'ok' as const }, 200));
  app.openapi(openapiRoute, (c) => {
    document ??= openApiDocument(app);
    // The origin this request reached comes first, so a generator run against a live API targets it.
    const servers = [{ url: new URL(c.req.url).origin, description: 'This API' }, ...DEFAULT_SERVERS];
    return c.json({ ...(document as Record<string, unknown>), servers }, 200);
  });

  // ------------------------------------------------------------ runs

  app.openapi({ ...createRunRoute, middleware: [jsonBody] }, async (c) => {
    const out = await engine.createRun(c.req.valid('json'), callerOf(c));
    return c.json(out, out.created ? 201 : 200);
  });

  app.openapi(listRunsRoute, async (c) => {
    const q = c.req.valid('query');
    return c.json(await engine.listRuns(q, callerOf(c)), 200);
  });

  app.openapi(getRunRoute, async (c) => {
    const run = await engine.getRun(c.req.valid('param').id, callerOf(c));
    return c.json(run, 200);
  });

  app.openapi(eventsRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { after, limit, wait } = c.req.valid('query');
    const page = await engine.eventPage(id, callerOf(c), {
      after,
      limit,
      waitMs: Math.min(wait, MAX_WAIT_SECONDS) * 1000,
      pollIntervalMs,
      signal: c.req.raw.signal,
    });
    return c.json(page, 200);
  });

  app.openapi(checkpointsRoute, async (c) => {
    const checkpoints = await engine.listCheckpoints(c.req.valid('param').id, callerOf(c));
    return c.json({ checkpoints }, 200);
  });

  app.openapi(childrenRoute, async (c) => {
    const children = await engine.listChildren(c.req.valid('param').id, callerOf(c));
    return c.json({ children }, 200);
  });

  app.openapi(checkpointRoute, async (c) => {
    const { id, n } = c.req.valid('param');
    return c.json(await engine.getCheckpoint(id, callerOf(c), n), 200);
  });

  app.openapi({ ...controlRoute, middleware: [jsonBody] }, async (c) => {
    const ack = await engine.applyControl(c.req.valid('param').id, c.req.valid('json'), callerOf(c));
    return c.json(ack, 200);
  });

  app.openapi({ ...deliverRoute, middleware: [jsonBody] }, async (c) => {
    const out = await engine.deliverResult(c.req.valid('param').resume_key, c.req.valid('json'), callerOf(c));
    return c.json(out, 200);
  });

  // ------------------------------------------------------------ tools and functions

  app.openapi(toolsRoute, (c) => c.json({ tools: tools.list() }, 200));

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description:
      'Locally: the token `agent-runs start` prints. In AWS: a JWT verified by the API Gateway authorizer, by default from the Cognito user pool of the stack (sub = user; the groups admin and system in cognito:groups, custom:role, or the scopes agent-runs/admin and agent-runs/system grant admin and system rights).',
  });
  // The document lists `/functions/{path}`; hono routes the slash-containing parameter itself.
  app.openAPIRegistry.registerPath(putFunctionRoute);
  app.put('/functions/:path{.+}', async (c) => {
    const caller = c.get('caller');
    if (caller.admin !== true && caller.principal.kind !== 'system') {
      throw new HttpError('unauthorized', 'registering functions needs admin rights', {});
    }
    const params = FunctionParams.safeParse({ path: c.req.param('path') });
    if (!params.success) throw validationFailed('param', params.error.issues);
    const kind = artifactKindOf(c.req.header('content-type'));
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    await validateArtifactBytes(kind, bytes);
    const artifact = await functions.put(`/${params.data.path}`, kind, bytes);
    return c.json(
      {
        function_path: artifact.function_path,
        kind: artifact.kind,
        hash: artifact.hash,
        size: bytes.byteLength,
      },
      200,
    );
  });

  return app;
}

/**
 * The servers of the static document: a deployed stack (the `ApiUrl` output of `cdk deploy`)
 * and the local stack. `GET /openapi.json` puts the origin it was reached at before them.
 */
export const DEFAULT_SERVERS = [
  {
    url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
    description: 'A deployed stack (the ApiUrl output of cdk deploy)',
    variables: {
      apiId: { default: 'abcdef1234', description: 'The HTTP API id' },
      region: { default: 'us-east-1', description: 'The stack region' },
    },
  },
  { url: 'http://127.0.0.1:8787', description: 'The local stack (npm start)' },
];

/** The package's license (package.json), as an OpenAPI 3.1 license object (SPDX `identifier`). */
const LICENSE = { name: 'UNLICENSED', identifier: 'LicenseRef-UNLICENSED' };

/**
 * The OpenAPI 3.1 document of `app`'s routes: every operation with an operationId and a tag
 * (TAGS), DEFAULT_SERVERS, and the bearer scheme applied to every route but the public ones.
 */
export function openApiDocument(app: HttpApp): Record<string, unknown> {
  return app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Agent Runs API',
      version: API_VERSION,
      description:
        'Durable, crash-safe agent runs. Errors are {code, message, details}; every control ack is 200 (a rejected control is an ack logged as an event).',
      license: LICENSE,
    },
    servers: DEFAULT_SERVERS,
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    security: [{ bearerAuth: [] }],
  }) as unknown as Record<string, unknown>;
}

function errorResponse(c: Context, error: HttpErrorType): Response {
  return c.json(error.toBody(), error.status, error.headers);
}

function fromHttpException(err: HTTPException): HttpError {
  switch (err.status) {
    case 413:
      return new HttpError('payload_too_large', 'the body is too large', {}, { cause: err });
    case 415:
      return new HttpError('unsupported_media_type', 'unsupported Content-Type', {}, { cause: err });
    case 400:
      return new HttpError('invalid_json', 'the body is not JSON', {}, { cause: err });
    default:
      return toHttpError(err);
  }
}

/**
 * `application/javascript` (or `text/javascript`) → js; `application/wasm` → wasm;
 * `text/x-starlark` (or `application/x-starlark`) → star; else 415.
 */
function artifactKindOf(contentType: string | undefined): ArtifactKind {
  const type = mediaTypeOf(contentType);
  if (type === 'application/javascript' || type === 'text/javascript') return 'js';
  if (type === 'application/wasm') return 'wasm';
  if (type === 'text/x-starlark' || type === 'application/x-starlark') return 'star';
  throw new HttpError(
    'unsupported_media_type',
    'expected Content-Type application/javascript, application/wasm or text/x-starlark',
    {
      content_type: contentType ?? null,
    },
  );
}

/**
 * A JS or Starlark artifact must be UTF-8 (neither is parsed here: like a JavaScript syntax
 * error, a Starlark file that does not load pauses its runs with reducer_unavailable); a WASM
 * artifact must pass the sandbox's admission (a core module without imports, exporting memory
 * and alloc, with bounded memory). Empty bytes are left to the registry, whose
 * invalid_artifact names them.
 */
async function validateArtifactBytes(kind: ArtifactKind, bytes: Uint8Array): Promise<void> {
  if (bytes.byteLength === 0) return;
  if (kind === 'js' || kind === 'star') {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      const language = kind === 'js' ? 'JavaScript' : 'Starlark';
      throw new HttpError('invalid_artifact', `the ${language} artifact is not UTF-8`, {});
    }
    return;
  }
  const admitted = await compileWasmReducer(bytes, DEFAULT_SANDBOX_LIMITS);
  if ('kind' in admitted) {
    throw new HttpError('invalid_artifact', `the WebAssembly module is not admissible: ${admitted.reason}`, {
      reason: admitted.reason,
    });
  }
}
