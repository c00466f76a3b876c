/**
 * Who may fork a run and read its domain state, through the HTTP API on DynamoDB Local and
 * fauxqs, with the users alice, bob and carol: the rules of every read (core/authority.ts's accessOf):
 * a stranger gets 404 run_not_found, a wrong capability 403 capability_invalid to a caller who may
 * see the run; whoever holds the capability may fork, and the fork is theirs; a fork is admitted
 * like a create (429 quota_exceeded past the caller's live-run quota). A refused fork writes
 * nothing. docs/contracts/run-lifecycle.md, "Checkpoints", "Subject, principal and admission".
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, subjectIn } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce } from '../support/reducers.ts';
import { grantWorkspace } from '../support/workspace-grants.ts';

// Ids of this file's own: quota items are per principal in the table other test files share.
const tag = randomUUID().slice(0, 8);
const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: `alice-${tag}` },
  bob: { kind: 'user', id: `bob-${tag}` },
  carol: { kind: 'user', id: `carol-${tag}` },
};
type Who = 'alice' | 'bob' | 'carol';

let runtime: Runtime;
let app: HttpApp;
/** A workspace granted to every user of the test (workspaces are owned). */
let shared: string;

beforeAll(async () => {
  ({ runtime } = await localRuntime('fork-authority', {
    reducers: inProcessReducers({ '/r/ask': askOnce() }),
    admission: { max_live_runs: 1 },
  }));
  app = createHttpApp({
    ...runtime,
    auth: anyOf(
      ...Object.keys(PRINCIPALS).map((w) => bearerTokenAuth(`t-${w}`, PRINCIPALS[w], { admin: false })),
    ),
    pollIntervalMs: 50,
    log: () => {},
  });
  shared = await grantWorkspace(runtime.engine, {
    users: Object.values(PRINCIPALS).flatMap((p) => (p.kind === 'user' ? [p.id] : [])),
  });
});

/** A fresh subject in the shared workspace. */
const uniqueSubject = () => subjectIn(shared);

afterAll(() => runtime.close());

async function call(who: Who, method: string, path: string, body?: unknown, capability?: string) {
  const headers: Record<string, string> = { authorization: `Bearer t-${who}` };
  if (capability !== undefined) headers['x-control-capability'] = capability;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await app.request(path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A run of `who`'s waiting on its question, then paused: checkpoint 1. */
async function pausedRun(who: Who): Promise<{ runId: string; capability: string }> {
  const created = await call(who, 'POST', '/runs', {
    subject: uniqueSubject(),
    reducer: { function_path: '/r/ask' },
    input: 'which flight?',
  });
  expect(created.status).toBe(201);
  const runId = (created.body.run as RunRecord).run_id;
  await runtime.engine.stepRun(runId);
  const paused = await call(who, 'POST', `/runs/${runId}/controls`, { control_id: 'p', command: 'pause' });
  expect(paused.body).toMatchObject({ ack: 'applied' });
  expect((await call(who, 'GET', `/runs/${runId}/checkpoints/1`)).status).toBe(200);
  return { runId, capability: String(created.body.control_capability) };
}

/** How many queued runs `who` may see (a fork starts queued). */
async function queued(who: Who): Promise<number> {
  const listed = await call(who, 'GET', '/runs?status=queued&limit=100');
  return (listed.body.runs as unknown[]).length;
}

describe('forks and state reads over HTTP', () => {
  it('answers a stranger 404 and a wrong capability 403, writing nothing; a capability holder forks for itself', async () => {
    const { runId, capability } = await pausedRun('alice');
    const fork = { checkpoint: 1, subject: uniqueSubject() };
    const before = { alice: await queued('alice'), bob: await queued('bob') };
    expect(await call('bob', 'GET', `/runs/${runId}/state`)).toMatchObject({
      status: 404,
      body: { code: 'run_not_found' },
    });
    expect(await call('bob', 'POST', `/runs/${runId}/fork`, fork)).toMatchObject({
      status: 404,
      body: { code: 'run_not_found' },
    });
    expect(await call('bob', 'POST', `/runs/${runId}/fork`, fork, 'not-it')).toMatchObject({
      status: 404,
      body: { code: 'run_not_found' },
    });
    expect(await call('alice', 'POST', `/runs/${runId}/fork`, fork, 'not-it')).toMatchObject({
      status: 403,
      body: { code: 'capability_invalid' },
    });
    expect(await call('alice', 'GET', `/runs/${runId}/state?rev=1`, undefined, 'not-it')).toMatchObject({
      status: 403,
      body: { code: 'capability_invalid' },
    });
    expect({ alice: await queued('alice'), bob: await queued('bob') }).toEqual(before);

    expect(await call('bob', 'GET', `/runs/${runId}/state?rev=1`, undefined, capability)).toMatchObject({
      status: 200,
      body: { run_id: runId, state_rev: 1 },
    });
    const forked = await call('bob', 'POST', `/runs/${runId}/fork`, fork, capability);
    expect(forked).toMatchObject({
      status: 201,
      body: { created: true, run: { principal: PRINCIPALS.bob, origin: { run_id: runId } } },
    });
    const forkId = (forked.body.run as RunRecord).run_id;
    expect((await call('bob', 'GET', `/runs/${forkId}`)).status).toBe(200);
    expect((await call('alice', 'GET', `/runs/${forkId}`)).status).toBe(404);
  });

  it("refuses a fork past the caller's live-run quota with 429 quota_exceeded, writing nothing", async () => {
    // carol's paused run holds her one live-run slot: a fork would be her second live run.
    const { runId } = await pausedRun('carol');
    const refused = await call('carol', 'POST', `/runs/${runId}/fork`, {
      checkpoint: 1,
      subject: uniqueSubject(),
    });
    expect(refused).toMatchObject({
      status: 429,
      body: { code: 'quota_exceeded', details: { limit: 'max_live_runs' } },
    });
    expect(await queued('carol')).toBe(0);
  });
});
