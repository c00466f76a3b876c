/**
 * No control characters in the identifiers the API takes, through the HTTP
 * API on DynamoDB Local and fauxqs, with the users alice and bob, an admin and a system caller: a
 * C0 control, DEL or a C1 control in a create's reducer path, handler, node_id, as_agent or
 * on_behalf_of, in a resume key or a delivery_id, in a client-driven lease owner, tool name,
 * call id or op id, in an approval's request_id, or in a group, tool or agent name of a registry
 * document is refused 400 validation_failed, the issue coded `control_character` and naming the
 * field, and nothing is written. A resume key is refused alike for every caller, so the refusal
 * says nothing of the key's run. The rule: lib/contracts/clean-text.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { localRuntime } from '../support/local-runtime.ts';

const TAG = randomUUID().slice(0, 8);
const PRINCIPALS: Record<string, Principal> = {
  alice: { kind: 'user', id: `ids-alice-${TAG}` },
  bob: { kind: 'user', id: `ids-bob-${TAG}` },
  admin: { kind: 'user', id: `ids-admin-${TAG}` },
  ops: { kind: 'system', id: 'ops' },
};
type Who = keyof typeof PRINCIPALS;

let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('identifiers'));
  const auth = Object.keys(PRINCIPALS).map((who) =>
    bearerTokenAuth(`t-${who}`, PRINCIPALS[who], { admin: who === 'admin' }),
  );
  app = createHttpApp({ ...runtime, auth: anyOf(...auth), log: () => {} });
});

afterAll(() => runtime.close());

type Answer = {
  status: number;
  body: { code?: string; details?: { issues?: unknown[] } } & Record<string, unknown>;
};

async function call(who: Who, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer t-${who}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** Expects a 400 validation_failed whose issues name `field` with the code control_character. */
function expectControlCharacter(answer: Answer, field: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  expect(answer.body.code).toBe('validation_failed');
  expect(answer.body.details?.issues).toEqual(
    expect.arrayContaining([expect.objectContaining({ path: field, code: 'control_character' })]),
  );
}

const own = (who: Who) => ({ workspace: `user:${PRINCIPALS[who]?.id}`, path: `/ids/${randomUUID()}` });

describe('control characters in identifiers', () => {
  it("refuses them in a create's reducer path, handler, node_id, as_agent and on_behalf_of, writing nothing", async () => {
    const cases: [Who, string, (subject: ReturnType<typeof own>) => Record<string, unknown>][] = [
      [
        'alice',
        'reducer.function_path',
        (subject) => ({ subject, reducer: { function_path: '/r/\u001b[2J' } }),
      ],
      [
        'alice',
        'reducer.handler',
        (subject) => ({ subject, reducer: { function_path: '/r/a', handler: 'h\u0000' } }),
      ],
      [
        'alice',
        'subject.node_id',
        (subject) => ({ subject: { ...subject, node_id: 'n\u009b1' }, reducer: null }),
      ],
      ['alice', 'as_agent', (subject) => ({ subject, reducer: null, as_agent: 'functions:/agents/a\u007f' })],
      ['ops', 'on_behalf_of', (subject) => ({ subject, reducer: null, on_behalf_of: 'ali\u0085ce' })],
    ];
    for (const [who, field, body] of cases) {
      const subject = own('alice');
      expectControlCharacter(await call(who, 'POST', '/runs', body(subject)), field);
      expect(await runtime.store.findBySubject(subject)).toBeNull();
    }
  });

  it('refuses them in a run id of the path, alike for every caller, echoing none', async () => {
    for (const [suffix, route] of [
      ['\u0007', ''],
      ['\u009b', '/events'],
    ] as const) {
      const path = `/runs/${encodeURIComponent(`run_${randomUUID()}${suffix}`)}${route}`;
      const answers = await Promise.all((['alice', 'bob'] as const).map((who) => call(who, 'GET', path)));
      for (const answer of answers) {
        expectControlCharacter(answer, 'id');
        expect(JSON.stringify(answer.body)).not.toContain(suffix);
      }
      expect(answers[1]).toEqual(answers[0]);
    }
    const control = await call('alice', 'POST', `/runs/${encodeURIComponent('run_x\u007f')}/controls`, {
      control_id: 'c1',
      command: 'stop',
    });
    expectControlCharacter(control, 'id');
  });

  it('refuses them in a resume key alike for every caller, and in a delivery_id', async () => {
    const keys = ['callback:run_x/op/1\u001b', `callback:${randomUUID()}\u0000`, 'k\u009d'];
    for (const key of keys) {
      const path = `/results/${encodeURIComponent(key)}`;
      const answers = await Promise.all(
        (['alice', 'bob', 'ops'] as const).map((who) => call(who, 'POST', path, { value: 1 })),
      );
      for (const answer of answers) expectControlCharacter(answer, 'resume_key');
      // One answer whoever asks: the refusal depends on the key's text only.
      expect(answers[1]).toEqual(answers[0]);
      expect(answers[2]).toEqual(answers[0]);
    }
    const delivery = await call(
      'alice',
      'POST',
      `/results/callback:x?delivery_id=${encodeURIComponent('d\u0007')}`,
      {
        value: 1,
      },
    );
    expect(delivery.status).toBe(400);
    expect(delivery.body.code).toBe('validation_failed');
  });

  it('refuses them in a lease owner, a tool name, a call id, an op id and a request_id, changing nothing', async () => {
    const created = await call('alice', 'POST', '/runs', {
      subject: own('alice'),
      reducer: null,
      input: 'go',
    });
    expect(created.status).toBe(201);
    const run = created.body.run as RunRecord;
    const before = await runtime.store.getRun(run.run_id);
    expectControlCharacter(
      await call('alice', 'POST', `/runs/${run.run_id}/lease`, { owner: 'w\u001b]0;x\u0007' }),
      'owner',
    );
    expect((await runtime.store.getRun(run.run_id))?.version).toBe(before?.version);

    const lease = await call('alice', 'POST', `/runs/${run.run_id}/lease`, { owner: 'worker-1' });
    expect(lease.status, JSON.stringify(lease.body)).toBe(200);
    const fence = { owner: 'worker-1', epoch: (lease.body.lease as { epoch: number }).epoch };
    const leased = await runtime.store.getRun(run.run_id);
    const begin = (request: Record<string, unknown>) =>
      call('alice', 'POST', `/runs/${run.run_id}/operations`, {
        fence,
        kind: 'tool_call',
        replay_safe: true,
        request,
      });
    expectControlCharacter(await begin({ tool: 'look\u009bup', mutating: false }), 'request.tool');
    expectControlCharacter(
      await begin({ tool: 'lookup', mutating: false, call_id: 'c\u0001' }),
      'request.call_id',
    );
    expectControlCharacter(
      await call('alice', 'POST', `/runs/${run.run_id}/operations/outcome`, {
        fence,
        op_id: 'o\u0000',
        result: 1,
      }),
      'op_id',
    );
    expectControlCharacter(
      await call('alice', 'POST', `/runs/${run.run_id}/controls`, {
        control_id: 'ok-1',
        command: 'approve',
        request_id: 'r\u001b',
        subject_digest: 'd',
      }),
      'request_id',
    );
    const after = await runtime.store.getRun(run.run_id);
    expect(after?.version).toBe(leased?.version);
    expect(after?.last_seq).toBe(leased?.last_seq);
  });

  it("refuses them in a client's custom kind, reported call ids and names, finish reason, error class and fail code", async () => {
    const created = await call('alice', 'POST', '/runs', {
      subject: own('alice'),
      reducer: null,
      input: 'go',
    });
    const run = created.body.run as RunRecord;
    const lease = await call('alice', 'POST', `/runs/${run.run_id}/lease`, { owner: 'worker-2' });
    const fence = { owner: 'worker-2', epoch: (lease.body.lease as { epoch: number }).epoch };
    const custom = (name: string) =>
      call('alice', 'POST', `/runs/${run.run_id}/operations`, {
        fence,
        kind: 'custom',
        name,
        replay_safe: true,
      });
    expectControlCharacter(await custom('n\u202e\u0000'), 'name');
    // A runtime tool's name is not a custom kind either (a log would show a delegation).
    const reserved = await custom('/lib/raisin/agent-runs/delegate');
    expect(reserved.status).toBe(400);
    expect(reserved.body.details?.issues).toContainEqual(expect.objectContaining({ code: 'reserved_tool' }));
    const turn = await call('alice', 'POST', `/runs/${run.run_id}/operations`, { fence, kind: 'model_turn' });
    const op_id = (turn.body.operation as { op_id: string }).op_id;
    const report = (result: Record<string, unknown>) =>
      call('alice', 'POST', `/runs/${run.run_id}/operations/outcome`, { fence, op_id, result });
    const completed = (extra: Record<string, unknown>) => ({
      kind: 'model_turn_completed',
      usage: { input_tokens: 1, output_tokens: 1 },
      ...extra,
    });
    expectControlCharacter(
      await report(completed({ tool_calls: [{ call_id: 'c\u2028', name: 'lookup', args: {} }] })),
      'result.tool_calls.0.call_id',
    );
    expectControlCharacter(
      await report(completed({ tool_calls: [{ call_id: 'c1', name: '\u202eevil\u0007', args: {} }] })),
      'result.tool_calls.0.name',
    );
    expectControlCharacter(await report(completed({ finish_reason: '\u0007' })), 'result.finish_reason');
    expectControlCharacter(
      await report({ kind: 'operation_failed', error_class: 'x\u202e', retryable: false, message: 'm' }),
      'result.error_class',
    );
    expectControlCharacter(
      await call('alice', 'POST', `/runs/${run.run_id}/fail`, { fence, code: 'x\u0000' }),
      'code',
    );
    expect((await runtime.store.getRun(run.run_id))?.status).toBe('running');
    // A create's model-turn function path is an identifier too.
    expectControlCharacter(
      await call('alice', 'POST', '/runs', {
        subject: own('alice'),
        reducer: null,
        executor_config: { model_turn_function: '/lib/models/\u202e' },
      }),
      'executor_config.model_turn_function',
    );
    const notText = await call('alice', 'POST', '/runs', {
      subject: own('alice'),
      reducer: null,
      executor_config: { model_turn_function: 123 },
    });
    expect(notText.status).toBe(400);
  });

  it('refuses them in the group, tool and agent names of registry documents', async () => {
    expectControlCharacter(
      await call('admin', 'POST', '/admin/policy', { rules: [{ effect: 'deny', groups: ['st\u001baff'] }] }),
      'rules.0.groups.0',
    );
    expectControlCharacter(
      await call('admin', 'POST', '/admin/agents', {
        agent_id: `functions:/agents/a-${TAG}`,
        acts_for: { users: [], groups: ['g\u0000'] },
        tools: ['t\u007f'],
      }),
      'acts_for.groups.0',
    );
    expectControlCharacter(
      await call('admin', 'POST', '/admin/workspaces', { workspace: `ws-${TAG}`, groups: ['te\u0085am'] }),
      'groups.0',
    );
    // A function path is letters, digits and . _ - only: a control character is refused too.
    const put = await app.request(`/functions/r/${encodeURIComponent('a\u001b')}`, {
      method: 'PUT',
      headers: { authorization: 'Bearer t-admin', 'content-type': 'application/javascript' },
      body: 'export default {}',
    });
    expect(put.status).toBe(400);
  });
});

/** Bidirectional formatting characters and the line and paragraph separators. */
const BIDI = [
  '\u061c',
  '\u200e',
  '\u200f',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u2028',
  '\u2029',
];

describe('bidirectional characters and separators in identifiers', () => {
  it('refuses each in a subject path as a control character, writing nothing', async () => {
    for (const char of BIDI) {
      const subject = { ...own('alice'), path: `/x${char}gnp.exe-${randomUUID()}` };
      const answer = await call('alice', 'POST', '/runs', { subject, reducer: null });
      expectControlCharacter(answer, 'subject.path');
      expect(JSON.stringify(answer.body), `U+${char.charCodeAt(0).toString(16)}`).toContain(
        `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`,
      );
      expect(await runtime.store.findBySubject(subject)).toBeNull();
    }
  });

  it('refuses them in the workspace, node_id, create_key, reducer path, resume key and op id', async () => {
    const cases: [string, (subject: ReturnType<typeof own>) => Record<string, unknown>][] = [
      [
        'subject.workspace',
        (subject) => ({ subject: { ...subject, workspace: `${subject.workspace}\u202e` } }),
      ],
      ['subject.node_id', (subject) => ({ subject: { ...subject, node_id: 'n\u2028x' } })],
      ['create_key', (subject) => ({ subject, create_key: 'k\u2066' })],
      ['reducer.function_path', (subject) => ({ subject, reducer: { function_path: '/r/\u200fa' } })],
    ];
    for (const [field, body] of cases) {
      const subject = own('alice');
      expectControlCharacter(
        await call('alice', 'POST', '/runs', { reducer: null, ...body(subject) }),
        field,
      );
      expect(await runtime.store.findBySubject(subject)).toBeNull();
    }
    const answers = await Promise.all(
      (['alice', 'bob'] as const).map((who) =>
        call(who, 'POST', `/results/${encodeURIComponent('callback:run_x/op/1\u2029')}`, { value: 1 }),
      ),
    );
    for (const answer of answers) expectControlCharacter(answer, 'resume_key');
    expect(answers[1]).toEqual(answers[0]);
  });

  it('keeps them in an objective, which is prose (right-to-left text needs its marks)', async () => {
    const created = await call('alice', 'POST', '/runs', {
      subject: own('alice'),
      reducer: null,
      objective: 'שלום\u200f world',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });
});

describe('subject bounds', () => {
  /** Expects a 400 validation_failed whose issues name `field` with the code too_big. */
  function expectTooBig(answer: Answer, field: string): void {
    expect(answer.status, JSON.stringify(answer.body).slice(0, 500)).toBe(400);
    expect(answer.body.code).toBe('validation_failed');
    expect(answer.body.details?.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: field, code: 'too_big' })]),
    );
  }

  it('refuses a workspace over 256, a path over 1024 and a node_id over 256 characters, writing nothing', async () => {
    const huge = { ...own('bob'), path: `/${'p'.repeat(300_000)}` };
    expectTooBig(await call('bob', 'POST', '/runs', { subject: huge, reducer: null }), 'subject.path');
    expect(await runtime.store.findBySubject(huge)).toBeNull();
    const path = { ...own('bob'), path: `/${'p'.repeat(1024)}` };
    expectTooBig(await call('bob', 'POST', '/runs', { subject: path, reducer: null }), 'subject.path');
    expect(await runtime.store.findBySubject(path)).toBeNull();
    const workspace = { ...own('bob'), workspace: `user:${'w'.repeat(252)}` };
    expectTooBig(
      await call('bob', 'POST', '/runs', { subject: workspace, reducer: null }),
      'subject.workspace',
    );
    const node = { ...own('bob'), node_id: 'n'.repeat(257) };
    expectTooBig(await call('bob', 'POST', '/runs', { subject: node, reducer: null }), 'subject.node_id');
    expect(await runtime.store.findBySubject(node)).toBeNull();
    const listed = await call(
      'bob',
      'GET',
      `/runs?subject_workspace=${encodeURIComponent(huge.workspace)}&subject_path=${'p'.repeat(1025)}`,
    );
    expectTooBig(listed, 'subject_path');
  });

  it('accepts a subject at the bounds', async () => {
    const subject = { ...own('bob'), path: `/${'p'.repeat(1023)}`, node_id: 'n'.repeat(256) };
    const created = await call('bob', 'POST', '/runs', { subject, reducer: null });
    expect(created.status, JSON.stringify(created.body).slice(0, 500)).toBe(201);
  });
});
