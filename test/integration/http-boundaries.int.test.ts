/**
 * What the HTTP API refuses at its boundary, so that nothing bad is stored: text that is not
 * well-formed Unicode, unknown fields in control bodies, a context too large to start, and the
 * size-limit messages; and what it accepts from a peer's tools (null for absent optional fields).
 * In-process app over DynamoDB Local and fauxqs; each test its own subject.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_CONTEXT_BYTES,
  MAX_TOKENS_PER_TURN,
  type RunEvent,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime, until } from '../support/local-runtime.ts';
import { askOnce, toolLoop } from '../support/reducers.ts';

const TOKEN = 'boundary-token';

/** A peer's reducer: sends null for every optional field it does not use; completes at once. */
function nullsReducer(raw: Record<string, unknown>) {
  const req = raw as { state_rev: number; event: { kind: string } };
  const done = req.event.kind === 'run_started';
  return {
    contract: 'raisin.agent-run.reducer/1',
    state: { done },
    state_rev: req.state_rev + 1,
    effects: done
      ? [
          {
            effect_id: `${req.state_rev + 1}:0`,
            kind: 'complete',
            outcome: 'succeeded',
            summary: null,
            evidence: null,
          },
        ]
      : [],
    projection: null,
    diagnostics: [{ code: 'peer', severity: 'info', message: 'hello', class: null, path: null }],
    refused: null,
  };
}
let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('http-boundaries', {
    heartbeatMs: 100,
    reducers: inProcessReducers({
      '/r/ask': askOnce(),
      '/r/park': toolLoop(1, 'park'),
      '/r/blank-key': toolLoop(1, 'blank_key'),
      '/r/nulls': nullsReducer,
    }),
    registerTools(registry) {
      registry.register({
        name: 'blank_key',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async () => ({
            envelope: 'raisin.tool-result/1',
            status: 'waiting',
            resume_key: '',
            reads: null,
            writes: [],
            artifact_refs: [],
            evidence: [],
            diagnostics: [],
            suggested_next_actions: [],
          }),
        },
        metadata: { mutating: false, replay_safe: true },
      });
      registry.register({
        name: 'park',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => ({
            envelope: 'raisin.tool-result/1',
            status: 'waiting',
            resume_key: `rk-${ctx.run_id}`,
            reads: [],
            writes: [],
            artifact_refs: [],
            evidence: [],
            diagnostics: [],
            suggested_next_actions: [],
          }),
        },
        metadata: { mutating: false, replay_safe: true },
      });
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'una' }),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(() => runtime.close());

function post(path: string, body: unknown, raw?: string) {
  return app.request(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: raw ?? JSON.stringify(body),
  });
}
function get(path: string) {
  return app.request(path, { headers: { authorization: `Bearer ${TOKEN}` } });
}
type ErrorBody = { code: string; message: string; details: Record<string, unknown> };
async function errorOf(response: Response): Promise<ErrorBody & { status: number }> {
  return { status: response.status, ...((await response.json()) as ErrorBody) };
}

async function waitingRun(): Promise<RunRecord> {
  const response = await post('/runs', {
    subject: uniqueSubject('una'),
    reducer: { function_path: '/r/ask' },
  });
  expect(response.status).toBe(201);
  const { run } = (await response.json()) as { run: RunRecord };
  await runtime.engine.stepRun(run.run_id);
  const waiting = await runtime.store.getRun(run.run_id);
  expect(waiting?.status).toBe('waiting');
  return waiting as RunRecord;
}

async function unchanged(run: RunRecord): Promise<void> {
  const after = await runtime.store.getRun(run.run_id);
  expect({ version: after?.version, last_seq: after?.last_seq }).toEqual({
    version: run.version,
    last_seq: run.last_seq,
  });
}

describe('HTTP API: text that is not well-formed Unicode', () => {
  it('refuses a lone surrogate in a create body (subject path, input, a key) with 400 invalid_unicode, creating nothing', async () => {
    for (const [where, raw, path] of [
      [
        'the subject path',
        (s: string) => `{"subject":{"workspace":"w","path":"/a/\\ud800${s}"}}`,
        'subject.path',
      ],
      [
        'the input',
        (s: string) => `{"subject":{"workspace":"w","path":"/a/${s}"},"input":["ok","x\\udc00"]}`,
        'input.1',
      ],
      [
        'a key',
        (s: string) => `{"subject":{"workspace":"w","path":"/a/${s}"},"context":{"\\udbff":1}}`,
        'context.\uFFFD',
      ],
    ] as const) {
      const tag = `${Date.now()}${Math.random().toString(36).slice(2, 8)}`;
      const error = await errorOf(await post('/runs', null, raw(tag)));
      expect(error, where).toMatchObject({ status: 400, code: 'invalid_unicode', details: { path } });
      expect(await runtime.store.findBySubject({ workspace: 'w', path: `/a/${tag}` })).toBeNull();
    }
  });

  it('refuses a lone surrogate in a steer and in a delivered result with 400, and the run is unchanged', async () => {
    const run = await waitingRun();
    const steer = await post(
      `/runs/${run.run_id}/controls`,
      null,
      '{"control_id":"s1","command":"steer","input":"hi \\ud83d"}',
    );
    expect(await errorOf(steer)).toMatchObject({
      status: 400,
      code: 'invalid_unicode',
      details: { path: 'input' },
    });
    const result = await post('/results/rk-any', null, '{"status":"succeeded","payload":{"t":"\\udfff"}}');
    expect(await errorOf(result)).toMatchObject({ status: 400, code: 'invalid_unicode' });
    await unchanged(run);
  });

  it('refuses a body that is not valid UTF-8 with 400 invalid_unicode, creating and changing nothing', async () => {
    const bytes = (text: string, bad: number[]) => {
      const [head = '', tail = ''] = text.split('@');
      const enc = new TextEncoder();
      return new Uint8Array([...enc.encode(head), ...bad, ...enc.encode(tail)]);
    };
    const postBytes = (path: string, body: Uint8Array) =>
      app.request(path, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json; charset=utf-8' },
        body,
      });
    // A lone continuation byte, a truncated sequence, an overlong encoding, an encoded surrogate.
    for (const bad of [[0x80], [0xe2, 0x82], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff]]) {
      const subject = uniqueSubject('una');
      const body = bytes(`{"subject":{"workspace":"${subject.workspace}","path":"${subject.path}@"}}`, bad);
      const error = await errorOf(await postBytes('/runs', body));
      expect(error, JSON.stringify(bad)).toMatchObject({
        status: 400,
        code: 'invalid_unicode',
        details: { target: 'json' },
      });
      expect(await runtime.store.findBySubject({ ...subject, path: `${subject.path}\uFFFD` })).toBeNull();
      expect(await runtime.store.findBySubject(subject)).toBeNull();
    }
    const run = await waitingRun();
    const steer = await postBytes(
      `/runs/${run.run_id}/controls`,
      bytes('{"control_id":"s-bad","command":"steer","input":"hi @"}', [0xc3]),
    );
    expect(await errorOf(steer)).toMatchObject({ status: 400, code: 'invalid_unicode' });
    await unchanged(run);
    // Valid UTF-8 outside ASCII is read as sent.
    const subject = uniqueSubject('una');
    const ok = await postBytes(
      '/runs',
      new TextEncoder().encode(
        JSON.stringify({ subject: { ...subject, path: `${subject.path}/ä😀` }, reducer: null }),
      ),
    );
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as { run: RunRecord }).run.subject.path).toBe(`${subject.path}/ä😀`);
  });

  it('refuses invalid UTF-8 percent-encoding in a path or query with 400 invalid_unicode', async () => {
    expect(await errorOf(await get('/runs/run_%ED%A0%80'))).toMatchObject({
      status: 400,
      code: 'invalid_unicode',
      details: { target: 'path' },
    });
    expect(await errorOf(await get('/runs?subject_workspace=w&subject_path=%2Fa%ED%A0%80'))).toMatchObject({
      status: 400,
      code: 'invalid_unicode',
      details: { target: 'query', parameter: 'subject_path' },
    });
    // Well-formed text outside ASCII is fine.
    expect((await get(`/runs?subject_workspace=w&subject_path=${encodeURIComponent('/ä/😀')}`)).status).toBe(
      200,
    );
  });
});

describe('HTTP API: control characters in a create body', () => {
  it('refuses NUL, ESC, DEL, a C1 control, tab and newline in the subject with 400 naming the field, creating nothing', async () => {
    for (const [field, char] of [
      ['workspace', '\u0000'],
      ['workspace', '\u001b'],
      ['path', '\u001b[2J'],
      ['path', '\u007f'],
      ['path', '\u009b'],
      ['path', '\t'],
      ['path', '\n'],
      ['path', '\r'],
    ] as const) {
      const subject = uniqueSubject('una');
      const bad = { ...subject, [field]: `${subject[field]}${char}` };
      const error = await errorOf(await post('/runs', { subject: bad, reducer: null }));
      expect(error, JSON.stringify(char)).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(error.details.issues).toEqual([
        expect.objectContaining({ path: `subject.${field}`, code: 'control_character' }),
      ]);
      expect(await runtime.store.findBySubject(bad)).toBeNull();
      expect(await runtime.store.findBySubject(subject)).toBeNull();
    }
  });

  it('refuses control characters in the objective but tab and newline, and in a fork subject', async () => {
    for (const char of ['\u0000', '\u001b', '\r', '\u0085']) {
      const subject = uniqueSubject('una');
      const error = await errorOf(await post('/runs', { subject, reducer: null, objective: `do${char}it` }));
      expect(error, JSON.stringify(char)).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(error.details.issues).toEqual([
        expect.objectContaining({ path: 'objective', code: 'control_character' }),
      ]);
      expect(await runtime.store.findBySubject(subject)).toBeNull();
    }
    const created = await post('/runs', {
      subject: uniqueSubject('una'),
      reducer: null,
      objective: 'line 1\n\tline 2',
    });
    expect(created.status).toBe(201);
    const { run } = (await created.json()) as { run: RunRecord };
    expect(run.objective).toBe('line 1\n\tline 2');
    const fork = await errorOf(
      await post(`/runs/${run.run_id}/fork`, {
        checkpoint: 0,
        subject: { workspace: 'w', path: '/f\u001b' },
      }),
    );
    expect(fork).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(fork.details.issues).toEqual([
      expect.objectContaining({ path: 'subject.path', code: 'control_character' }),
    ]);
    expect(await runtime.store.findBySubject({ workspace: 'w', path: '/f\u001b' })).toBeNull();
  });
});

describe('HTTP API: caller-chosen ids hold no control characters', () => {
  it('refuses a control character in a create_key or a control_id with 400 naming the field, writing nothing', async () => {
    const subject = uniqueSubject('una');
    const create = await errorOf(await post('/runs', { subject, reducer: null, create_key: 'k\u007f' }));
    expect(create).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(create.details.issues).toEqual([
      expect.objectContaining({ path: 'create_key', code: 'control_character' }),
    ]);
    expect(await runtime.store.findBySubject(subject)).toBeNull();

    const created = await post('/runs', { subject: uniqueSubject('una'), reducer: null });
    const { run } = (await created.json()) as { run: RunRecord };
    const control = await errorOf(
      await post(`/runs/${run.run_id}/controls`, { control_id: 'c\u001b', command: 'pause' }),
    );
    expect(control).toMatchObject({ status: 400, code: 'validation_failed' });
    expect((await runtime.store.getRun(run.run_id))?.version).toBe(run.version);
  });
});

describe('HTTP API: an event stream resumes only from a seq it sent', () => {
  it('refuses a Last-Event-ID that is not a whole number with 400, and resumes after a valid one', async () => {
    const created = await post('/runs', { subject: uniqueSubject('una'), reducer: null });
    const { run } = (await created.json()) as { run: RunRecord };
    const stream = (lastEventId: string) =>
      app.request(`/runs/${run.run_id}/events/stream?wait=0`, {
        headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': lastEventId },
      });
    // Parsed exactly as `after=` is: plain decimal digits only, as `after=` refuses the same texts.
    for (const bad of ['1e999', '-1', 'x', '1.5', '0x5', '0b11', '.5e1', '+4', '4e0', '3.0', '']) {
      const error = await errorOf(await stream(bad));
      expect(error, JSON.stringify(bad)).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(error.details.issues, JSON.stringify(bad)).toEqual([
        expect.objectContaining({ path: 'last-event-id' }),
      ]);
      const after = await errorOf(
        await app.request(`/runs/${run.run_id}/events/stream?wait=0&after=${encodeURIComponent(bad)}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      );
      expect(after, `after=${JSON.stringify(bad)}`).toMatchObject({ status: 400, code: 'validation_failed' });
    }
    const resumed = await stream('0');
    expect(resumed.status).toBe(200);
    expect(await resumed.text()).toContain('id: 1');
  });
});

describe('HTTP API: control bodies are checked as strictly as create bodies', () => {
  it('refuses a resume with a misspelt field (budget_incrase), naming it, and applies nothing', async () => {
    const run = await waitingRun();
    const response = await post(`/runs/${run.run_id}/controls`, {
      control_id: 'typo-1',
      command: 'resume',
      budget_incrase: { max_turns: 5 },
    });
    const error = await errorOf(response);
    expect(error).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(error.details.issues).toEqual([
      expect.objectContaining({ path: 'budget_incrase', code: 'unrecognized_key' }),
    ]);
    await unchanged(run);
  });

  it('refuses an unknown field on every command', async () => {
    const run = await waitingRun();
    for (const body of [
      { control_id: 'x1', command: 'stop', reasn: 'typo' },
      { control_id: 'x2', command: 'pause', extra: 1 },
      { control_id: 'x3', command: 'steer', input: 'a', inputs: 'b' },
      { control_id: 'x4', command: 'approve', request_id: 'r', subject_digest: 'd', decison: 'rejected' },
      { control_id: 'x5', command: 'provide_input', request_id: 'r', value: 1, valeu: 2 },
    ]) {
      const error = await errorOf(await post(`/runs/${run.run_id}/controls`, body));
      expect(error.status, body.command).toBe(400);
      expect(JSON.stringify(error.details)).toMatch(/reasn|extra|inputs|decison|valeu/);
    }
    await unchanged(run);
  });
});

describe('HTTP API: a budget_increase past a safe integer', () => {
  async function pausedRun(budgets: Record<string, number>): Promise<RunRecord> {
    const response = await post('/runs', {
      subject: uniqueSubject('una'),
      reducer: { function_path: '/r/ask' },
      budgets,
    });
    const { run } = (await response.json()) as { run: RunRecord };
    await runtime.engine.stepRun(run.run_id);
    const paused = await post(`/runs/${run.run_id}/controls`, { control_id: 'p', command: 'pause' });
    expect(await paused.json()).toMatchObject({ ack: 'applied' });
    const record = await runtime.store.getRun(run.run_id);
    expect(record?.status).toBe('paused');
    return record as RunRecord;
  }

  it('refuses a resume whose sum with the limit overflows with 400 validation_failed naming the field, changing nothing', async () => {
    const run = await pausedRun({ max_turns: 10, max_operations: 5 });
    for (const [i, increase] of [
      { max_turns: Number.MAX_SAFE_INTEGER },
      { max_operations: 1, max_turns: Number.MAX_SAFE_INTEGER - 9 },
    ].entries()) {
      const error = await errorOf(
        await post(`/runs/${run.run_id}/controls`, {
          control_id: `r${i}`,
          command: 'resume',
          budget_increase: increase,
        }),
      );
      expect(error).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(error.details.issues).toEqual([
        expect.objectContaining({ path: 'budget_increase.max_turns', code: 'too_big' }),
      ]);
      expect(error.message).toMatch(/budget_increase\.max_turns/);
    }
    await unchanged(run);
    expect((await runtime.store.getRun(run.run_id))?.budgets).toEqual({ max_turns: 10, max_operations: 5 });
    // The largest increase that still fits is applied.
    const fits = await post(`/runs/${run.run_id}/controls`, {
      control_id: 'fits',
      command: 'resume',
      budget_increase: { max_turns: Number.MAX_SAFE_INTEGER - 10 },
    });
    expect(await fits.json()).toMatchObject({ ack: 'applied' });
    expect((await runtime.store.getRun(run.run_id))?.budgets.max_turns).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses 1e308 and an unlimited limit raised past a safe integer alike', async () => {
    const run = await pausedRun({});
    for (const raw of [
      '{"control_id":"big","command":"resume","budget_increase":{"max_wall_ms":1e308}}',
      '{"control_id":"inf","command":"resume","budget_increase":{"max_wall_ms":1e999}}',
      `{"control_id":"unsafe","command":"resume","budget_increase":{"max_wall_ms":${2 ** 53}}}`,
    ]) {
      const error = await errorOf(await post(`/runs/${run.run_id}/controls`, null, raw));
      expect(error, raw).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(error.details.issues, raw).toEqual([
        expect.objectContaining({ path: 'budget_increase.max_wall_ms' }),
      ]);
    }
    await unchanged(run);
  });
});

describe('HTTP API: token usage a client reports', () => {
  it('refuses a turn reporting more than MAX_TOKENS_PER_TURN tokens with 400 naming the field, and the run goes on', async () => {
    const created = await post('/runs', { subject: uniqueSubject('una'), reducer: null, input: 'go' });
    const { run } = (await created.json()) as { run: RunRecord };
    expect(created.status, JSON.stringify(run)).toBe(201);
    const lease = await post(`/runs/${run.run_id}/lease`, { owner: 'tok-loop' });
    const fence = {
      owner: 'tok-loop',
      epoch: ((await lease.json()) as { lease: { epoch: number } }).lease.epoch,
    };
    const turn = async () => {
      const begun = await post(`/runs/${run.run_id}/operations`, { fence, kind: 'model_turn' });
      expect(begun.status).toBe(200);
      return ((await begun.json()) as { operation: { op_id: string } }).operation.op_id;
    };
    const report = (op_id: string, input_tokens: number) =>
      post(`/runs/${run.run_id}/operations/outcome`, {
        fence,
        op_id,
        result: {
          kind: 'model_turn_completed',
          message: { text: 'hi' },
          usage: { input_tokens, output_tokens: 1 },
        },
      });
    const op = await turn();
    const before = await runtime.store.getRun(run.run_id);
    const refused = await report(op, Number.MAX_SAFE_INTEGER);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(await refused.json())).toContain('result.usage.input_tokens');
    expect((await runtime.store.getRun(run.run_id))?.version).toBe(before?.version);
    // The largest report is taken, twice over, and the totals stay exact.
    expect((await report(op, MAX_TOKENS_PER_TURN)).status).toBe(200);
    expect((await report(await turn(), MAX_TOKENS_PER_TURN)).status).toBe(200);
    expect((await runtime.store.getRun(run.run_id))?.usage.input_tokens).toBe(2 * MAX_TOKENS_PER_TURN);
  });
});

describe('HTTP API: a run answer holds no storage keys', () => {
  it('answers metered.record_index_keys empty though the stored record holds the index keys', async () => {
    const created = await post('/runs', { subject: uniqueSubject('una'), reducer: null, input: 'go' });
    const { run } = (await created.json()) as { run: RunRecord };
    const stored = await runtime.store.getRun(run.run_id);
    expect(Object.keys(stored?.metered?.record_index_keys ?? {})).not.toEqual([]);
    const answer = (await (await get(`/runs/${run.run_id}`)).json()) as RunRecord;
    expect(answer.metered?.record_index_keys).toEqual({});
    expect(run.metered?.record_index_keys).toEqual({});
  });
});

describe('HTTP API: sizes', () => {
  it(`refuses at create a context over ${MAX_CONTEXT_BYTES} bytes (a 300 KB instructions) with 400 naming context, creating nothing`, async () => {
    const subject = uniqueSubject('una');
    const response = await post('/runs', {
      subject,
      reducer: { function_path: '/r/ask' },
      context: { instructions: 'x'.repeat(300_000) },
    });
    const error = await errorOf(response);
    expect(error).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(error.details.issues).toEqual([expect.objectContaining({ path: 'context', code: 'too_large' })]);
    expect(error.message).toMatch(new RegExp(`over the ${MAX_CONTEXT_BYTES}-byte limit`));
    expect(await runtime.store.findBySubject(subject)).toBeNull();
  });

  it('accepts a context just under the limit', async () => {
    const instructions = 'y'.repeat(MAX_CONTEXT_BYTES - JSON.stringify({ instructions: '' }).length);
    const response = await post('/runs', {
      subject: uniqueSubject('una'),
      reducer: null,
      context: { instructions },
    });
    expect(response.status).toBe(201);
  });

  it('words every size limit the same way: "<what> is N bytes, over the L-byte limit"', async () => {
    const run = await waitingRun();
    const body = await errorOf(
      await post(`/runs/${run.run_id}/controls`, {
        control_id: 'big',
        command: 'steer',
        input: 'x'.repeat(1_100_000),
      }),
    );
    expect(body).toMatchObject({
      status: 413,
      code: 'payload_too_large',
      details: { limit_bytes: 1024 * 1024 },
    });
    expect(body.message).toMatch(/^the body is (\d+ bytes, )?over the 1048576-byte limit$/);
    const context = await errorOf(
      await post('/runs', {
        subject: uniqueSubject('una'),
        reducer: null,
        context: { t: 'z'.repeat(200_000) },
      }),
    );
    expect(context.message).toMatch(/context and objective is \d+ bytes, over the 163840-byte limit$/);
  });
});

describe('HTTP API: a peer tool result with null for absent optional fields', () => {
  it('accepts a delivered envelope whose optionals are null (diagnostic class, error_class, retry_policy)', async () => {
    const response = await post('/runs', {
      subject: uniqueSubject('una'),
      reducer: { function_path: '/r/park' },
    });
    const { run } = (await response.json()) as { run: RunRecord };
    await runtime.engine.stepRun(run.run_id);
    const delivered = await post(`/results/rk-${run.run_id}`, {
      envelope: 'raisin.tool-result/1',
      operation_id: null,
      status: 'succeeded',
      payload: { ok: true },
      error_class: null,
      resume_key: null,
      reads: [],
      writes: [],
      artifact_refs: [],
      evidence: [],
      diagnostics: [{ code: 'note', severity: 'info', message: 'fine', class: null, path: null }],
      suggested_next_actions: [],
      retry_policy: null,
    });
    expect(delivered.status).toBe(200);
    await runtime.engine.stepRun(run.run_id);
    const done = await until(
      async () => (await (await get(`/runs/${run.run_id}/events`)).json()) as { events: RunEvent[] },
      (page) => page.events.some((e) => e.kind === 'tool_result'),
      10_000,
    );
    const result = done.events.find((e) => e.kind === 'tool_result');
    expect(result?.data.envelope).toMatchObject({ status: 'succeeded' });
  });

  it('answers a tool result with resume_key "" as waiting_without_resume_key (not envelope_mismatch)', async () => {
    const response = await post('/runs', {
      subject: uniqueSubject('una'),
      reducer: { function_path: '/r/blank-key' },
    });
    const { run } = (await response.json()) as { run: RunRecord };
    await runtime.engine.stepRun(run.run_id);
    const page = (await (await get(`/runs/${run.run_id}/events`)).json()) as { events: RunEvent[] };
    const result = page.events.find((e) => e.kind === 'tool_result');
    expect(result?.data.envelope).toMatchObject({
      status: 'failed',
      diagnostics: [expect.objectContaining({ code: 'waiting_without_resume_key', path: 'resume_key' })],
    });
  });

  it('runs a peer reducer that sends null for absent optionals (summary, evidence, diagnostic class)', async () => {
    const response = await post('/runs', {
      subject: uniqueSubject('una'),
      reducer: { function_path: '/r/nulls' },
    });
    const { run } = (await response.json()) as { run: RunRecord };
    await runtime.engine.stepRun(run.run_id);
    const after = (await (await get(`/runs/${run.run_id}`)).json()) as RunRecord;
    expect(after).toMatchObject({ status: 'completed', outcome: 'succeeded' });
  });
});
