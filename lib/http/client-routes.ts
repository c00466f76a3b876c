/**
 * The client-driven routes and the event stream of the HTTP API: each handler hands the body to
 * one engine use case (which parses it, so that a refused turn outcome keeps its reason code)
 * and answers its result, its run made public (no storage key, lib/contracts/public-run.ts).
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs"; "over HTTP, WebSocket"
 * (the events as server-sent events).
 */

import { LastEventIdHeader, MAX_WAIT_SECONDS } from '../contracts/http-params.ts';
import type { RunEvent } from '../contracts/index.ts';
import { withPublicRun } from '../contracts/public-run.ts';
import { quotaKeyOf } from '../core/principal.ts';
import type { Engine } from '../engine/engine.ts';
import { HttpError } from './errors.ts';
import { callerOf, type HttpApp, jsonBody } from './middleware.ts';
import {
  beginOperationRoute,
  completeRunRoute,
  eventStreamRoute,
  failRunRoute,
  leaseRoute,
  openRequestRoute,
  releaseLeaseRoute,
  reportOutcomeRoute,
  takeLeaseRoute,
  takeSteersRoute,
} from './routes.ts';
import { inWaitSlot, type WaitSlots, waitBudgetMs } from './wait-slots.ts';

/** How long an EventSource waits before it reconnects after a response ended (ms). */
export const SSE_RETRY_MS = 500;

/** One server-sent event: `id` (the seq), `event` and one line of JSON data. */
export function sseEvent(event: string, data: unknown, id?: number): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The client-driven routes (every write fenced) and `GET /runs/{id}/events/stream`, whose
 * response (wait > 0) holds one of the caller's `waits` slots while it waits.
 */
export function registerClientRoutes(
  app: HttpApp,
  engine: Engine,
  pollIntervalMs: number,
  waits: WaitSlots,
): void {
  // The route validates the body with the contract's schema; the engine parses it again (one
  // schema, and a turn outcome keeps its reason code).
  const c = engine.client;
  app.openapi({ ...takeLeaseRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.takeLease(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...releaseLeaseRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.releaseLease(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...beginOperationRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.beginOperation(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...reportOutcomeRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.reportOutcome(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...openRequestRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.openRequest(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...takeSteersRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.takeSteers(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...completeRunRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.completeRun(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );
  app.openapi({ ...failRunRoute, middleware: [jsonBody] }, async (ctx) =>
    ctx.json(
      withPublicRun(await c.failRun(ctx.req.valid('param').id, ctx.req.valid('json'), callerOf(ctx))),
      200,
    ),
  );

  app.openapi(leaseRoute, async (c) =>
    c.json(await engine.client.inspectLease(c.req.valid('param').id, callerOf(c)), 200),
  );

  app.openapi(eventStreamRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { after, limit, wait } = c.req.valid('query');
    const header = c.req.header('last-event-id');
    // A Last-Event-ID is a seq this stream sent, parsed exactly as `after=` is (plain decimal
    // digits, 1..15 of them): `0x5`, `+4`, `4e0`, `3.0`, an empty value are refused.
    const parsedId = header === undefined ? undefined : LastEventIdHeader.safeParse(header);
    if (parsedId !== undefined && !parsedId.success) {
      throw new HttpError('validation_failed', 'Last-Event-ID is not a seq this stream sent', {
        target: 'header',
        issues: [{ path: 'last-event-id', message: 'expected a whole number in decimal digits, 0 or more' }],
      });
    }
    const from = Math.max(parsedId?.data ?? 0, after);
    const caller = callerOf(c);
    const waitMs = waitBudgetMs(Math.min(wait, MAX_WAIT_SECONDS) * 1000, c.env);
    const page = await inWaitSlot(waits, quotaKeyOf(caller.principal), waitMs, () =>
      engine.eventPage(id, caller, { after: from, limit, waitMs, pollIntervalMs, signal: c.req.raw.signal }),
    );
    const settled = page.settled && page.next_after >= page.last_seq;
    if (settled && page.events.length === 0 && from >= page.last_seq) return c.body(null, 204);
    let text = `retry: ${SSE_RETRY_MS}\n\n`;
    for (const e of page.events as RunEvent[]) text += sseEvent('run_event', e, e.seq);
    if (settled) text += sseEvent('settled', { last_seq: page.last_seq, status: page.status });
    return c.body(text, 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  });
}
