/**
 * No oracles, through the HTTP API on DynamoDB Local and fauxqs, with the users alice and bob,
 * an admin and a system caller: bob learns nothing of alice's resume keys (used, unused, held
 * or unknown: one answer, and her runs do not change) while alice and the system caller keep
 * the answers they had; reserved system function paths are read-only for every caller; an
 * agent that is not registered and one that may not act for bob answer bob alike.
 * the README's "Who may do what" states these rules.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Principal, type RunRecord, TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: 'alice' },
  bob: { kind: 'user', id: 'bob' },
  admin: { kind: 'user', id: 'root', groups: ['admin'] },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

/** The resume key each run's one tool call waits on, by run id. */
const keys = new Map<string, string>();
let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('oracles', {
    heartbeatMs: 100,
    reducers: inProcessReducers({ '/r/wait': toolLoop(1, 'wait_here') }),
    registerTools(registry) {
      registry.register({
        name: 'wait_here',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => ({
            envelope: TOOL_RESULT_ENVELOPE,
            status: 'waiting',
            resume_key: keys.get(ctx.run_id),
          }),
        },
        metadata: { mutating: false, replay_safe: true },
      });
    },
  }));
  const auth = Object.keys(PRINCIPALS).map((who) =>
    bearerTokenAuth(`tok-${who}`, PRINCIPALS[who], { admin: who === 'admin' }),
  );
  app = createHttpApp({ ...runtime, auth: anyOf(...auth), pollIntervalMs: 50, log: () => {} });
});

afterAll(() => runtime.close());

interface Answer {
  status: number;
  type: string | null;
  text: string;
}

async function call(
  who: Who,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
  capability?: string,
): Promise<Answer> {
  const response = await app.request(path, {
    method,
    headers: {
      authorization: `Bearer tok-${who}`,
      ...(body !== undefined ? { 'content-type': contentType } : {}),
      ...(capability !== undefined ? { 'x-control-capability': capability } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** Alice's run, waiting on its own fresh resume key (returned), and its control capability. */
async function aliceWaiting(): Promise<{ run: RunRecord; key: string; capability: string }> {
  const created = await call('alice', 'POST', '/runs', {
    subject: uniqueSubject(),
    reducer: { function_path: '/r/wait' },
    input: 'secret input',
  });
  expect(created.status, created.text).toBe(201);
  const { run, control_capability: capability } = JSON.parse(created.text) as {
    run: RunRecord;
    control_capability: string;
  };
  const key = `cb-${randomUUID()}`;
  keys.set(run.run_id, key);
  await runtime.engine.stepRun(run.run_id);
  const stored = await runtime.store.getRun(run.run_id);
  expect(stored?.open_requests).toEqual([expect.objectContaining({ kind: 'result', resume_key: key })]);
  return { run, key, capability };
}

const succeeded = (text: string) => ({
  envelope: TOOL_RESULT_ENVELOPE,
  status: 'succeeded',
  payload: { text },
});
const invalidEnvelope = { envelope: TOOL_RESULT_ENVELOPE, status: 'not-a-status' };

/** An answer with the key it was for replaced by `{key}`: answers for different keys compare. */
const keyless = (answer: Answer, key: string): Answer => ({
  ...answer,
  text: answer.text.replaceAll(key, '{key}'),
});

describe('resume keys are no oracle', () => {
  it("answers bob alike for alice's used, unused, held and unknown keys, and changes none of her runs", async () => {
    const used = await aliceWaiting();
    const unused = await aliceWaiting();
    const first = await call('alice', 'POST', `/results/${used.key}?delivery_id=d1`, succeeded('first'));
    expect(first.status, first.text).toBe(200);
    expect(JSON.parse(first.text)).toMatchObject({ ack: 'applied', run_id: used.run.run_id });
    // A result held for a key no run waits on yet (a system caller's webhook).
    const heldKey = `cb-${randomUUID()}`;
    const held = await call('ops', 'POST', `/results/${heldKey}?delivery_id=h1`, succeeded('early'));
    expect(held.status, held.text).toBe(202);
    const unknownKey = `cb-${randomUUID()}`;

    const before = await Promise.all([used, unused].map(({ run }) => runtime.store.getRun(run.run_id)));
    const probes: { key: string; query: string; body: unknown }[] = [];
    for (const key of [used.key, unused.key, heldKey, unknownKey])
      for (const query of ['', '?delivery_id=d1', '?delivery_id=h1', '?delivery_id=other'])
        for (const body of [succeeded('bob'), invalidEnvelope]) probes.push({ key, query, body });
    const answers: Answer[] = [];
    for (const probe of probes) {
      const answer = await call('bob', 'POST', `/results/${probe.key}${probe.query}`, probe.body);
      answers.push(keyless(answer, probe.key));
    }
    const expected: Answer = {
      status: 404,
      type: 'application/json',
      text: JSON.stringify({
        code: 'resume_key_not_found',
        message: 'no run waits for that resume_key',
        details: { resume_key: '{key}' },
      }),
    };
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify(expected)]));

    // Nothing of alice's runs changed: same version, same log, the unused key still open.
    const after = await Promise.all([used, unused].map(({ run }) => runtime.store.getRun(run.run_id)));
    expect(after.map((r) => [r?.version, r?.last_seq])).toEqual(before.map((r) => [r?.version, r?.last_seq]));
    expect(after[1]?.open_requests).toEqual([expect.objectContaining({ resume_key: unused.key })]);
  });

  it('keeps the answers of a caller who may deliver: alice, a capability holder, the system caller', async () => {
    const { run, key, capability } = await aliceWaiting();
    // Alice's envelope is still checked and refused with the field; nothing is recorded.
    const refused = await call('alice', 'POST', `/results/${key}?delivery_id=a1`, invalidEnvelope);
    expect(refused.status, refused.text).toBe(400);
    expect(JSON.parse(refused.text)).toMatchObject({ code: 'validation_failed' });
    const applied = await call('alice', 'POST', `/results/${key}?delivery_id=a1`, succeeded('done'));
    expect(applied.status, applied.text).toBe(200);
    const { seq } = JSON.parse(applied.text) as { seq: number };
    expect(JSON.parse(applied.text)).toEqual({ ack: 'applied', run_id: run.run_id, seq });

    const repeat = await call('alice', 'POST', `/results/${key}?delivery_id=a1`, succeeded('done'));
    expect(repeat.status).toBe(200);
    expect(JSON.parse(repeat.text)).toEqual({ ack: 'duplicate', original_seq: seq });
    const other = await call('alice', 'POST', `/results/${key}?delivery_id=a2`, succeeded('done'));
    expect(other.status).toBe(409);
    expect(JSON.parse(other.text)).toMatchObject({ code: 'result_already_delivered' });
    // A system caller sees every run: it gets the same answers as alice.
    const system = await call('ops', 'POST', `/results/${key}?delivery_id=a2`, succeeded('done'));
    expect(system.status).toBe(409);
    expect(JSON.parse(system.text)).toMatchObject({ code: 'result_already_delivered' });

    // Whoever else may see the run gets the same answers: bob, with its capability.
    const withCapability = await call(
      'bob',
      'POST',
      `/results/${key}?delivery_id=a1`,
      succeeded('done'),
      'application/json',
      capability,
    );
    expect(JSON.parse(withCapability.text)).toEqual({ ack: 'duplicate', original_seq: seq });
    // A wrong capability: alice is told it is wrong, bob only that the key is unknown.
    const wrong = 'not-the-capability';
    const aliceWrong = await call(
      'alice',
      'POST',
      `/results/${key}`,
      succeeded('x'),
      'application/json',
      wrong,
    );
    expect(aliceWrong.status).toBe(403);
    expect(JSON.parse(aliceWrong.text)).toMatchObject({ code: 'capability_invalid' });
    const bobWrong = await call('bob', 'POST', `/results/${key}`, succeeded('x'), 'application/json', wrong);
    expect(bobWrong.status).toBe(404);
    expect(JSON.parse(bobWrong.text)).toMatchObject({ code: 'resume_key_not_found' });

    // Early results stay the system caller's: a repeat is a held duplicate, another one refused.
    const heldKey = `cb-${randomUUID()}`;
    const held = await call('ops', 'POST', `/results/${heldKey}?delivery_id=h1`, succeeded('early'));
    expect(held.status, held.text).toBe(202);
    const again = await call('ops', 'POST', `/results/${heldKey}?delivery_id=h1`, succeeded('early'));
    expect(JSON.parse(again.text)).toMatchObject({ ack: 'duplicate', held: true });
    const another = await call('ops', 'POST', `/results/${heldKey}?delivery_id=h2`, succeeded('early'));
    expect(another.status).toBe(409);
    expect(JSON.parse(another.text)).toMatchObject({ code: 'result_already_held' });
    // Alice may not have results held, and learns nothing of the system caller's held one.
    const aliceOnHeld = await call('alice', 'POST', `/results/${heldKey}?delivery_id=h1`, succeeded('x'));
    expect(aliceOnHeld.status).toBe(404);
    expect(JSON.parse(aliceOnHeld.text)).toMatchObject({ code: 'resume_key_not_found' });
  });
});

describe('reserved system paths', () => {
  const reserved = [
    AGENT_LOOP_PATH,
    '/lib/raisin/agent-runs/delegate',
    '/lib/raisin/ai/agent-run-model-turn',
    '/lib/models/openai',
    // Case variants lie beside the reserved prefixes: refused too.
    '/Lib/raisin/x',
    '/LIB/MODELS/openai',
    // Names easily taken for the reserved ones: every path starting with a reserved prefix.
    '/lib/raisin',
    '/lib/raisin.star',
    '/lib/raisin./x',
    '/lib/raisinx/y',
    '/lib/models',
    '/lib/models.js',
  ];

  it('refuses a function PUT at a reserved path to every caller, admins and system callers included', async () => {
    for (const path of reserved) {
      for (const who of ['admin', 'ops', 'alice'] as const) {
        const answer = await call(
          who,
          'PUT',
          `/functions${path}`,
          'export const evil = 1;',
          'application/javascript',
        );
        expect(answer.status, `${who} ${path}`).toBe(403);
        expect(JSON.parse(answer.text)).toMatchObject({
          code: 'reserved_path',
          details: { function_path: path },
        });
      }
    }
    // The built-in reducer is the one shipped; nothing was registered at the other paths.
    const builtin = await runtime.functions.get(AGENT_LOOP_PATH);
    expect(new TextDecoder().decode(builtin?.bytes)).not.toContain('evil');
    for (const path of reserved.slice(1)) expect(await runtime.functions.get(path)).toBeNull();
  });

  it('still lets an admin register a function at any other path', async () => {
    const path = `/agents/ok-${randomUUID()}`;
    const answer = await call(
      'admin',
      'PUT',
      `/functions${path}`,
      'export const ok = 1;',
      'application/javascript',
    );
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ function_path: path });
  });
});

describe('registry answers', () => {
  it('answers bob alike for an agent that is not registered and one that may not act for him', async () => {
    const agent = `functions:/agents/alices-${randomUUID()}`;
    const published = await call('admin', 'POST', '/admin/agents', {
      agent_id: agent,
      acts_for: { users: ['alice'] },
      tools: [],
    });
    expect(published.status, published.text).toBe(201);
    const unregistered = `functions:/agents/nobody-${randomUUID()}`;
    const create = (who: Who, asAgent: string) =>
      call(who, 'POST', '/runs', {
        subject: uniqueSubject(PRINCIPALS[who]?.id),
        reducer: { function_path: '/r/wait' },
        input: 'x',
        as_agent: asAgent,
      });
    const forbidden = await create('bob', agent);
    const unknown = await create('bob', unregistered);
    expect(forbidden.status).toBe(403);
    expect(JSON.parse(forbidden.text)).toMatchObject({
      code: 'agent_not_allowed',
      details: { as_agent: agent },
    });
    const anon = (a: Answer, id: string) => ({ ...a, text: a.text.replaceAll(id, '{agent}') });
    expect(anon(unknown, unregistered)).toEqual(anon(forbidden, agent));
    // Alice, whom the agent may act for, gets her run.
    const allowed = await create('alice', agent);
    expect(allowed.status, allowed.text).toBe(201);
  });
});
