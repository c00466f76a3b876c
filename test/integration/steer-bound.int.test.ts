/**
 * Bounded steer queues over the HTTP API: a run holds at most
 * `max_queued_steers` queued steers (AGENT_RUNS_MAX_QUEUED_STEERS); one more is acknowledged
 * `rejected` `steer_queue_full` and logged as control_rejected, and the queue is unchanged; a
 * steer is accepted again once the run has taken one. Another user's steer is a 404 that writes
 * nothing. On DynamoDB Local; a client-driven run, so nothing consumes steers but the test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';

let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('steer-bound', { admission: { max_queued_steers: 2 } }));
  app = createHttpApp({
    ...runtime,
    auth: anyOf(
      bearerTokenAuth('alice-token', { kind: 'user', id: 'steer-bound-alice' }),
      bearerTokenAuth('bob-token', { kind: 'user', id: 'steer-bound-bob' }),
    ),
    log: () => {},
  });
});

afterAll(() => runtime.close());

async function send(token: string, method: string, path: string, body?: unknown) {
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const steer = (n: number) => ({ control_id: `steer-${n}`, command: 'steer', input: { text: `steer ${n}` } });

describe('a run’s steer queue', () => {
  it('refuses a steer past the bound with steer_queue_full, and takes one again once a steer is consumed', async () => {
    const created = await send('alice-token', 'POST', '/runs', {
      subject: uniqueSubject('steer-bound-alice'),
      input: 'go',
    });
    expect(created.status).toBe(201);
    const runId = (created.body.run as RunRecord).run_id;
    const controls = `/runs/${encodeURIComponent(runId)}/controls`;

    expect((await send('alice-token', 'POST', controls, steer(1))).body).toMatchObject({ ack: 'applied' });
    expect((await send('alice-token', 'POST', controls, steer(2))).body).toMatchObject({ ack: 'applied' });
    const full = await send('alice-token', 'POST', controls, steer(3));
    expect(full.body).toMatchObject({ ack: 'rejected', reason: 'steer_queue_full' });
    const run = (await send('alice-token', 'GET', `/runs/${encodeURIComponent(runId)}`))
      .body as unknown as RunRecord;
    expect(run.queued_steers.map((s) => s.control_id)).toEqual(['steer-1', 'steer-2']);

    // Bob may not steer alice's run: the answer of an unknown run, nothing written.
    const bob = await send('bob-token', 'POST', controls, steer(4));
    expect(bob.status).toBe(404);
    const after = (await send('alice-token', 'GET', `/runs/${encodeURIComponent(runId)}`))
      .body as unknown as RunRecord;
    expect(after.version).toBe(run.version);

    // The client takes the queued steers (client-driven: lease, then take); the queue has room again.
    const lease = await send('alice-token', 'POST', `/runs/${encodeURIComponent(runId)}/lease`, {
      owner: 'loop-1',
    });
    expect(lease.status).toBe(200);
    const grant = lease.body.lease as { owner: string; epoch: number };
    const taken = await send('alice-token', 'POST', `/runs/${encodeURIComponent(runId)}/steers/take`, {
      fence: { owner: grant.owner, epoch: grant.epoch },
    });
    expect(taken.status).toBe(200);
    expect((taken.body.steers as { input: unknown }[]).map((s) => s.input)).toEqual([
      { text: 'steer 1' },
      { text: 'steer 2' },
    ]);
    expect((await send('alice-token', 'POST', controls, steer(5))).body).toMatchObject({ ack: 'applied' });
  });
});
