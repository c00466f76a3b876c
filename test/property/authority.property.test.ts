/**
 * Random callers against random runs through the HTTP API (memory store): a caller without
 * authority over a run (not its principal, not the user it acts for, not a system caller, not
 * holding its capability) never changes the run's version or log and never sees any of its
 * fields: every read, control, listing and create on its subject answers as if the run did not
 * exist. docs/contracts/run-lifecycle.md, "Controls" (authorization).
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Principal, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { inProcessReducers, inProcessTools, scriptedModel } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const CALLERS = {
  alice: { kind: 'user', id: 'alice' } as Principal,
  bob: { kind: 'user', id: 'bob' } as Principal,
  'planner-for-alice': { kind: 'agent', id: 'planner', on_behalf_of: 'alice' } as Principal,
  'planner-for-bob': { kind: 'agent', id: 'planner', on_behalf_of: 'bob' } as Principal,
  ops: { kind: 'system', id: 'ops' } as Principal,
} satisfies Record<string, Principal>;
type CallerName = keyof typeof CALLERS;
const NAMES = Object.keys(CALLERS) as CallerName[];
/** Who creates each run: a user, the agent acting for that user, the other user. */
const OWNERS: CallerName[] = ['alice', 'planner-for-alice', 'bob'];

/** The spec, stated independently of lib/core/authority.ts: who may see a run by who they are. */
function stands(caller: Principal, owner: Principal): boolean {
  if (caller.kind === 'system') return true;
  if (caller.kind === owner.kind && caller.id === owner.id && caller.on_behalf_of === owner.on_behalf_of)
    return true;
  return caller.kind === 'user' && owner.on_behalf_of === caller.id;
}

/** The spec of owned workspaces for these callers: a user's own `user:{id}` is its and its agents'. */
function mayCreateIn(caller: Principal, workspace: string): boolean {
  if (caller.kind === 'system') return true;
  return workspace === `user:${caller.kind === 'user' ? caller.id : caller.on_behalf_of}`;
}

const actionArb = fc.record({
  caller: fc.constantFrom(...NAMES),
  run: fc.nat({ max: OWNERS.length - 1 }),
  capability: fc.constantFrom('none', 'right', 'wrong'),
  kind: fc.constantFrom(
    'get',
    'events',
    'checkpoints',
    'children',
    'steer',
    'pause',
    'stop',
    'resume',
    'list',
    'create',
  ),
});

async function world() {
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({}),
    tools: inProcessTools({}),
    models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
  });
  const auth = anyOf(...NAMES.map((n) => bearerTokenAuth(`token-${n}`, CALLERS[n], { admin: false })));
  const app = createHttpApp({
    engine: t.engine,
    functions: new InMemoryFunctionRegistry([]),
    tools: { list: () => [] },
    auth,
    log: () => {},
  });
  const call = (name: CallerName, method: string, path: string, body?: unknown, capability?: string) =>
    app.request(path, {
      method,
      headers: {
        authorization: `Bearer token-${name}`,
        ...(capability !== undefined ? { 'x-control-capability': capability } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const runs: { record: RunRecord; capability: string; secret: string }[] = [];
  for (const owner of OWNERS) {
    const secret = `secret-input-${randomUUID()}`;
    const response = await call(owner, 'POST', '/runs', {
      // Each owner in its user's own workspace (alice's agent in alice's).
      subject: {
        workspace: `user:${CALLERS[owner].on_behalf_of ?? CALLERS[owner].id}`,
        path: `/p/${randomUUID()}`,
      },
      reducer: null,
      input: secret,
    });
    expect(response.status).toBe(201);
    const created = (await response.json()) as { run: RunRecord; control_capability: string };
    runs.push({ record: created.run, capability: created.control_capability, secret });
  }
  return { t, call, runs };
}

describe('authority over random callers and runs', () => {
  it('a caller without authority never changes a run and never sees any field of it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 1, maxLength: 25 }), async (actions) => {
        const { t, call, runs } = await world();
        for (const a of actions) {
          const target = runs[a.run];
          if (target === undefined) throw new Error('no such run');
          const { record } = target;
          const capability =
            a.capability === 'right'
              ? target.capability
              : a.capability === 'wrong'
                ? 'not-the-capability'
                : undefined;
          const authorized = stands(CALLERS[a.caller], record.principal) || a.capability === 'right';
          const before = await t.store.getRun(record.run_id);
          const id = record.run_id;
          let response: Response;
          switch (a.kind) {
            case 'get':
              response = await call(a.caller, 'GET', `/runs/${id}`, undefined, capability);
              break;
            case 'events':
            case 'checkpoints':
            case 'children':
              response = await call(a.caller, 'GET', `/runs/${id}/${a.kind}`, undefined, capability);
              break;
            case 'list':
              response = await call(a.caller, 'GET', `/runs?status=${record.status}&limit=100`);
              break;
            case 'create':
              response = await call(a.caller, 'POST', '/runs', {
                subject: record.subject,
                reducer: null,
                input: 1,
              });
              break;
            default:
              response = await call(
                a.caller,
                'POST',
                `/runs/${id}/controls`,
                {
                  control_id: `c-${randomUUID()}`,
                  command: a.kind,
                  ...(a.kind === 'steer' ? { input: 'hi' } : {}),
                },
                capability,
              );
          }
          const text = await response.text();
          expect(response.status, `${a.kind} by ${a.caller}: ${text}`).toBeLessThan(500);
          if (a.kind === 'list') expect(response.status, text).toBe(200);
          const listedOrCreated = a.kind === 'list' || a.kind === 'create';
          if (!listedOrCreated && authorized) continue;
          if (a.kind === 'list' && stands(CALLERS[a.caller], record.principal)) continue;
          if (a.kind === 'create' && stands(CALLERS[a.caller], record.principal)) continue;
          // No authority: the run does not exist for this caller.
          if (a.kind === 'create' && !mayCreateIn(CALLERS[a.caller], record.subject.workspace)) {
            // Not the caller's workspace: refused before any run of it is looked up.
            expect(response.status, text).toBe(403);
            expect(JSON.parse(text)).toMatchObject({ code: 'workspace_not_granted' });
          } else if (a.kind === 'create') {
            // A live run's subject is busy (409); an ended one's is free (201, a new run of the caller's),
            // or already holds a newer run the caller may see (200): never the target run.
            expect([200, 201, 409], text).toContain(response.status);
          } else if (a.kind !== 'list') {
            expect(response.status, `${a.kind} by ${a.caller}: ${text}`).toBe(404);
            expect(JSON.parse(text)).toMatchObject({ code: 'run_not_found' });
          }
          expect(text).not.toContain(target.secret);
          // A path names the id the caller gave; a listing or a create must not reveal it.
          if (listedOrCreated) expect(text).not.toContain(id);
          const after = await t.store.getRun(id);
          expect(after?.version).toBe(before?.version);
          expect(after?.last_seq).toBe(before?.last_seq);
        }
      }),
      { numRuns: 60 },
    );
  });
});
