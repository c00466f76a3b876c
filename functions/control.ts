/**
 * Lambda entry point of the HTTP API (API Gateway HTTP API, payload v2): hono's aws-lambda
 * adapter over lib/http. The runtime (with the stored function registry, so artifacts registered
 * with `PUT /functions/...` reach every container and the step function) and the app are built
 * once per container, on the first invocation. Auth: authFromEnv (JWT authorizer claims in AWS;
 * the bearer token of `AGENT_RUNS_LOCAL_TOKEN` when set). It also serves the web console under
 * /console (its configuration from CONSOLE_CONFIG). Open long polls and streams per caller:
 * AGENT_RUNS_MAX_OPEN_WAITS (default 8, per container). API Gateway does not tell the function
 * that a client went away, so a long poll runs on until its wait (at most 20 s) ends; that cap
 * is under the function's timeout (29 s) and API Gateway's 30 s integration limit.
 * docs/architecture.md, "Bird's-eye view".
 */
import { fileURLToPath } from 'node:url';
import { handle } from 'hono/aws-lambda';
import { lambdaContainer } from '../lib/handlers/container.ts';
import { engineLog } from '../lib/handlers/observability.ts';
import { type ConsoleSite, consoleFromEnv } from '../lib/http/console.ts';
import { authFromEnv, createHttpApp, keepEmptyLastEventId, maxOpenWaitsFromEnv } from '../lib/http/index.ts';
import { flushTraces } from '../lib/telemetry/otel.ts';

/** The bundle carries the built console in `console/` beside this file (cdk/bundling.ts). */
const CONSOLE_ASSETS = fileURLToPath(new URL('./console/', import.meta.url));

const container = lambdaContainer('agent-runs-control');
let lambda: ReturnType<typeof handle> | undefined;

export const handler: ReturnType<typeof handle> = (event, context) => {
  if (lambda === undefined) {
    const { runtime, logger, metrics } = container();
    const log = engineLog(logger, metrics);
    let site: ConsoleSite | undefined;
    try {
      site = consoleFromEnv(process.env, CONSOLE_ASSETS);
    } catch (err) {
      // A console configuration mistake must not take the API down with it: no console then.
      logger.error('the web console is not served', { error: String(err) });
    }
    lambda = handle(
      createHttpApp({
        ...runtime,
        auth: authFromEnv(process.env),
        // Counted per instance: each container bounds only the waits it serves (wait-slots.ts).
        maxOpenWaits: maxOpenWaitsFromEnv(process.env),
        log,
        ...(site ? { console: site } : {}),
      }),
    );
  }
  // A control that ended a run emitted its run span: exported before Lambda freezes the container.
  return lambda(keepEmptyLastEventId(event), context).finally(flushTraces);
};
