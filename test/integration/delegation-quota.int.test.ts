/**
 * Quotas that cover the whole tree, through the HTTP API on DynamoDB Local and fauxqs, with the
 * users bob and alice: with AGENT_RUNS_MAX_LIVE_RUNS 3, bob's delegated children take his
 * live-run slots, a delegation past them is refused as the call's tool result
 * (`quota_exceeded`) and writes nothing, bob's own creates are then 429 while alice's are not,
 * and the end of one child frees its slot. docs/guides/who-may-do-what.md.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELEGATE_TOOL, type Principal, type RunEvent, type RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, subjectIn } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { delegator } from '../support/reducers.ts';
import { grantWorkspace } from '../support/workspace-grants.ts';

// Ids of their own: the table is shared, and other test files leave live runs of a 'bob'
// holding quota slots under that principal's key.
const TAG = randomUUID().slice(0, 8);
const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: `alice-${TAG}` },
  bob: { kind: 'user', id: `bob-${TAG}` },
};
type Who = keyof typeof PRINCIPALS;
const REDUCER = '/r/delegator';

let runtime: Runtime;
let app: HttpApp;
/** A workspace granted to every user of the test (workspaces are owned). */
let shared: string;

beforeAll(async () => {
  ({ runtime } = await localRuntime('delegation-quota', {
    env: { AGENT_RUNS_MAX_LIVE_RUNS: '3' },
    reducers: inProcessReducers({ [REDUCER]: delegator(DELEGATE_TOOL) }),
  }));
  const auth = Object.keys(PRINCIPALS).map((who) =>
    bearerTokenAuth(`t-${who}`, PRINCIPALS[who], { admin: false }),
  );
  app = createHttpApp({ ...runtime, auth: anyOf(...auth), pollIntervalMs: 50, log: () => {} });
  shared = await grantWorkspace(runtime.engine, {
    users: Object.values(PRINCIPALS).flatMap((p) => (p.kind === 'user' ? [p.id] : [])),
  });
});

/** A fresh subject in the shared workspace. */
const uniqueSubject = () => subjectIn(shared);

afterAll(() => runtime.close());

async function call<T>(
  who: Who,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer t-${who}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as T };
}

const createBody = (
  input: unknown,
  reducer: { function_path: string } | null = { function_path: REDUCER },
) => ({
  subject: uniqueSubject(),
  reducer,
  input,
});

async function childrenOf(who: Who, runId: string): Promise<string[]> {
  const { body } = await call<{ children: { run_id: string }[] }>(who, 'GET', `/runs/${runId}/children`);
  return body.children.map((c) => c.run_id);
}

/** Steps the tree under `runId` until no run of it has anything to do (the step Lambda's job). */
async function drive(who: Who, runId: string): Promise<void> {
  for (let round = 0; round < 30; round += 1) {
    let progressed = false;
    for (const id of [runId, ...(await childrenOf(who, runId))]) {
      const outcome = await runtime.engine.stepRun(id);
      if (outcome.kind !== 'nothing_to_do') progressed = true;
    }
    if (!progressed) return;
  }
  throw new Error('the tree did not settle');
}

/** The first diagnostic code (else the status) of each tool_result of `runId`. */
async function resultCodes(who: Who, runId: string): Promise<string[]> {
  const { body } = await call<{ events: RunEvent[] }>(who, 'GET', `/runs/${runId}/events?after=0&limit=1000`);
  return body.events
    .filter((e) => e.kind === 'tool_result')
    .map((e) => {
      const env = e.data.envelope as { status: string; diagnostics?: { code: string }[] };
      return env.diagnostics?.[0]?.code ?? env.status;
    });
}

describe('delegation against the live-run quota (AGENT_RUNS_MAX_LIVE_RUNS=3)', () => {
  it("refuses bob's delegation past his quota as quota_exceeded, writes nothing of it, and frees a slot when a child ends", async () => {
    // Prepare: bob's run starts background children that wait for a question, then asks bob.
    const background = { input: { leaf: 'ask' }, wait: false };
    const created = await call<{ run: RunRecord }>(
      'bob',
      'POST',
      '/runs',
      createBody({ children: [background, background, background, 'pause'] }),
    );
    expect(created.status).toBe(201);
    const parentId = created.body.run.run_id;

    // Act
    await drive('bob', parentId);

    // Assert: the parent and two children fill bob's three slots; the third child is refused.
    expect(await resultCodes('bob', parentId)).toEqual(['succeeded', 'succeeded', 'quota_exceeded']);
    const parent = await call<RunRecord>('bob', 'GET', `/runs/${parentId}`);
    expect(parent.body).toMatchObject({ status: 'waiting', counters: { children: 2 } });
    const children = await childrenOf('bob', parentId);
    expect(children).toHaveLength(2);
    expect((await runtime.store.readQuota(`user:${PRINCIPALS.bob?.id}`, 0)).held_slots).toHaveLength(3);
    // bob's own create is 429 as before; alice's quota is her own.
    const refused = await call<{ code: string; details: { limit: string } }>(
      'bob',
      'POST',
      '/runs',
      createBody('x', null),
    );
    expect(refused).toMatchObject({
      status: 429,
      body: { code: 'quota_exceeded', details: { limit: 'max_live_runs' } },
    });
    expect((await call('alice', 'POST', '/runs', createBody('x', null))).status).toBe(201);

    // Act: bob stops one child; its end frees its slot.
    const stop = await call('bob', 'POST', `/runs/${children[0]}/controls`, {
      control_id: `c-${randomUUID()}`,
      command: 'stop',
    });
    expect(stop.status).toBe(200);
    await drive('bob', parentId);

    // Assert
    expect((await call<RunRecord>('bob', 'GET', `/runs/${children[0]}`)).body.status).toBe('stopped');
    expect((await runtime.store.readQuota(`user:${PRINCIPALS.bob?.id}`, 0)).held_slots).toHaveLength(2);
    expect((await call('bob', 'POST', '/runs', createBody('x', null))).status).toBe(201);
  });
});
