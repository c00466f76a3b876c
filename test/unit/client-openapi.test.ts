/**
 * The client and the OpenAPI document agree: every operationId of `GET /openapi.json` is a
 * method of the client, and the schema the client parses each JSON answer with (operations.ts)
 * is the very schema object the route documents and validates with, for every success status.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createClient, OPERATION_ANSWERS } from '../../lib/client/index.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { ROUTE_DEFINITIONS } from '../../lib/http/routes.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';

const app = createHttpApp({
  engine: {} as Engine,
  functions: new InMemoryFunctionRegistry(),
  tools: { list: () => [] },
  auth: bearerTokenAuth('t'),
});

interface RouteLike {
  operationId?: string;
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
type Answers = Readonly<Record<string, Readonly<Record<number, unknown>>>>;

/** The JSON schema of each success answer of `route`, by status. */
function documentedAnswers(route: RouteLike): Map<number, unknown> {
  const out = new Map<number, unknown>();
  for (const [status, response] of Object.entries(route.responses)) {
    const schema = response.content?.['application/json']?.schema;
    if (/^2\d\d$/.test(status) && schema !== undefined) out.set(Number(status), schema);
  }
  return out;
}

/** Every (operationId, status) where the client's answer schema is not the route's own object. */
function disagreements(routes: readonly RouteLike[], answers: Answers): string[] {
  const out: string[] = [];
  for (const route of routes) {
    const id = route.operationId ?? '(no operationId)';
    const client = answers[id];
    if (client === undefined) {
      out.push(`${id}: no entry in the client`);
      continue;
    }
    const documented = documentedAnswers(route);
    for (const [status, schema] of documented) {
      if (client[status] !== schema) out.push(`${id} ${status}: not the route's schema object`);
    }
    for (const status of Object.keys(client).map(Number)) {
      if (!documented.has(status)) out.push(`${id} ${status}: the route documents no such JSON answer`);
    }
  }
  return out;
}

async function documentOperationIds(): Promise<string[]> {
  const response = await app.request('/openapi.json');
  expect(response.status).toBe(200);
  const doc = (await response.json()) as { paths: Record<string, Record<string, { operationId?: string }>> };
  return Object.values(doc.paths).flatMap((item) =>
    Object.values(item).flatMap((op) => (typeof op.operationId === 'string' ? [op.operationId] : [])),
  );
}

const routes = ROUTE_DEFINITIONS as readonly RouteLike[];

describe('the client and GET /openapi.json', () => {
  it('has a method named after every operationId of the document, and an answer entry for each', async () => {
    const ids = await documentOperationIds();
    expect(ids.length).toBeGreaterThanOrEqual(37);
    const client = createClient({ baseUrl: 'http://api.test' }) as unknown as Record<string, unknown>;
    expect(ids.filter((id) => typeof client[id] !== 'function')).toEqual([]);
    expect(Object.keys(OPERATION_ANSWERS).sort()).toEqual([...ids].sort());
    // The route definitions the next check reads are the document's operations, all of them.
    expect(routes.map((r) => r.operationId).sort()).toEqual([...ids].sort());
  });

  it('parses every JSON answer with the very schema object its route documents', () => {
    const checked = routes.reduce((n, route) => n + documentedAnswers(route).size, 0);
    expect(checked).toBeGreaterThanOrEqual(40);
    expect(disagreements(routes, OPERATION_ANSWERS)).toEqual([]);
  });

  it('reports an answer schema that is only a copy, and a status the route does not answer', () => {
    const Health = OPERATION_ANSWERS.getHealth[200];
    const copy = z.object({ status: z.literal('ok') });
    const health = routes.filter((r) => r.operationId === 'getHealth');
    expect(health).toHaveLength(1);
    expect(disagreements(health, { getHealth: { 200: copy } })).toEqual([
      "getHealth 200: not the route's schema object",
    ]);
    expect(disagreements(health, { getHealth: { 200: Health, 201: Health } })).toEqual([
      'getHealth 201: the route documents no such JSON answer',
    ]);
    expect(disagreements(health, {})).toEqual(['getHealth: no entry in the client']);
  });

  it('keeps each old method name as the same function as its operationId name', () => {
    const client = createClient({ baseUrl: 'http://api.test' });
    expect(client.events).toBe(client.listRunEvents);
    expect(client.checkpoints).toBe(client.listRunCheckpoints);
    expect(client.reportOutcome).toBe(client.reportOperationOutcome);
    expect(client.lease).toBe(client.getLease);
  });
});
