/**
 * One set of parameter schemas: every route's path and query parameters are schema
 * objects of lib/contracts/http-params.ts, and the client checks its own parameters with those
 * very objects before it sends anything: a refused call is never sent, fails with ApiError
 * `validation_failed` (status 0, not retryable), and carries the details the API answers for
 * the same request.
 */
import { describe, expect, it } from 'vitest';
import { ApiError, createClient } from '../../lib/client/index.ts';
import * as params from '../../lib/contracts/http-params.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { ROUTE_DEFINITIONS } from '../../lib/http/routes.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';

const app = createHttpApp({
  engine: {} as Engine,
  functions: new InMemoryFunctionRegistry(),
  tools: { list: () => [] },
  auth: bearerTokenAuth('t'),
  log: () => {},
});

/** A client whose every request is counted before the app answers it. */
function countingClient() {
  const sent: string[] = [];
  const client = createClient({
    baseUrl: 'http://api.test',
    token: 't',
    fetch: (request) => {
      sent.push(`${request.method} ${new URL(request.url).pathname}${new URL(request.url).search}`);
      return app.fetch(request);
    },
  });
  return { client, sent };
}

/** The ApiError `act` rejects with. */
async function refusal(act: () => Promise<unknown>): Promise<ApiError> {
  const err = await act().then(
    () => new Error('resolved'),
    (e: unknown) => e,
  );
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
}

/** The details of the API's own answer to `path` (a 400 validation_failed). */
async function apiDetails(path: string): Promise<unknown> {
  const response = await app.request(path, { headers: { authorization: 'Bearer t' } });
  expect(response.status).toBe(400);
  const body = (await response.json()) as { code: string; details: unknown };
  expect(body.code).toBe('validation_failed');
  return body.details;
}

describe('the parameter schemas', () => {
  it("are lib/contracts/http-params.ts's own objects on every route that has parameters", () => {
    const shared = new Set<unknown>(Object.values(params));
    const used = ROUTE_DEFINITIONS.flatMap((route) => {
      const request = (route as { request?: { params?: unknown; query?: unknown } }).request;
      return [request?.params, request?.query].filter((s) => s !== undefined);
    });
    expect(used.length).toBeGreaterThanOrEqual(30);
    expect(used.filter((s) => !shared.has(s))).toEqual([]);
  });
});

describe("the client's own parameter check", () => {
  it('refuses parameters the route would refuse, sends nothing, and says what the API would', async () => {
    const { client, sent } = countingClient();
    const cases: [() => Promise<unknown>, string][] = [
      [() => client.listRunEvents('r1', { limit: 0 }), '/runs/r1/events?limit=0'],
      [() => client.listRunEvents('r1', { wait: 21 }), '/runs/r1/events?wait=21'],
      [() => client.getRunState('r1', { rev: -1 }), '/runs/r1/state?rev=-1'],
      [() => client.listRuns({ limit: 10 }), '/runs?limit=10'],
      [() => client.getRunAtSeq('r1', 0), '/runs/r1/at/0'],
      [() => client.getToolEntry(''), '/admin/tools/entry?name='],
    ];
    for (const [act, path] of cases) {
      const err = await refusal(act);
      expect(err, path).toMatchObject({ code: 'validation_failed', status: 0, retryable: false });
      expect(err.details, path).toEqual(await apiDetails(path));
    }
    expect(sent).toEqual([]);
  });

  it('checks path parameters, the delivery id and the event stream too', async () => {
    const { client, sent } = countingClient();
    const longId = 'x'.repeat(201);

    const getRun = await refusal(() => client.getRun(longId));
    const checkpoint = await refusal(() => client.getRunCheckpoint('r1', 1.5));
    const delivery = await refusal(() => client.deliverResult('key', {}, { delivery_id: 'a b' }));
    const lease = await refusal(() => client.getLease(''));
    const stream = await refusal(() => client.streamRunEvents('r1', { wait: 30 }).next());
    const fn = await refusal(() => client.getFunction('/a/../b'));

    expect(getRun.details).toMatchObject({ target: 'param', issues: [{ path: 'id' }] });
    expect(getRun.message).toMatch(/^invalid request: path parameter id: /);
    expect(checkpoint.details).toMatchObject({ target: 'param', issues: [{ path: 'n' }] });
    expect(delivery.details).toMatchObject({ target: 'query', issues: [{ path: 'delivery_id' }] });
    expect(lease.details).toMatchObject({ target: 'param', issues: [{ path: 'id' }] });
    expect(stream.details).toMatchObject({ target: 'query', issues: [{ path: 'wait' }] });
    expect(fn.details).toMatchObject({ target: 'param', issues: [{ path: 'path' }] });
    expect(sent).toEqual([]);
  });

  it('sends parameters the route accepts, as before', async () => {
    const { client, sent } = countingClient();
    // The engine behind this app is empty: any answer past validation is an error of its own.
    await refusal(() => client.listRunEvents('r1', { after: 3, limit: 5, wait: 0.5 }));
    await refusal(() => client.deliverResult('k:1', {}, { delivery_id: 'd-1' }));
    expect(sent).toEqual([
      'GET /runs/r1/events?after=3&limit=5&wait=0.5',
      'POST /results/k%3A1?delivery_id=d-1',
    ]);
  });
});
