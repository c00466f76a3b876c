/**
 * Who may do what, through the HTTP API on DynamoDB Local and fauxqs, with three principals
 * (the users alice and bob, and the agent `planner` acting for alice) and a system caller:
 * visibility of runs, listings, controls that write nothing, subject_busy, capabilities (never
 * ignored, never stored or shown), create keys per acting user, on_behalf_of for system callers
 * only, admission quotas (429 quota_exceeded) and the risk tier recorded at admission.
 * docs/contracts/run-lifecycle.md, "Controls", "Subject, principal and admission";
 * docs/architecture.md, "The seams of a step", "admission". docs/guides/who-may-do-what.md states
 * these rules.
 */
import { randomUUID } from 'node:crypto';
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Principal, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, subjectIn } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce } from '../support/reducers.ts';
import { grantWorkspace } from '../support/workspace-grants.ts';

const local = inject('localServices');
const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: 'alice' },
  bob: { kind: 'user', id: 'bob' },
  planner: { kind: 'agent', id: 'planner', on_behalf_of: 'alice' },
  carol: { kind: 'user', id: 'carol' },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

let runtime: Runtime;
let app: HttpApp;
let quotaRuntime: Runtime;
let quotaApp: HttpApp;
/** The quota runtime's clock runs this far ahead of Date.now() (ms): a test can start a minute. */
let clockOffset = 0;
/** The workspace the users share. */
let shared: string;
/** Every log line the runtime and the app wrote, as JSON text. */
const logLines: string[] = [];

function appOver(rt: Runtime, tag: string): HttpApp {
  const users = Object.keys(PRINCIPALS).map((who) =>
    bearerTokenAuth(`${tag}-${who}`, PRINCIPALS[who], { admin: false }),
  );
  return createHttpApp({
    ...rt,
    auth: anyOf(...users),
    pollIntervalMs: 50,
    log: (e) => logLines.push(JSON.stringify(e)),
  });
}

beforeAll(async () => {
  const log = (e: Record<string, unknown>) => logLines.push(JSON.stringify(e));
  ({ runtime } = await localRuntime('authority', {
    heartbeatMs: 100,
    log,
    reducers: inProcessReducers({ '/r/ask': askOnce() }),
  }));
  app = appOver(runtime, 'main');
  ({ runtime: quotaRuntime } = await localRuntime('authority-quota', {
    log,
    clock: { now: () => Date.now() + clockOffset },
    admission: { max_live_runs: 2, max_creates_per_minute: 4, risk_tier_floor: 'standard' },
  }));
  quotaApp = appOver(quotaRuntime, 'quota');
  // One workspace all three users share (granted by an operator), so that they can meet on a subject.
  shared = await grantWorkspace(runtime.engine, { users: ['alice', 'bob', 'carol'] });
});

/** A fresh subject in the workspace granted to alice, bob and carol (and so to alice's agent). */
const uniqueSubject = () => subjectIn(shared);

afterAll(() => {
  runtime.close();
  quotaRuntime.close();
});

type Options = { body?: unknown; capability?: string; app?: HttpApp; tag?: string };

function call(who: Who, method: string, path: string, options: Options = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${options.tag ?? 'main'}-${who}` };
  if (options.capability !== undefined) headers['x-control-capability'] = options.capability;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  return (options.app ?? app).request(path, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
}

const quota = (who: Who, method: string, path: string, body?: unknown) =>
  call(who, method, path, { app: quotaApp, tag: 'quota', ...(body !== undefined ? { body } : {}) });

async function create(who: Who, extra: Record<string, unknown> = {}, options: Options = {}) {
  const response = await call(who, 'POST', '/runs', {
    ...options,
    body: {
      subject: uniqueSubject(),
      reducer: { function_path: '/r/ask' },
      input: `input of ${who}`,
      ...extra,
    },
  });
  const text = await response.text();
  expect(response.status, text).toBe(201);
  return JSON.parse(text) as { run: RunRecord; control_capability: string };
}

const control = (who: Who, runId: string, command: string, options: Options = {}) =>
  call(who, 'POST', `/runs/${runId}/controls`, {
    ...options,
    body: { control_id: `c-${randomUUID()}`, command, ...(command === 'steer' ? { input: 'hi' } : {}) },
  });

async function stored(runId: string, rt = runtime): Promise<RunRecord> {
  const record = await rt.store.getRun(runId);
  if (record === null) throw new Error(`no run ${runId}`);
  return record;
}

describe('who sees a run', () => {
  it('shows a run to its principal, the user its agent acts for and system callers; to anyone else it does not exist', async () => {
    const byAlice = await create('alice');
    const byPlanner = await create('planner');
    const byBob = await create('bob');
    const sees = async (who: Who, runId: string) => (await call(who, 'GET', `/runs/${runId}`)).status;
    expect(await sees('alice', byAlice.run.run_id)).toBe(200);
    expect(await sees('alice', byPlanner.run.run_id)).toBe(200); // acts for alice
    expect(await sees('planner', byPlanner.run.run_id)).toBe(200);
    expect(await sees('planner', byAlice.run.run_id)).toBe(404); // the agent sees only its own runs
    expect(await sees('bob', byAlice.run.run_id)).toBe(404);
    expect(await sees('bob', byPlanner.run.run_id)).toBe(404);
    expect(await sees('alice', byBob.run.run_id)).toBe(404);
    expect(await sees('ops', byBob.run.run_id)).toBe(200);
    for (const path of ['events', 'checkpoints', 'children']) {
      const response = await call('bob', 'GET', `/runs/${byAlice.run.run_id}/${path}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'run_not_found' });
    }
  });

  it("lists only the runs the caller may see: bob's listing holds none of alice's or her agent's", async () => {
    const byAlice = await create('alice');
    const byPlanner = await create('planner');
    const byBob = await create('bob');
    // Every queued run the caller may list, page after page (the table holds other files' runs).
    const listed = async (who: Who) => {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page += 1) {
        const query = `status=queued&limit=100${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const response = await call(who, 'GET', `/runs?${query}`);
        expect(response.status).toBe(200);
        const body = (await response.json()) as { runs: RunRecord[]; cursor?: string };
        ids.push(...body.runs.map((r) => r.run_id));
        cursor = body.cursor;
        if (cursor === undefined) break;
      }
      return ids;
    };
    const bobs = await listed('bob');
    expect(bobs).toContain(byBob.run.run_id);
    expect(bobs).not.toContain(byAlice.run.run_id);
    expect(bobs).not.toContain(byPlanner.run.run_id);
    // A listing reads the caller's own principal's runs: her agent's run is listed to the agent,
    // and alice reads it by id (docs/guides/who-may-do-what.md).
    const alices = await listed('alice');
    expect(alices).toContain(byAlice.run.run_id);
    expect(alices).not.toContain(byPlanner.run.run_id);
    expect(alices).not.toContain(byBob.run.run_id);
    expect(await listed('planner')).toContain(byPlanner.run.run_id);
    expect((await call('alice', 'GET', `/runs/${byPlanner.run.run_id}`)).status).toBe(200);
  });

  it("refuses bob's create on alice's live subject with 409 subject_busy and reveals nothing of her run", async () => {
    const subject = uniqueSubject();
    const mine = await create('alice', { subject });
    const response = await call('bob', 'POST', '/runs', {
      body: { subject, reducer: { function_path: '/r/ask' }, input: 'x' },
    });
    expect(response.status).toBe(409);
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({ code: 'subject_busy' });
    expect(text).not.toContain(mine.run.run_id);
    expect(text).not.toContain('input of alice');
    // Her agent, acting for her, gets her live run back like she does.
    const again = await call('planner', 'POST', '/runs', {
      body: { subject, reducer: { function_path: '/r/ask' }, input: 'x' },
    });
    expect(again.status).toBe(409);
  });
});

describe('controls', () => {
  it("writes nothing into alice's run for bob's controls, whatever he sends", async () => {
    const { run } = await create('alice');
    await runtime.engine.stepRun(run.run_id);
    const before = await stored(run.run_id);
    for (const command of ['steer', 'pause', 'stop', 'resume']) {
      const response = await control('bob', run.run_id, command);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'run_not_found' });
    }
    const after = await stored(run.run_id);
    expect(after.version).toBe(before.version);
    expect(after.last_seq).toBe(before.last_seq);
  });

  it('lets whoever holds the capability act, refuses a wrong one (403 to who may see the run, 404 to others)', async () => {
    const { run, control_capability } = await create('alice');
    const held = await control('bob', run.run_id, 'steer', { capability: control_capability });
    expect(held.status).toBe(200);
    const wrongOwner = await control('alice', run.run_id, 'steer', { capability: 'not-it' });
    expect(wrongOwner.status).toBe(403);
    expect(await wrongOwner.json()).toMatchObject({ code: 'capability_invalid' });
    const wrongOther = await control('bob', run.run_id, 'steer', { capability: 'not-it' });
    expect(wrongOther.status).toBe(404);
    const ops = await control('ops', run.run_id, 'steer');
    expect(ops.status).toBe(200);
    // A capability header sent empty is refused, not read as absent.
    const empty = await control('alice', run.run_id, 'pause', { capability: '' });
    expect(empty.status).toBe(400);
    expect(JSON.stringify(await empty.json())).toContain('x-control-capability');
    expect((await stored(run.run_id)).pause_requested).toBeUndefined();
  });

  it('never writes the capability into any item of the table, event, view, listing, error or log line', async () => {
    const { run, control_capability } = await create('alice');
    await runtime.engine.stepRun(run.run_id);
    const answers: string[] = [];
    const keep = async (response: Response | Promise<Response>) =>
      answers.push(await (await response).text());
    await keep(control('bob', run.run_id, 'steer', { capability: control_capability }));
    await keep(control('alice', run.run_id, 'steer', { capability: `${control_capability}x` }));
    await keep(call('bob', 'GET', `/runs/${run.run_id}`, { capability: control_capability }));
    await keep(call('bob', 'GET', `/runs/${run.run_id}/events`, { capability: control_capability }));
    await keep(call('alice', 'GET', '/runs?status=waiting&limit=100'));
    await keep(control('alice', run.run_id, 'stop', { capability: control_capability }));
    const items = await runtime.clients.doc.send(
      new QueryCommand({
        TableName: local.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `RUN#${run.run_id}` },
        ConsistentRead: true,
      }),
    );
    // Every item of the table, not only the run's partition (subject, create-key and quota items).
    const table: unknown[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await runtime.clients.doc.send(
        new ScanCommand({ TableName: local.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
      );
      table.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    const artifacts = [JSON.stringify(items.Items), JSON.stringify(table), ...answers, ...logLines];
    expect(items.Items?.length).toBeGreaterThan(2);
    expect(table.length).toBeGreaterThanOrEqual(items.Items?.length ?? 0);
    expect(answers.length).toBe(6);
    for (const text of artifacts) expect(text).not.toContain(control_capability);
  });
});

describe('creating as someone else', () => {
  it('lets only system callers create on_behalf_of a user; the run is then that user’s', async () => {
    const refused = await call('alice', 'POST', '/runs', {
      body: { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, on_behalf_of: 'bob' },
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'unauthorized' });
    const { run } = await create('ops', { on_behalf_of: 'bob' });
    expect(run.principal).toEqual({ kind: 'user', id: 'bob' });
    expect((await call('bob', 'GET', `/runs/${run.run_id}`)).status).toBe(200);
    expect((await call('alice', 'GET', `/runs/${run.run_id}`)).status).toBe(404);
  });

  it("scopes create keys to the acting user: alice's key is not her agent's, and a reuse with another request is refused", async () => {
    const key = `key-${randomUUID()}`;
    const subject = uniqueSubject();
    const mine = await create('alice', { create_key: key, subject });
    const agents = await create('planner', { create_key: key });
    expect(agents.run.run_id).not.toBe(mine.run.run_id);
    const replay = await call('alice', 'POST', '/runs', {
      body: { subject, reducer: { function_path: '/r/ask' }, input: 'input of alice', create_key: key },
    });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toMatchObject({ created: false, run: { run_id: mine.run.run_id } });
    const reused = await call('alice', 'POST', '/runs', {
      body: { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, create_key: key },
    });
    expect(reused.status).toBe(409);
    expect(await reused.json()).toMatchObject({ code: 'create_key_reused' });
  });
});

describe('admission', () => {
  const clientRun = (extra: Record<string, unknown> = {}) => ({
    subject: uniqueSubject(),
    reducer: null,
    input: 'q',
    ...extra,
  });

  it('refuses a third live run with 429 quota_exceeded, admits again once one ended, and counts per principal', async () => {
    const first = await quota('alice', 'POST', '/runs', clientRun());
    const second = await quota('alice', 'POST', '/runs', clientRun());
    expect([first.status, second.status]).toEqual([201, 201]);
    const third = await quota('alice', 'POST', '/runs', clientRun());
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({
      code: 'quota_exceeded',
      details: { limit: 'max_live_runs', max: 2 },
    });
    // Bob's quota is his own; system callers are not limited.
    expect((await quota('bob', 'POST', '/runs', clientRun())).status).toBe(201);
    expect((await quota('ops', 'POST', '/runs', clientRun())).status).toBe(201);
    // Stopping one frees its slot in the commit that ends it.
    const { run } = (await first.json()) as { run: RunRecord };
    const stop = await quota('alice', 'POST', `/runs/${run.run_id}/controls`, {
      control_id: `c-${randomUUID()}`,
      command: 'stop',
    });
    expect(stop.status).toBe(200);
    expect((await stored(run.run_id, quotaRuntime)).status).toBe('stopped');
    expect((await quota('alice', 'POST', '/runs', clientRun())).status).toBe(201);
  });

  it("counts every agent acting for alice against alice's quota: a new agent name buys nothing", async () => {
    // alice holds two live runs from the first test of this block.
    expect((await quotaRuntime.store.readQuota('user:alice', 0)).held_slots).toHaveLength(2);
    // Unregistered agent names are refused outright (403 agent_not_allowed), never a fresh quota.
    for (const agent of ['helper-1', 'helper-2']) {
      const response = await quota('alice', 'POST', '/runs', clientRun({ as_agent: agent }));
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'agent_not_allowed' });
    }
    const byPlanner = await quota('planner', 'POST', '/runs', clientRun());
    expect(byPlanner.status).toBe(429);
  });

  it('lets no burst of concurrent creates past the live-run limit', async () => {
    // bob holds one live run from the test above; ten creates race for his last slot.
    const held = (await quotaRuntime.store.readQuota('user:bob', 0)).held_slots.length;
    expect(held).toBe(1);
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const response = await quota('bob', 'POST', '/runs', clientRun());
        return { status: response.status, body: (await response.json()) as { details?: { limit?: string } } };
      }),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused).toHaveLength(9);
    for (const a of refused) expect(a.body.details?.limit).toBe('max_live_runs');
    expect((await quotaRuntime.store.readQuota('user:bob', 0)).held_slots).toHaveLength(2);
  });

  it('refuses the creates of a minute past the rate limit with Retry-After, and writes nothing of them', async () => {
    // carol's creates run into the rate limit (4 a minute) before her live limit when each run is
    // stopped right away. The clock is put at the first second of a minute, so all six creates
    // fall in one window.
    const now = Date.now() + clockOffset;
    clockOffset += 60_000 - (now % 60_000) + 1_000;
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 6; i += 1) {
      const subject = uniqueSubject();
      const response = await quota('carol', 'POST', '/runs', clientRun({ subject }));
      statuses.push(response.status);
      if (response.status === 201) {
        const { run } = (await response.json()) as { run: RunRecord };
        await quota('carol', 'POST', `/runs/${run.run_id}/controls`, {
          control_id: `c-${i}`,
          command: 'stop',
        });
      } else {
        refused = response;
        expect(await quotaRuntime.store.findBySubject(subject)).toBeNull();
      }
    }
    expect(statuses).toEqual([201, 201, 201, 201, 429, 429]);
    expect(refused?.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused?.json()).toMatchObject({
      code: 'quota_exceeded',
      details: { limit: 'max_creates_per_minute' },
    });
  });

  it('records the risk tier at admission: raised to the floor, never lowered, unknown tiers refused', async () => {
    const low = await quota('ops', 'POST', '/runs', clientRun({ risk_tier: 'low' }));
    const high = await quota('ops', 'POST', '/runs', clientRun({ risk_tier: 'high' }));
    expect(((await low.json()) as { run: RunRecord }).run.risk_tier).toBe('standard');
    const highRun = ((await high.json()) as { run: RunRecord }).run;
    expect(highRun.risk_tier).toBe('high');
    expect((await stored(highRun.run_id, quotaRuntime)).risk_tier).toBe('high');
    const bad = await quota('ops', 'POST', '/runs', clientRun({ risk_tier: 'extreme' }));
    expect(bad.status).toBe(400);
  });
});
