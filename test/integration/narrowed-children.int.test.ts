/**
 * Narrowed children over the HTTP API on DynamoDB Local and fauxqs, with the users alice and bob:
 * alice's run delegates a child narrowed to the `read` tool; the deployment's policy gate refuses
 * the child's `write` as a failed tool result (`tool_outside_delegation_scope`) before its handler
 * runs, and the child's record shows its scope to alice. bob learns nothing of alice's child
 * (404), and his own unnarrowed run may call `write`: a scope belongs to a run, not to a tool or a
 * user.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  childOfResumeKey,
  type Principal,
  type RunEvent,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, subjectIn } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { type ScopedInput, scopedReducer } from '../support/scope-reducers.ts';
import { grantWorkspace } from '../support/workspace-grants.ts';

const TAG = randomUUID().slice(0, 8);
const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: `alice-${TAG}` },
  bob: { kind: 'user', id: `bob-${TAG}` },
};
type Who = keyof typeof PRINCIPALS;
const REDUCER = '/r/scoped';
const executed: string[] = [];

let runtime: Runtime;
let app: HttpApp;
/** A workspace granted to every user of the test (workspaces are owned). */
let shared: string;

beforeAll(async () => {
  ({ runtime } = await localRuntime('narrowed-children', {
    reducers: inProcessReducers({ [REDUCER]: scopedReducer() }),
    registerTools: (registry) => {
      for (const [name, mutating] of [
        ['read', false],
        ['write', true],
      ] as const) {
        registry.register({
          name,
          version: '1.0.0',
          input_schema: { type: 'object' },
          metadata: { mutating, replay_safe: true, approval: 'never' },
          handler: {
            kind: 'module',
            fn: async () => {
              executed.push(name);
              return { ok: true };
            },
          },
        });
      }
    },
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

async function call<T>(who: Who, method: string, path: string, body?: unknown) {
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

async function events(who: Who, runId: string): Promise<RunEvent[]> {
  const { body } = await call<{ events: RunEvent[] }>(who, 'GET', `/runs/${runId}/events?after=0&limit=1000`);
  return body.events;
}

/** The first diagnostic code (else the status) of each tool_result of `runId`. */
async function codes(who: Who, runId: string): Promise<string[]> {
  return (await events(who, runId))
    .filter((e) => e.kind === 'tool_result')
    .map((e) => {
      const env = e.data.envelope as { status: string; diagnostics?: { code: string }[] };
      return env.diagnostics?.[0]?.code ?? env.status;
    });
}

/** The children `runId` started, from its delegate results. */
async function childrenOf(who: Who, runId: string): Promise<string[]> {
  return (await events(who, runId)).flatMap((e) => {
    const payload = (e.data.envelope as { payload?: { child_run_id?: string } } | undefined)?.payload;
    return e.kind === 'tool_result' && payload?.child_run_id !== undefined ? [payload.child_run_id] : [];
  });
}

/** Steps the runs of a tree until none has anything to do (the step Lambda's job). */
async function drive(who: Who, rootId: string): Promise<void> {
  const known = new Set([rootId]);
  for (let round = 0; round < 30; round += 1) {
    let progressed = false;
    for (const id of known) {
      const outcome = await runtime.engine.stepRun(id);
      if (outcome.kind !== 'nothing_to_do') progressed = true;
      for (const child of await childrenOf(who, id)) known.add(child);
      const open = (await runtime.store.getRun(id))?.open_requests ?? [];
      for (const r of open) {
        const waitedOn = r.kind === 'result' ? childOfResumeKey(r.resume_key) : null;
        if (waitedOn !== null) known.add(waitedOn);
      }
    }
    if (!progressed) return;
  }
  throw new Error('the tree did not settle');
}

async function create(who: Who, input: ScopedInput): Promise<string> {
  const created = await call<{ run: RunRecord }>(who, 'POST', '/runs', {
    subject: uniqueSubject(),
    reducer: { function_path: REDUCER },
    input,
  });
  expect(created.status).toBe(201);
  return created.body.run.run_id;
}

describe('a child narrowed by its delegation, over HTTP', () => {
  it("refuses alice's child a tool outside its scope, and keeps it from bob", async () => {
    // Prepare + Act: alice's run delegates a child that may only read, and tries to write.
    const calls = [
      { tool: 'read', mutating: false },
      { tool: 'write', mutating: true },
    ];
    const root = await create('alice', { delegate: { scope: { tools: ['read'] }, input: { calls } } });
    await drive('alice', root);

    // Assess: the gate refused the write as the child's tool result; its handler never ran.
    const [child] = await childrenOf('alice', root);
    if (child === undefined) throw new Error('alice’s run started no child');
    expect(await codes('alice', child)).toEqual(['succeeded', 'tool_outside_delegation_scope']);
    expect(executed.filter((name) => name === 'write')).toEqual([]);
    const seen = await call<RunRecord>('alice', 'GET', `/runs/${child}`);
    expect(seen).toMatchObject({ status: 200, body: { status: 'completed', scope: { tools: ['read'] } } });

    // bob: nothing of alice's child; his own run, not narrowed, may write.
    expect((await call('bob', 'GET', `/runs/${child}`)).status).toBe(404);
    expect((await call('bob', 'GET', `/runs/${child}/events`)).status).toBe(404);
    const own = await create('bob', { calls: [{ tool: 'write', mutating: true }] });
    await drive('bob', own);
    expect(await codes('bob', own)).toEqual(['succeeded']);
    expect(executed.filter((name) => name === 'write')).toEqual(['write']);
  });
});
