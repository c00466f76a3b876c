/**
 * The clock-skew allowance at its edge: a run created and driven through the
 * HTTP API holds a lease written with the worker's clock; a sweeper whose clock runs ahead takes
 * it over only once its clock reads `expires_at + allowance` (default: a third of the lease, 30 s
 * of 90 s), not a millisecond sooner. Heartbeats are a minute apart here, so the lease is not
 * renewed while the test runs.
 *
 * Worker and sweeper share a table of their own: on the table every integration file shares, a
 * sweeper two minutes ahead would take over (and count) any other file's leased run in the same
 * shard, and fence out that file's live workers.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AwsClients, createAwsClients } from '../../lib/aws-clients.ts';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { LEASE_TTL_MS } from '../../lib/core/run-machine.ts';
import { defaultClockSkewMs } from '../../lib/core/sweeper.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { createTableInput } from '../../lib/store/table.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { shardOfRun } from '../support/faults.ts';
import { localRuntime, until } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const TOKEN = 'skew-token';
let worker: Runtime;
let sweeper: Runtime;
let app: HttpApp;
/** What the sweeper's clock reads, in ms since the epoch (set by the test). */
let sweeperNow = 0;
let release: () => void = () => {};
const tableName = `clock-skew-${randomUUID()}`;
let clients: AwsClients;

beforeAll(async () => {
  clients = createAwsClients(inject('localServices'));
  await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  ({ runtime: worker } = await localRuntime('clock-skew', {
    tableName,
    heartbeatMs: 60_000,
    reducers: inProcessReducers({ '/r/held': toolLoop(1, 'held') }),
    registerTools(registry) {
      registry.register({
        name: 'held',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: () => new Promise((resolve) => (release = () => resolve({ ok: true }))),
        },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 120_000 },
      });
    },
  }));
  ({ runtime: sweeper } = await localRuntime('clock-skew-sweeper', {
    tableName,
    clock: { now: () => sweeperNow },
    reducers: inProcessReducers({ '/r/held': toolLoop(1, 'held') }),
  }));
  app = createHttpApp({
    ...worker,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'kai' }),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(async () => {
  release();
  worker.close();
  sweeper.close();
  await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  clients.destroy();
});

async function read(runId: string): Promise<RunRecord> {
  return (await (
    await app.request(`/runs/${runId}`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as RunRecord;
}

describe('clock-skew allowance', () => {
  it('takes over a live lease only once the sweeper’s clock passes expires_at by the allowance', async () => {
    const allowance = defaultClockSkewMs(LEASE_TTL_MS);
    expect(allowance).toBe(30_000);
    const response = await app.request('/runs', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ subject: uniqueSubject('kai'), reducer: { function_path: '/r/held' } }),
    });
    const { run } = (await response.json()) as { run: RunRecord };
    const step = worker.engine.stepRun(run.run_id);
    const held = await until(
      () => read(run.run_id),
      (r) => r.operation?.started_at != null,
      10_000,
      20,
    );
    const lease = held.lease;
    if (lease === null) throw new Error('no lease');

    // One millisecond inside the allowance: the sweeper leaves the live worker alone.
    sweeperNow = lease.expires_at + allowance - 1;
    expect((await sweeper.engine.sweep(shardOfRun(run.run_id))).taken_over).toBe(0);
    expect(await read(run.run_id)).toMatchObject({ status: 'running', epoch: held.epoch, lease });

    // At the allowance: taken over (a worker whose clock is this far behind is presumed dead).
    sweeperNow = lease.expires_at + allowance;
    expect((await sweeper.engine.sweep(shardOfRun(run.run_id))).taken_over).toBe(1);
    const after = await read(run.run_id);
    expect(after.epoch).toBe(held.epoch + 1);
    const page = (await (
      await app.request(`/runs/${run.run_id}/events`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { events: RunEvent[] };
    expect(page.events.some((e) => e.kind === 'lease_taken_over')).toBe(true);

    // The old worker finishes its call and is fenced out: it writes nothing more.
    release();
    expect(await step).toEqual({ kind: 'fenced' });
  });
});
