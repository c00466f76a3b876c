/**
 * The registry routes of the HTTP API, one shape for tools, the policy and agents (routes.ts
 * REGISTRY_ROUTES): publish, list the current version, read one version. Admin only: the
 * `admin` group (or scope) or a system caller; anyone else gets 403 unauthorized and nothing
 * is read or written. Discovery for everyone stays `GET /v1/tools` (metadata only).
 */
import { REGISTRY_KINDS, type RegistryKind } from '../contracts/index.ts';
import type { Engine } from '../engine/engine.ts';
import type { HttpCaller } from './auth.ts';
import { HttpError } from './errors.ts';
import type { HttpApp } from './middleware.ts';
import { REGISTRY_ROUTES } from './routes.ts';

/** Whether `caller` may manage the registries. */
export function isAdmin(caller: HttpCaller): boolean {
  return caller.admin === true || caller.principal.kind === 'system';
}

function requireAdmin(caller: HttpCaller, kind: RegistryKind): void {
  if (!isAdmin(caller)) throw new HttpError('unauthorized', `managing ${kind} needs admin rights`, {});
}

/** Registers the three routes of each registry. */
export function registerRegistryRoutes(app: HttpApp, engine: Engine): void {
  // Before the routes' own validation: a caller without rights learns nothing about the body.
  for (const kind of REGISTRY_KINDS) {
    app.use(`/admin/${kind}`, async (c, next) => {
      requireAdmin(c.get('caller'), kind);
      await next();
    });
    app.use(`/admin/${kind}/*`, async (c, next) => {
      requireAdmin(c.get('caller'), kind);
      await next();
    });
  }
  for (const kind of REGISTRY_KINDS) {
    const routes = REGISTRY_ROUTES[kind];
    app.openapi(routes.publish, async (c) => {
      const caller = c.get('caller');
      requireAdmin(caller, kind);
      const result = await engine.publishEntry(kind, c.req.valid('json'), caller.principal);
      return c.json(result, result.created ? 201 : 200);
    });
    app.openapi(routes.list, async (c) => {
      requireAdmin(c.get('caller'), kind);
      return c.json(await engine.listEntries(kind), 200);
    });
    app.openapi(routes.get, async (c) => {
      requireAdmin(c.get('caller'), kind);
      const { name, version } = c.req.valid('query');
      return c.json(await engine.getEntry(kind, name, version), 200);
    });
  }
}
