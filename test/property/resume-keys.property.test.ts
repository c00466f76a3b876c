/**
 * Random callers deliver random results to random resume keys through the HTTP API (memory
 * store): runs of alice, of the agent acting for her and of bob each wait on a key; keys are
 * used, held (a system caller's early result) or unknown. A caller without authority over a
 * key's run (not its principal, not the user it acts for, not a system caller, not holding its
 * capability) always gets one answer, 404 resume_key_not_found with the key and nothing else,
 * whatever the key holds, its delivery_id and its body, after the same store reads; and no run
 * changes.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Principal, RunRecord } from '../../lib/contracts/index.ts';
import { TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import { envelopeOf } from '../../lib/core/tool-result-validation.ts';
import type { ToolHost } from '../../lib/engine/ports.ts';
import { anyOf, bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { inProcessReducers, scriptedModel } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { toolLoop } from '../support/reducers.ts';

const CALLERS = {
  alice: { kind: 'user', id: 'alice' } as Principal,
  bob: { kind: 'user', id: 'bob' } as Principal,
  'planner-for-alice': { kind: 'agent', id: 'planner', on_behalf_of: 'alice' } as Principal,
  'planner-for-bob': { kind: 'agent', id: 'planner', on_behalf_of: 'bob' } as Principal,
  ops: { kind: 'system', id: 'ops' } as Principal,
} satisfies Record<string, Principal>;
type CallerName = keyof typeof CALLERS;
const NAMES = Object.keys(CALLERS) as CallerName[];
const OWNERS: CallerName[] = ['alice', 'planner-for-alice', 'bob'];

/** The spec, stated independently of lib/core/authority.ts: who may see a run by who they are. */
function stands(caller: Principal, owner: Principal): boolean {
  if (caller.kind === 'system') return true;
  if (caller.kind === owner.kind && caller.id === owner.id && caller.on_behalf_of === owner.on_behalf_of)
    return true;
  return caller.kind === 'user' && owner.on_behalf_of === caller.id;
}

/** The one answer a caller who may not deliver gets, for `key`. */
const notFound = (key: string) =>
  JSON.stringify({
    code: 'resume_key_not_found',
    message: 'no run waits for that resume_key',
    details: { resume_key: key },
  });

const actionArb = fc.record({
  caller: fc.constantFrom(...NAMES),
  /** A run's key (0..2), a held key (3) or an unknown key (4). */
  key: fc.nat({ max: OWNERS.length + 1 }),
  capability: fc.constantFrom('none', 'right', 'wrong'),
  deliveryId: fc.constantFrom(undefined, 'd1', 'd2'),
  valid: fc.boolean(),
});

async function world() {
  const keyOf = new Map<string, string>();
  const tools: ToolHost = {
    list: () => [],
    gate: () => ({ decision: 'allow' }),
    async execute(request) {
      return { ...envelopeOf('waiting', null), resume_key: keyOf.get(request.run_id) ?? 'none' };
    },
  };
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ '/r/wait': toolLoop(1, 'wait_here') }),
    tools,
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
  const call = async (name: CallerName, path: string, body: unknown, capability?: string) => {
    const response = await app.request(path, {
      method: 'POST',
      headers: {
        authorization: `Bearer token-${name}`,
        'content-type': 'application/json',
        ...(capability !== undefined ? { 'x-control-capability': capability } : {}),
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  };
  const runs: { record: RunRecord; capability: string; key: string }[] = [];
  for (const owner of OWNERS) {
    const response = await call(owner, '/runs', {
      // Each owner in its user's own workspace (alice's agent in alice's).
      subject: {
        workspace: `user:${CALLERS[owner].on_behalf_of ?? CALLERS[owner].id}`,
        path: `/p/${randomUUID()}`,
      },
      reducer: { function_path: '/r/wait' },
      input: 'x',
    });
    expect(response.status, response.text).toBe(201);
    const created = JSON.parse(response.text) as { run: RunRecord; control_capability: string };
    const key = `rk-${randomUUID()}`;
    keyOf.set(created.run.run_id, key);
    await t.engine.stepRun(created.run.run_id);
    expect((await t.store.getRun(created.run.run_id))?.open_requests).toHaveLength(1);
    runs.push({ record: created.run, capability: created.control_capability, key });
  }
  const held = `rk-held-${randomUUID()}`;
  const early = await call('ops', `/results/${held}?delivery_id=d1`, { early: true });
  expect(early.status, early.text).toBe(202);
  return { t, call, runs, held, unknown: `rk-unknown-${randomUUID()}` };
}

describe('resume keys over random callers', () => {
  it('a caller who may not deliver gets one answer for every key state and changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 1, maxLength: 20 }), async (actions) => {
        const { t, call, runs, held, unknown } = await world();
        for (const a of actions) {
          const run = runs[a.key];
          const key = run?.key ?? (a.key === OWNERS.length ? held : unknown);
          const capability =
            a.capability === 'right'
              ? (run?.capability ?? runs[0]?.capability)
              : a.capability === 'wrong'
                ? 'not-the-capability'
                : undefined;
          const body = a.valid ? { ok: true } : { envelope: TOOL_RESULT_ENVELOPE, status: 'bogus' };
          const query = a.deliveryId === undefined ? '' : `?delivery_id=${a.deliveryId}`;
          const before = await Promise.all(runs.map((r) => t.store.getRun(r.record.run_id)));
          const readsBefore = t.store.metrics.reads;
          const answer = await call(a.caller, `/results/${key}${query}`, body, capability);
          const reads = t.store.metrics.reads - readsBefore;
          expect(answer.status, answer.text).toBeLessThan(500);
          const caller = CALLERS[a.caller];
          const mayDeliver =
            run !== undefined ? stands(caller, run.record.principal) || a.capability === 'right' : false;
          const system = caller.kind === 'system';
          if (mayDeliver || system) continue;
          expect({ status: answer.status, text: answer.text }, `${a.caller} on ${key}`).toEqual({
            status: 404,
            text: notFound(key),
          });
          // The same reads for every key state (the key, then a run): the time tells nothing either.
          expect(reads, `reads for ${a.caller} on ${key}`).toBe(2);
          const after = await Promise.all(runs.map((r) => t.store.getRun(r.record.run_id)));
          expect(after.map((r) => r?.version)).toEqual(before.map((r) => r?.version));
        }
      }),
      { numRuns: 40 },
    );
  });
});
