/**
 * Serves the web console (console/, built by `npm run console:build`) from the HTTP app, under
 * `/console`, without authentication: the assets are public and hold no secret; the console then
 * calls the API with the bearer token the user signs in with. The same code serves it on the
 * local stack (through lib/local/gateway.ts) and in AWS (the control function, which the CDK
 * stack routes `GET /console` and `GET /console/{proxy+}` to without the JWT authorizer).
 *
 *   GET /console/config.json   the run-time configuration (console-config.ts), never cached
 *   GET /console/assets/...    hashed build output, cached for a year (immutable); 404 if absent
 *   GET /console, /console/... index.html (client-side routes), revalidated on every load
 *
 * Responses are compressed when the client accepts it (assets from the build's .br / .gz files,
 * the rest with gzip on the fly) and carry a strict Content-Security-
 * Policy (scripts and styles from the console's origin only; connections to the API and the
 * OAuth token endpoint only). When the console is not built, every page answers 503 with the
 * command that builds it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Context, Env, Hono } from 'hono';
import { compress } from 'hono/compress';
import { etag } from 'hono/etag';
import { configFromEnv } from '../config.ts';
import type { Timings } from '../contracts/timings.ts';
import { ConsoleConfig, type ConsoleConfigInput } from './console-config.ts';

/** The path prefix the console is served under (the bundle is built with this base). */
export const CONSOLE_BASE = '/console';

export interface ConsoleSite {
  /** The built console: the directory holding index.html and assets/. */
  assetsDir: string;
  /** Served at /console/config.json (parsed with ConsoleConfig: a bad config throws at mount). */
  config: ConsoleConfigInput;
}

/** Whether `path` is one the console answers (so it needs no credentials). */
export function isConsolePath(path: string): boolean {
  return path === CONSOLE_BASE || path.startsWith(`${CONSOLE_BASE}/`);
}

const ONE_YEAR_S = 365 * 24 * 3600;

/**
 * Registers the console's routes on `app`. Call it before the app's authentication middleware:
 * hono runs handlers in registration order, so these answer first. Throws a ZodError when
 * `site.config` is not a valid ConsoleConfig. `timings` (the app's, as `GET /config` reports them)
 * are served in config.json's `timings`, so the console's lease estimate is the deployment's.
 */
export function mountConsole<E extends Env>(app: Hono<E>, site: ConsoleSite, timings?: Timings): void {
  const config = ConsoleConfig.parse({ ...site.config, ...(timings !== undefined ? { timings } : {}) });
  const csp = contentSecurityPolicy(config);
  const indexFile = join(site.assetsDir, 'index.html');
  const fromBase = (path: string) => path.slice(CONSOLE_BASE.length);

  app.use(`${CONSOLE_BASE}/*`, compress(), etag());
  app.use(CONSOLE_BASE, compress(), etag());
  app.get(`${CONSOLE_BASE}/config.json`, (c) => {
    c.header('Cache-Control', 'no-store');
    return c.json(config, 200);
  });
  /** Sets `headers` on a 200 answer of the handlers after it (serveStatic builds the response itself). */
  const withHeaders =
    (headers: Record<string, string>) =>
    async (c: Context<E>, next: () => Promise<void>): Promise<void> => {
      await next();
      if (c.res.status === 200)
        for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
    };
  app.get(
    `${CONSOLE_BASE}/assets/*`,
    withHeaders({
      'Cache-Control': `public, max-age=${ONE_YEAR_S}, immutable`,
      'X-Content-Type-Options': 'nosniff',
    }),
    // The build writes .br and .gz beside each asset (console/vite.config.ts): sent as they are.
    serveStatic({ root: site.assetsDir, rewriteRequestPath: fromBase, precompressed: true }),
    (c) => c.text('not found', 404),
  );
  const pageHeaders = withHeaders({
    'Cache-Control': 'no-cache',
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  });
  const page = serveStatic({ path: indexFile });
  const notBuilt = (c: Context<E>) => {
    if (existsSync(indexFile)) return c.text('not found', 404);
    c.header('Cache-Control', 'no-store');
    return c.html(
      '<!doctype html><title>Console not built</title><p>The web console is not built. ' +
        'Run <code>npm run console:build</code> and reload.</p>',
      503,
    );
  };
  app.get(CONSOLE_BASE, pageHeaders, page, notBuilt);
  app.get(`${CONSOLE_BASE}/*`, pageHeaders, page, notBuilt);
}

/**
 * The console of a deployed control function: served from `assetsDir` (the bundle's copy of the
 * build) with the configuration in env `CONSOLE_CONFIG` (JSON, written by the CDK stack; see
 * ConsoleConfig). Without CONSOLE_CONFIG the console signs in with a pasted token. Throws when
 * CONSOLE_CONFIG is not JSON or not a valid ConsoleConfig (a deployment mistake, reported at
 * the container's first request).
 */
export function consoleFromEnv(env: NodeJS.ProcessEnv, assetsDir: string): ConsoleSite {
  const raw = configFromEnv(env).CONSOLE_CONFIG;
  if (raw === undefined) return { assetsDir, config: { auth: { kind: 'token' } } };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new Error(`CONSOLE_CONFIG is not JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = ConsoleConfig.safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`CONSOLE_CONFIG is not a console configuration: ${where}`);
  }
  return { assetsDir, config: parsed.data };
}

/** The policy of the console's page: nothing but its own scripts and styles, and calls to the API, the token endpoint and the live socket. */
export function contentSecurityPolicy(config: ConsoleConfig): string {
  const connect = new Set(["'self'"]);
  if (config.api_base !== undefined) connect.add(new URL(config.api_base).origin);
  if (config.auth.kind === 'oauth') connect.add(new URL(config.auth.token_endpoint).origin);
  if (config.live_url !== undefined) connect.add(new URL(config.live_url).origin);
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${[...connect].join(' ')}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
