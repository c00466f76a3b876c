/**
 * Owned workspaces through the HTTP API on DynamoDB Local and fauxqs, with the users alice, bob
 * and carol (of the group `team`), the agent `planner` acting for alice, an admin and a system
 * caller: a create (or fork) in a workspace not granted to the caller is 403
 * workspace_not_granted whether or not a subject there has a live run; a user owns `user:{id}`
 * (exactly: `User:` and `USER:` are nobody's); an admin may use every workspace but other users'
 * own; `owned` is the default, and in `open` mode an ungranted workspace stays open while
 * granted ones are their grantees'.
 * docs/guides/who-may-do-what.md states these rules.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce } from '../support/reducers.ts';

const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: 'alice' },
  bob: { kind: 'user', id: 'bob' },
  carol: { kind: 'user', id: 'carol', groups: ['team'] },
  planner: { kind: 'agent', id: 'planner', on_behalf_of: 'alice' },
  admin: { kind: 'user', id: 'root' },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

const runtimes: Runtime[] = [];
const apps: Record<'owned' | 'open', HttpApp> = {} as Record<'owned' | 'open', HttpApp>;

beforeAll(async () => {
  for (const mode of ['owned', 'open'] as const) {
    const { runtime } = await localRuntime(`tenancy-${mode}`, {
      // `owned` is the default: that runtime is given no workspace mode at all.
      admission: mode === 'open' ? { workspaces: 'open' } : {},
      reducers: inProcessReducers({ '/r/ask': askOnce() }),
    });
    runtimes.push(runtime);
    const auth = Object.keys(PRINCIPALS).map((who) =>
      bearerTokenAuth(`${mode}-${who}`, PRINCIPALS[who], { admin: who === 'admin' }),
    );
    apps[mode] = createHttpApp({ ...runtime, auth: anyOf(...auth), pollIntervalMs: 50, log: () => {} });
  }
});

afterAll(() => {
  for (const rt of runtimes) rt.close();
});

async function call(mode: 'owned' | 'open', who: Who, method: string, path: string, body?: unknown) {
  const response = await apps[mode].request(path, {
    method,
    headers: {
      authorization: `Bearer ${mode}-${who}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, text: await response.text() };
}

const createBody = (workspace: string, path = `/p/${randomUUID()}`) => ({
  subject: { workspace, path },
  reducer: { function_path: '/r/ask' },
  input: 'secret input',
});

async function grant(mode: 'owned' | 'open', body: Record<string, unknown>) {
  const published = await call(mode, 'admin', 'POST', '/admin/workspaces', body);
  expect(published.status, published.text).toBe(201);
}

describe('owned workspaces', () => {
  it("refuses bob in alice's workspace alike whether or not her subject is busy, and writes nothing", async () => {
    const ws = `alice-ws-${randomUUID()}`;
    await grant('owned', { workspace: ws, users: ['alice'] });
    const path = `/daily/${randomUUID()}`;
    const mine = await call('owned', 'alice', 'POST', '/runs', createBody(ws, path));
    expect(mine.status, mine.text).toBe(201);
    const runId = (JSON.parse(mine.text) as { run: { run_id: string } }).run.run_id;

    const onBusy = await call('owned', 'bob', 'POST', '/runs', createBody(ws, path));
    const onFree = await call('owned', 'bob', 'POST', '/runs', createBody(ws, '/daily/free'));
    expect(onBusy.status).toBe(403);
    expect(JSON.parse(onBusy.text)).toMatchObject({
      code: 'workspace_not_granted',
      details: { workspace: ws },
    });
    // The same answer for a busy and a free subject: nothing about alice's run is revealed.
    expect(onFree).toEqual(onBusy);
    expect(onBusy.text).not.toContain(runId);
    expect(onBusy.text).not.toContain('secret input');

    // Alice gets her live run back (created: false), as the seed says.
    const again = await call('owned', 'alice', 'POST', '/runs', createBody(ws, path));
    expect(again.status, again.text).toBe(200);
    expect(JSON.parse(again.text)).toMatchObject({ created: false, run: { run_id: runId } });
  });

  it('grants by group, and refuses a workspace nobody was granted to every user but not to system callers', async () => {
    const ws = `team-ws-${randomUUID()}`;
    await grant('owned', { workspace: ws, groups: ['team'] });
    expect((await call('owned', 'carol', 'POST', '/runs', createBody(ws))).status).toBe(201);
    expect((await call('owned', 'alice', 'POST', '/runs', createBody(ws))).status).toBe(403);
    const nobody = `nobody-${randomUUID()}`;
    for (const who of ['alice', 'bob', 'carol'] as const) {
      const refused = await call('owned', who, 'POST', '/runs', createBody(nobody));
      expect(JSON.parse(refused.text)).toMatchObject({ code: 'workspace_not_granted' });
    }
    expect((await call('owned', 'ops', 'POST', '/runs', createBody(nobody))).status).toBe(201);
  });

  it('gives each user its own user:{id} workspace, which no grant can name', async () => {
    expect((await call('owned', 'bob', 'POST', '/runs', createBody('user:bob'))).status).toBe(201);
    expect((await call('owned', 'planner', 'POST', '/runs', createBody('user:alice'))).status).toBe(201);
    const intruder = await call('owned', 'alice', 'POST', '/runs', createBody('user:bob'));
    expect(intruder.status).toBe(403);
    expect(JSON.parse(intruder.text)).toMatchObject({ code: 'workspace_not_granted' });
    const claim = await call('owned', 'admin', 'POST', '/admin/workspaces', {
      workspace: 'user:bob',
      users: ['alice'],
    });
    expect(claim.status).toBe(400);
    expect(claim.text).toContain('workspace');
    // Granting is for admins only: bob may not grant himself alice's workspace.
    const selfGrant = await call('owned', 'bob', 'POST', '/admin/workspaces', {
      workspace: 'x',
      users: ['bob'],
    });
    expect(selfGrant.status).toBe(403);
  });
});

describe('own workspaces and admins', () => {
  it("treats case variants of user: as nobody's: refused to their namesake, admins and grants alike", async () => {
    for (const workspace of ['User:alice', 'USER:alice', 'uSeR:alice']) {
      for (const who of ['alice', 'planner', 'admin'] as const) {
        const refused = await call('owned', who, 'POST', '/runs', createBody(workspace));
        expect(refused.status, `${who} in ${workspace}`).toBe(403);
        expect(JSON.parse(refused.text)).toMatchObject({
          code: 'workspace_not_granted',
          details: { workspace },
        });
      }
      const grant = await call('owned', 'admin', 'POST', '/admin/workspaces', { workspace, users: ['bob'] });
      expect(grant.status, grant.text).toBe(400);
      // The operators may still reach runs kept there from before (the migration).
      expect((await call('owned', 'ops', 'POST', '/runs', createBody(workspace))).status).toBe(201);
    }
    // The own workspace is matched case-sensitively: alice is not `Alice`.
    expect((await call('owned', 'alice', 'POST', '/runs', createBody('user:Alice'))).status).toBe(403);
    expect((await call('owned', 'alice', 'POST', '/runs', createBody('user:alice2'))).status).toBe(403);
  });

  it("lets an admin create in a workspace nobody was granted, but not in another user's own", async () => {
    const ungranted = `Alice2-${randomUUID()}`;
    expect((await call('owned', 'admin', 'POST', '/runs', createBody(ungranted))).status).toBe(201);
    const bob = await call('owned', 'bob', 'POST', '/runs', createBody(ungranted));
    expect(bob.status).toBe(403);
    expect(JSON.parse(bob.text)).toMatchObject({ code: 'workspace_not_granted' });
    const intruder = await call('owned', 'admin', 'POST', '/runs', createBody('user:bob'));
    expect(intruder.status).toBe(403);
    expect(JSON.parse(intruder.text)).toMatchObject({ code: 'workspace_not_granted' });
    expect((await call('owned', 'admin', 'POST', '/runs', createBody('user:root'))).status).toBe(201);
  });

  it('refuses a grant whose names hold a control character, with 400 naming the field', async () => {
    const bad = [
      { workspace: `ws-\u001b[2J-${randomUUID()}`, users: ['alice'] },
      { workspace: `ws-${randomUUID()}`, groups: ['te\u0000am'] },
      { workspace: `ws-${randomUUID()}`, users: ['ali\u009bce'] },
    ];
    for (const body of bad) {
      const refused = await call('owned', 'admin', 'POST', '/admin/workspaces', body);
      expect(refused.status, refused.text).toBe(400);
      expect(refused.text).toContain('control_character');
    }
  });
});

describe('open workspaces (the migration mode)', () => {
  it('keeps an ungranted workspace open to all while a granted one is its grantees only', async () => {
    const legacy = `legacy-${randomUUID()}`;
    expect((await call('open', 'alice', 'POST', '/runs', createBody(legacy))).status).toBe(201);
    expect((await call('open', 'bob', 'POST', '/runs', createBody(legacy))).status).toBe(201);
    const ws = `alice-ws-${randomUUID()}`;
    await grant('open', { workspace: ws, users: ['alice'] });
    expect((await call('open', 'alice', 'POST', '/runs', createBody(ws))).status).toBe(201);
    const bob = await call('open', 'bob', 'POST', '/runs', createBody(ws));
    expect(bob.status).toBe(403);
    expect((await call('open', 'alice', 'POST', '/runs', createBody('user:bob'))).status).toBe(403);
  });
});
