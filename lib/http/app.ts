/**
 * The HTTP API: hono + @hono/zod-openapi over the engine. Every handler parses its input with
 * the route's zod schemas, calls one engine use case (reads included: the HTTP layer never reads
 * the store), and maps the result; every error becomes `{code, message, details}` (errors.ts).
 * The same app runs in Lambda (functions/control.ts, hono's aws-lambda adapter), in the local
 * stack, and in-process in tests (`app.request(...)`). docs/architecture.md, "Bird's-eye view";
 * docs/contracts/run-lifecycle.md, "Controls".
 *
 * Routes and statuses:
 *   GET  /health                       200 (no auth)
 *   GET  /openapi.json                 200 OpenAPI 3.1 (no auth)
 *   GET  /config                       the deployment's timings (lease, heartbeat, skew, sweeper period)
 *   POST /runs                         201 created / 200 existing live run or create_key replay
 *   GET  /runs?status=|subject_...     200 {runs, cursor?}
 *   GET  /runs/{id}                    200 run (effective projection)
 *   GET  /runs/{id}/events             200 {events, next_after, last_seq, status}; long polls with wait
 *   GET  /runs/{id}/checkpoints[/{n}]  200
 *   GET  /runs/{id}/state?rev=         200 {run_id, state_rev, state, state_digest}
 *   GET  /runs/{id}/at/{seq}           200 the run as it stood at seq (time travel)
 *   POST /runs/{id}/fork               201 forked / 200 create_key replay
 *   GET  /runs/{id}/children           200
 *   POST /runs/{id}/controls           200 ack, whether applied, duplicate or rejected
 *   POST /results/{resume_key}         200 {ack: applied|duplicate, ...}; 202 {ack: held} (no wait yet)
 *   GET  /runs/{id}/events/stream      200 text/event-stream (204 once settled and caught up)
 *   GET  /runs/{id}/lease              200 the lease view
 *   POST /runs/{id}/lease[/release], /operations[/outcome], /requests, /steers/take, /complete,
 *        /fail                         200: client-driven writes, fenced (client-routes.ts)
 *   GET  /v1/tools                     200 {tools}
 *   PUT  /functions/{path+}            200 artifact summary (admin)
 *   POST /admin/{tools|policy|agents}  201 published / 200 already published (admin)
 *   GET  /admin/{tools|policy|agents}  200 the current registry version (admin)
 *   GET  /admin/{kind}/entry?name=     200 one published version and the versions (admin)
 *   POST /admin/reducers/check         200 per-run check of an artifact against stored runs (admin)
 *   POST /admin/reducers/upgrade       200 per run upgraded | refused: the reducer_changed runs of a path (admin)
 *   GET  /console[/...]                the web console, when `console` is given (no auth; console.ts)
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import { DEFAULT_TIMINGS, type Timings } from '../contracts/timings.ts';
import type { Engine } from '../engine/engine.ts';
import type { ToolHost } from '../engine/ports.ts';
import type { FunctionRegistry } from '../sandbox/function-registry.ts';
import type { Authenticate } from './auth.ts';
import { registerCatalogRoutes } from './catalog-routes.ts';
import { registerClientRoutes } from './client-routes.ts';
import { type ConsoleSite, mountConsole } from './console.ts';
import { validationFailed } from './errors.ts';
import { type AppEnv, type HttpApp, installAuthAndLimits, installErrorHandling } from './middleware.ts';
import { registerReducerRoutes } from './reducer-routes.ts';
import { registerRegistryRoutes } from './registry-routes.ts';
import { configRoute, healthRoute, openapiRoute, TAGS } from './routes.ts';
import { registerRunRoutes } from './run-routes.ts';
import { createWaitSlots, DEFAULT_MAX_OPEN_WAITS } from './wait-slots.ts';

export type { HttpApp } from './middleware.ts';

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
  /**
   * Open long polls and event streams per principal at once, counted in THIS app (per process:
   * each Lambda instance counts its own); past it 429 too_many_waits with Retry-After. Default 8
   * (wait-slots.ts; `maxOpenWaitsFromEnv` reads AGENT_RUNS_MAX_OPEN_WAITS).
   */
  maxOpenWaits?: number;
  /** Structured log sink for internal errors (default: one JSON line on stderr). */
  log?: (entry: Record<string, unknown>) => void;
  /**
   * A request whose client went away (its signal aborted) and that then failed is logged at
   * warn, not error: at most one line per this many ms with the count left out (default 10 000).
   */
  dropLogIntervalMs?: number;
  /** Serve the web console under /console (no authentication; console.ts). Default: not served. */
  console?: ConsoleSite;
  /**
   * The deployment's timings `GET /config` and the console's config.json report (the runtime's:
   * Runtime.timings; default lib/contracts/timings.ts DEFAULT_TIMINGS).
   */
  timings?: Timings;
}

/**
 * The origin a client reached: the request URL's host with the scheme of `X-Forwarded-Proto`
 * when API Gateway (or the local gateway) set it. Hono's Lambda adapter writes every URL as
 * https, which is wrong for the local stack's plain http.
 */
function requestOrigin(url: string, forwardedProto: string | undefined): string {
  const parsed = new URL(url);
  const proto = forwardedProto?.split(',')[0]?.trim().toLowerCase();
  return proto === 'http' || proto === 'https' ? `${proto}://${parsed.host}` : parsed.origin;
}

/** Builds the app. Does no I/O until a request arrives. */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const log = options.log ?? ((entry) => console.error(JSON.stringify(entry)));
  const app: HttpApp = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationFailed(result.target, result.error.issues);
    },
  });
  installErrorHandling(
    app,
    log,
    options.dropLogIntervalMs !== undefined ? { dropLogIntervalMs: options.dropLogIntervalMs } : {},
  );
  // Before authentication: hono runs handlers in registration order, so the console answers first.
  const timings = options.timings ?? DEFAULT_TIMINGS;
  if (options.console !== undefined) mountConsole(app, options.console, timings);
  installAuthAndLimits(app, options.auth, {
    bodyLimitBytes: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    functionBodyLimitBytes: options.functionBodyLimitBytes ?? DEFAULT_FUNCTION_BODY_LIMIT_BYTES,
  });

  let document: unknown;
  app.openapi(healthRoute, (c) => c.json({ status: 'ok' as const }, 200));
  app.openapi(configRoute, (c) => c.json({ timings }, 200));
  app.openapi(openapiRoute, (c) => {
    document ??= openApiDocument(app);
    // The origin this request reached comes first, so a generator run against a live API targets it.
    const servers = [
      { url: requestOrigin(c.req.url, c.req.header('x-forwarded-proto')), description: 'This API' },
      ...DEFAULT_SERVERS,
    ];
    return c.json({ ...(document as Record<string, unknown>), servers }, 200);
  });

  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const waits = createWaitSlots(options.maxOpenWaits ?? DEFAULT_MAX_OPEN_WAITS);
  registerRunRoutes(app, options.engine, pollIntervalMs, waits);
  registerClientRoutes(app, options.engine, pollIntervalMs, waits);
  registerCatalogRoutes(app, options.tools, options.functions);
  registerRegistryRoutes(app, options.engine);
  registerReducerRoutes(app, options.engine, options.functions);
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
