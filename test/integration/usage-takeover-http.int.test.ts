/**
 * Usage that survives a takeover, through the HTTP API on DynamoDB Local and fauxqs, with two
 * users: alice creates a run (POST /runs) whose reducer asks for one model turn, against a
 * provider that answers 429 (retryable) every time. Worker A of a worker slot makes the first
 * request and dies in its backoff; worker B of the same slot (its restarted process) takes the
 * run over and continues the turn's retry budget (3 calls) instead of starting it again: exactly
 * 3 requests reach the provider, and alice reads usage.model_calls 3, model_retries 2, the run
 * paused provider_outage:rate_limited and lease_taken_over in its events. Bob gets for alice's
 * run, and its events, the same 404 as for a run id that does not exist: no usage leaks.
 * The engine-level twin (memory store, one principal): test/engine/provider-calls.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { createEngine } from '../../lib/engine/engine.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { createModelHost } from '../../lib/models/host.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { SimulatedCrash } from '../support/faults.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { modelOnce } from '../support/reducers.ts';

/** Three calls per turn, retries included (the default count), with short backoffs. */
const RETRY = { attempts: 3, baseMs: 1, maxDelayMs: 5 };
const MODEL = '/m/throttled';
const reducers = inProcessReducers({ '/r/model': modelOnce() });
let runtime: Runtime;
let app: HttpApp;

/** The provider: answers every request 429; `requests` counts what reached it. */
let requests = 0;
const throttled: ModelTurnFunction = async () => {
  requests += 1;
  return { error_class: 'rate_limited', message: 'HTTP 429', retryable: true, retry_after_ms: 1 };
};

beforeAll(async () => {
  ({ runtime } = await localRuntime('usage-takeover', {
    reducers,
    modelFunctions: { [MODEL]: throttled },
    defaultModelFunction: MODEL,
    modelRetry: RETRY,
  }));
  const auth = anyOf(
    bearerTokenAuth('alice-token', { kind: 'user', id: 'alice' }),
    bearerTokenAuth('bob-token', { kind: 'user', id: 'bob' }),
  );
  app = createHttpApp({ ...runtime, auth, pollIntervalMs: 50, log: () => {} });
});

afterAll(() => runtime.close());

async function call(who: 'alice' | 'bob', method: string, path: string, body?: unknown) {
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${who}-token`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A worker process of `slot` on the runtime's store and queue, its model host backing off with `sleep`. */
function worker(slot: string, sleep: () => Promise<void>) {
  return createEngine({
    store: runtime.store,
    queue: runtime.queue,
    clock: { now: () => Date.now() },
    reducers,
    tools: runtime.tools,
    registries: runtime.registries,
    models: createModelHost({ functions: { [MODEL]: throttled }, default: MODEL, retry: RETRY, sleep }),
    workerSlot: slot,
    log: () => {},
  });
}

describe('usage across a takeover, over HTTP', () => {
  it('counts every request and continues the retry budget; bob learns nothing', async () => {
    // Prepare: alice creates the run; worker A makes one request (429) and dies in its backoff.
    const created = await call('alice', 'POST', '/runs', {
      subject: uniqueSubject('alice'),
      reducer: { function_path: '/r/model' },
      input: 'go',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const runId = (created.body.run as RunRecord).run_id;
    const slot = `box-${randomUUID()}`;
    const before = requests;
    const a = worker(slot, () => Promise.reject(new SimulatedCrash('dead')));
    await expect(a.stepRun(runId)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(requests - before).toBe(1);

    // Act: the slot's restarted process takes the run over and dispatches the turn again.
    await new Promise((r) => setTimeout(r, 5)); // a later start than A's: a new incarnation
    const b = worker(slot, async () => {});
    expect(await b.stepRun(runId)).toMatchObject({ kind: 'progressed', status: 'paused' });

    // Assess, as alice: the budget continued (3 requests in all), every one counted.
    expect(requests - before).toBe(RETRY.attempts);
    const read = await call('alice', 'GET', `/runs/${runId}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      status: 'paused',
      pause_reason: 'provider_outage:rate_limited',
      usage: { model_calls: RETRY.attempts, model_retries: RETRY.attempts - 1 },
    });
    const log = await call('alice', 'GET', `/runs/${runId}/events`);
    expect(log.status).toBe(200);
    const kinds = (log.body.events as RunEvent[]).map((e) => e.kind);
    expect(kinds).toContain('lease_taken_over');
    expect(kinds.indexOf('lease_taken_over')).toBeLessThan(kinds.indexOf('provider_outage'));

    // Bob: alice's run and its events answer as a run that does not exist, without the usage.
    const madeUp = `run_${randomUUID().replaceAll('-', '')}`;
    for (const path of ['', '/events']) {
      const theirs = await call('bob', 'GET', `/runs/${runId}${path}`);
      const nobodys = await call('bob', 'GET', `/runs/${madeUp}${path}`);
      expect(theirs.status).toBe(404);
      expect({ status: theirs.status, code: theirs.body.code }).toEqual({
        status: nobodys.status,
        code: nobodys.body.code,
      });
      expect(theirs.body.code).toBe('run_not_found');
      expect(JSON.stringify(theirs.body)).not.toMatch(/model_calls|usage|provider_outage/);
    }
  });
});
