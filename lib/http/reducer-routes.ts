/**
 * The reducer-upgrade routes of the HTTP API (admin only; anyone else gets 403 unauthorized and
 * nothing is read): `POST /admin/reducers/check` checks an artifact (one published at a path,
 * whose hash must be the one given, or bytes in the body) against stored runs (named, or the
 * runs bound to a function path) and answers per run identical, diverged (the first divergent
 * delivery, both answers and a diff) or skipped; bounded in runs (`limit`, at most 50) and time
 * (`time_budget_ms`, at most 60 s). docs/guides/upgrading-a-reducer.md.
 */
import type { z } from '@hono/zod-openapi';
import type { Engine } from '../engine/engine.ts';
import type { FunctionRegistry } from '../sandbox/function-registry.ts';
import { hashArtifactBytes } from '../sandbox/function-registry.ts';
import { checkRuns, upgradeRuns } from './check-runs.ts';
import { HttpError } from './errors.ts';
import { callerOf, type HttpApp, jsonBody } from './middleware.ts';
import { type CheckArtifact, reducerCheckRoute, reducerUpgradeRoute } from './reducer-schemas.ts';
import { isAdmin } from './registry-routes.ts';

/** The artifact a check request names: published (hash checked) or given. */
async function artifactOf(functions: FunctionRegistry, artifact: z.infer<typeof CheckArtifact>) {
  if ('kind' in artifact)
    return { kind: artifact.kind, bytes: new Uint8Array(Buffer.from(artifact.bytes_base64, 'base64')) };
  const published = await functions.get(artifact.function_path);
  if (published === null) {
    throw new HttpError('function_not_found', `no function artifact at ${artifact.function_path}`, {
      function_path: artifact.function_path,
    });
  }
  if (artifact.hash !== undefined && published.hash !== artifact.hash) {
    throw new HttpError(
      'artifact_hash_mismatch',
      `the artifact at ${artifact.function_path} has hash ${published.hash}, not ${artifact.hash}`,
      { function_path: artifact.function_path, hash: published.hash },
    );
  }
  return { kind: published.kind, bytes: published.bytes };
}

/** Registers `POST /admin/reducers/check`; the rights are checked before the body is read. */
export function registerReducerRoutes(
  app: HttpApp,
  engine: Engine,
  functions: FunctionRegistry,
  now: () => number = Date.now,
): void {
  app.use('/admin/reducers/*', async (c, next) => {
    if (!isAdmin(c.get('caller')))
      throw new HttpError('unauthorized', 'checking reducers needs admin rights', {});
    await next();
  });
  app.openapi({ ...reducerCheckRoute, middleware: [jsonBody] }, async (c) => {
    const body = c.req.valid('json');
    const artifact = await artifactOf(functions, body.artifact);
    const report = await checkRuns(engine, callerOf(c), {
      artifact,
      selection:
        body.run_ids !== undefined
          ? { run_ids: body.run_ids }
          : { function_path: body.function_path as string },
      limit: body.limit,
      timeBudgetMs: body.time_budget_ms,
      now,
    });
    return c.json(
      { artifact: { kind: artifact.kind, hash: hashArtifactBytes(artifact.bytes) }, ...report },
      200,
    );
  });
  app.openapi({ ...reducerUpgradeRoute, middleware: [jsonBody] }, async (c) => {
    const body = c.req.valid('json');
    const published = await functions.get(body.function_path);
    if (published === null) {
      throw new HttpError('function_not_found', `no function artifact at ${body.function_path}`, {
        function_path: body.function_path,
      });
    }
    const artifact = { kind: published.kind, bytes: published.bytes };
    const report = await upgradeRuns(engine, callerOf(c), {
      artifact,
      functionPath: body.function_path,
      hash: published.hash,
      limit: body.limit,
      timeBudgetMs: body.time_budget_ms,
      now,
    });
    return c.json({ artifact: { kind: published.kind, hash: published.hash }, ...report }, 200);
  });
}
