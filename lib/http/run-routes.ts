/**
 * The run routes of the HTTP API: each handler parses its input with the route's schema, calls
 * one engine use case, and maps the result (a run record or checkpoint made public: no storage
 * key, lib/contracts/public-run.ts). docs/contracts/run-lifecycle.md, "Controls".
 */

import { MAX_WAIT_SECONDS } from '../contracts/http-params.ts';
import { publicCheckpoint, publicRun, withPublicRun } from '../contracts/public-run.ts';
import { quotaKeyOf } from '../core/principal.ts';
import type { Engine } from '../engine/engine.ts';
import { callerOf, creatorOf, type HttpApp, jsonBody } from './middleware.ts';
import {
  checkpointRoute,
  checkpointsRoute,
  childrenRoute,
  controlRoute,
  createRunRoute,
  deliverRoute,
  eventsRoute,
  forkRoute,
  getRunRoute,
  listRunsRoute,
  runAtRoute,
  stateRoute,
} from './routes.ts';
import { inWaitSlot, type WaitSlots, waitBudgetMs } from './wait-slots.ts';

/**
 * The run routes: create, list, read, events (long poll), checkpoints, state, fork, children,
 * controls, results. A long poll (wait > 0) holds one of the caller's `waits` slots while it
 * waits (429 too_many_waits past the bound, nothing read).
 */
export function registerRunRoutes(
  app: HttpApp,
  engine: Engine,
  pollIntervalMs: number,
  waits: WaitSlots,
): void {
  app.openapi({ ...createRunRoute, middleware: [jsonBody] }, async (c) => {
    const out = await engine.createRun(c.req.valid('json'), creatorOf(c));
    return c.json(withPublicRun(out), out.created ? 201 : 200);
  });

  app.openapi(listRunsRoute, async (c) => {
    const q = c.req.valid('query');
    const page = await engine.listRuns(q, callerOf(c));
    return c.json({ ...page, runs: page.runs.map(publicRun) }, 200);
  });

  app.openapi(getRunRoute, async (c) => {
    const run = await engine.getRun(c.req.valid('param').id, callerOf(c));
    return c.json(publicRun(run), 200);
  });

  app.openapi(eventsRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { after, limit, wait } = c.req.valid('query');
    const caller = callerOf(c);
    const waitMs = waitBudgetMs(Math.min(wait, MAX_WAIT_SECONDS) * 1000, c.env);
    const page = await inWaitSlot(waits, quotaKeyOf(caller.principal), waitMs, () =>
      engine.eventPage(id, caller, { after, limit, waitMs, pollIntervalMs, signal: c.req.raw.signal }),
    );
    return c.json(page, 200);
  });

  app.openapi(checkpointsRoute, async (c) => {
    const checkpoints = await engine.listCheckpoints(c.req.valid('param').id, callerOf(c));
    return c.json({ checkpoints: checkpoints.map(publicCheckpoint) }, 200);
  });

  app.openapi(childrenRoute, async (c) => {
    const children = await engine.listChildren(c.req.valid('param').id, callerOf(c));
    return c.json({ children }, 200);
  });

  app.openapi(checkpointRoute, async (c) => {
    const { id, n } = c.req.valid('param');
    return c.json(publicCheckpoint(await engine.getCheckpoint(id, callerOf(c), n)), 200);
  });

  app.openapi(stateRoute, async (c) => {
    const { rev } = c.req.valid('query');
    return c.json(await engine.getState(c.req.valid('param').id, callerOf(c), rev), 200);
  });

  app.openapi(runAtRoute, async (c) => {
    const { id, seq } = c.req.valid('param');
    return c.json(await engine.getRunAt(id, callerOf(c), seq), 200);
  });

  app.openapi({ ...forkRoute, middleware: [jsonBody] }, async (c) => {
    const out = await engine.forkRun(c.req.valid('param').id, c.req.valid('json'), creatorOf(c));
    return c.json(withPublicRun(out), out.created ? 201 : 200);
  });

  app.openapi({ ...controlRoute, middleware: [jsonBody] }, async (c) => {
    const ack = await engine.applyControl(c.req.valid('param').id, c.req.valid('json'), callerOf(c));
    return c.json(ack, 200);
  });

  app.openapi({ ...deliverRoute, middleware: [jsonBody] }, async (c) => {
    const { delivery_id } = c.req.valid('query');
    const key = c.req.valid('param').resume_key;
    const out = await engine.deliverResult(key, c.req.valid('json'), callerOf(c), delivery_id);
    return out.ack === 'held' ? c.json(out, 202) : c.json(out, 200);
  });
}
