/**
 * The HTTP API in-process (`app.request`) over a runtime from createRuntime on DynamoDB Local
 * and fauxqs, with in-process reducers and module tools. Each test uses its own subject; the
 * file has its own step queue.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { askOnce, toolLoop } from '../support/reducers.ts';

const _local = inject('localServices');
const ALICE_TOKEN = 'alice-token';
const BOB_TOKEN = 'bob-token';
const DIGEST = 'a'.repeat(64);

type Req = {
  state: { seen?: number } | null;
  state_rev: number;
  event: { seq: number; kind: string; data: Record<string, unknown> };
};

/** Asks for approval of DIGEST at start; completes with the decision. */
function approveOnce() {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const rev = req.state_rev + 1;
    const answer = (effects: Record<string, unknown>[]) => ({
      contract: 'raisin.agent-run.reducer/1',
      state: { seen: req.event.seq },
      state_rev: rev,
      effects: effects.map((e, i) => ({ effect_id: `${rev}:${i}`, ...e })),
      projection: null,
      diagnostics: [],
      refused: null,
    });
    if (req.event.seq <= (req.state?.seen ?? 0)) {
      return { ...answer([]), state: req.state, state_rev: req.state_rev };
    }
    if (req.event.kind === 'run_started') {
      return answer([
        {
          kind: 'request_approval',
          subject: { kind: 'plan', digest: DIGEST, digest_alg: 'sha256', summary: 'deploy v2' },
        },
      ]);
    }
    if (req.event.kind === 'request_resolved') {
      return answer([{ kind: 'complete', outcome: 'succeeded', summary: String(req.event.data.decision) }]);
    }
    return answer([]);
  };
}

let runtime: Runtime;
let app: HttpApp;

beforeAll(async () => {
  ({ runtime } = await localRuntime('http-api', {
    heartbeatMs: 100,
    reducers: inProcessReducers({
      '/r/loop': toolLoop(2),
      '/r/slow': toolLoop(1, 'slow'),
      '/r/ask': askOnce(),
      '/r/approve': approveOnce(),
      '/r/park': toolLoop(1, 'park'),
    }),
    registerTools(registry) {
      registry.register({
        name: 'lookup',
        version: '1.0.0',
        description: 'echoes its argument',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async (args) => ({ echo: args.i }) },
        metadata: { mutating: false, replay_safe: true },
      });
      registry.register({
        name: 'slow',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: (_args, ctx) =>
            new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve({ aborted: true }))),
        },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 20_000 },
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
    auth: anyOf(
      bearerTokenAuth(ALICE_TOKEN, { kind: 'user', id: 'alice' }),
      bearerTokenAuth(BOB_TOKEN, { kind: 'user', id: 'bob' }, { admin: false }),
    ),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(() => runtime.close());

// ---------------------------------------------------------------- helpers

function request(
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; token?: string | null; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  const token = options.token === undefined ? ALICE_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && headers['content-type'] === undefined)
    headers['content-type'] = 'application/json';
  return app.request(path, { method, headers, ...(body !== undefined ? { body } : {}) });
}

async function json<T = Record<string, unknown>>(response: Response | Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

async function createRun(reducer: string | null, extra: Record<string, unknown> = {}) {
  const response = await request('POST', '/runs', {
    body: {
      subject: uniqueSubject(),
      reducer: reducer === null ? null : { function_path: reducer },
      input: 'go',
      ...extra,
    },
  });
  expect(response.status).toBe(201);
  return json<{ run: RunRecord; created: boolean; control_capability: string }>(response);
}

async function stored(runId: string): Promise<RunRecord> {
  const record = await runtime.store.getRun(runId);
  if (record === null) throw new Error(`no run ${runId}`);
  return record;
}

async function waitingRun(): Promise<RunRecord> {
  const { run } = await createRun('/r/ask');
  await runtime.engine.stepRun(run.run_id);
  const waiting = await stored(run.run_id);
  expect(waiting.status).toBe('waiting');
  return waiting;
}

// ---------------------------------------------------------------- tests

describe('HTTP API: runs', () => {
  it('creates a run (201), returns the live run for the same subject (200, created false), and completes it', async () => {
    const subject = uniqueSubject();
    const first = await request('POST', '/runs', {
      body: { subject, reducer: { function_path: '/r/loop' }, input: 'go' },
    });
    expect(first.status).toBe(201);
    const created = await json<{ run: RunRecord; created: boolean; control_capability?: string }>(first);
    expect(created.created).toBe(true);
    expect(created.control_capability).toEqual(expect.any(String));
    expect(created.run).toMatchObject({
      status: 'queued',
      subject,
      principal: { kind: 'user', id: 'alice' },
    });

    const again = await request('POST', '/runs', {
      body: { subject, reducer: { function_path: '/r/loop' }, input: 'x' },
    });
    expect(again.status).toBe(200);
    const existing = await json<{ run: RunRecord; created: boolean; control_capability?: string }>(again);
    expect(existing).toMatchObject({ created: false, run: { run_id: created.run.run_id } });
    expect(existing.control_capability).toBeUndefined();

    await runtime.engine.stepRun(created.run.run_id);

    const done = await json<RunRecord>(request('GET', `/runs/${created.run.run_id}`));
    expect(done).toMatchObject({ status: 'completed', outcome: 'succeeded', summary: '2 calls' });
    const page = await json<{ events: RunEvent[]; status: string; last_seq: number; next_after: number }>(
      request('GET', `/runs/${created.run.run_id}/events?after=0&limit=1000`),
    );
    expect(page.events.map((e) => e.seq)).toEqual(page.events.map((_, i) => i + 1));
    expect(page.events.filter((e) => e.kind === 'tool_result')).toHaveLength(2);
    expect(page).toMatchObject({
      status: 'completed',
      last_seq: done.last_seq,
      next_after: done.last_seq,
      settled: true,
    });
  });

  it('replays a create_key with the same request with 200 and created false, and refuses it for another request with 409', async () => {
    const key = `k-${randomUUID()}`;
    const subject = uniqueSubject();
    const first = await createRun('/r/ask', { create_key: key, subject });
    const body = { subject, reducer: { function_path: '/r/ask' }, input: 'go', create_key: key };
    const replay = await request('POST', '/runs', { body });
    expect(replay.status).toBe(200);
    expect(await json(replay)).toMatchObject({ created: false, run: { run_id: first.run.run_id } });
    const other = await request('POST', '/runs', {
      body: { ...body, subject: uniqueSubject(), input: 'other' },
    });
    expect(other.status).toBe(409);
    expect(await json(other)).toMatchObject({ code: 'create_key_reused' });
  });

  it('answers 422 reducer_not_found for a reducer that is not registered', async () => {
    const response = await request('POST', '/runs', {
      body: { subject: uniqueSubject(), reducer: { function_path: '/r/missing' }, input: 1 },
    });
    expect(response.status).toBe(422);
    expect(await json(response)).toMatchObject({ code: 'reducer_not_found' });
  });

  it('lists runs by subject and by status, only those the caller may read', async () => {
    const run = await waitingRun();
    const bySubject = await json<{ runs: RunRecord[] }>(
      request(
        'GET',
        `/runs?subject_workspace=${run.subject.workspace}&subject_path=${encodeURIComponent(run.subject.path)}`,
      ),
    );
    expect(bySubject.runs.map((r) => r.run_id)).toEqual([run.run_id]);

    let found = false;
    let cursor: string | undefined;
    for (let page = 0; page < 50 && !found; page += 1) {
      const out = await json<{ runs: RunRecord[]; cursor?: string }>(
        request(
          'GET',
          `/runs?status=waiting&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        ),
      );
      expect(out.runs.every((r) => r.status === 'waiting' && r.principal.id === 'alice')).toBe(true);
      found = out.runs.some((r) => r.run_id === run.run_id);
      cursor = out.cursor;
      if (cursor === undefined) break;
    }
    expect(found).toBe(true);

    const asBob = await json<{ runs: RunRecord[] }>(
      request(
        'GET',
        `/runs?subject_workspace=${run.subject.workspace}&subject_path=${encodeURIComponent(run.subject.path)}`,
        { token: BOB_TOKEN },
      ),
    );
    expect(asBob.runs).toEqual([]);
  });

  it('refuses a listing without a filter, and a cursor it did not issue, with 400', async () => {
    const none = await request('GET', '/runs');
    expect(none.status).toBe(400);
    expect(await json(none)).toMatchObject({ code: 'validation_failed', details: { target: 'query' } });
    const badCursor = await request('GET', '/runs?status=waiting&cursor=3|not-base64-json');
    expect(badCursor.status).toBe(400);
    expect(await json(badCursor)).toMatchObject({ code: 'validation_failed' });
    for (const garbage of ['garbage', '99|', '-1|']) {
      const res = await request('GET', `/runs?status=waiting&cursor=${encodeURIComponent(garbage)}`);
      expect(res.status).toBe(400);
    }
  });

  it('reads checkpoints, and answers 404 checkpoint_not_found for a missing one', async () => {
    const run = await waitingRun();
    const ack = await json(
      request('POST', `/runs/${run.run_id}/controls`, { body: { control_id: 'p1', command: 'pause' } }),
    );
    expect(ack).toMatchObject({ ack: 'applied' });
    const list = await json<{ checkpoints: { n: number; reason: string }[] }>(
      request('GET', `/runs/${run.run_id}/checkpoints`),
    );
    expect(list.checkpoints).toHaveLength(1);
    const n = list.checkpoints[0]?.n ?? -1;
    expect(await json(request('GET', `/runs/${run.run_id}/checkpoints/${n}`))).toMatchObject({
      n,
      reason: 'paused',
    });
    const missing = await request('GET', `/runs/${run.run_id}/checkpoints/999`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ code: 'checkpoint_not_found' });
  });

  it('lists a run’s child runs (none for a run that never delegated), and 404 for another user as for an unknown run', async () => {
    const run = await waitingRun();
    expect(await json(request('GET', `/runs/${run.run_id}/children`))).toEqual({ children: [] });
    const other = await request('GET', `/runs/${run.run_id}/children`, { token: BOB_TOKEN });
    expect(other.status).toBe(404);
    expect(await json(other)).toMatchObject({ code: 'run_not_found' });
    const missing = await request('GET', `/runs/run_${randomUUID()}/children`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ code: 'run_not_found' });
  });

  it('marks a stopped run’s event page settled only once its reducer has answered the stopped event', async () => {
    const run = await waitingRun();
    await json(
      request('POST', `/runs/${run.run_id}/controls`, { body: { control_id: 'st', command: 'stop' } }),
    );
    const ended = await json<{ status: string; settled: boolean; last_seq: number }>(
      request('GET', `/runs/${run.run_id}/events?after=0`),
    );
    expect(ended).toMatchObject({ status: 'stopped', settled: false });
    await runtime.engine.stepRun(run.run_id);
    const settled = await json<{ settled: boolean; last_seq: number; events: RunEvent[] }>(
      request('GET', `/runs/${run.run_id}/events?after=0`),
    );
    expect(settled.settled).toBe(true);
    expect(settled.last_seq).toBeGreaterThan(ended.last_seq);
    expect(settled.events.at(-1)?.kind).toBe('reducer_answered');
  });

  it('answers 404 run_not_found for an unknown run', async () => {
    const response = await request('GET', `/runs/run_${randomUUID()}`);
    expect(response.status).toBe(404);
    expect(await json(response)).toMatchObject({ code: 'run_not_found', message: expect.any(String) });
  });
});

describe('HTTP API: controls', () => {
  it('runs an approval round trip: a stale digest is rejected (200), the right one completes the run', async () => {
    const { run } = await createRun('/r/approve');
    await runtime.engine.stepRun(run.run_id);
    const waiting = await json<RunRecord>(request('GET', `/runs/${run.run_id}`));
    expect(waiting.status).toBe('waiting');
    const approval = waiting.open_requests[0];
    expect(approval).toMatchObject({ kind: 'approval', subject: { digest: DIGEST } });
    const requestId = approval?.request_id;

    const stale = await request('POST', `/runs/${run.run_id}/controls`, {
      body: {
        control_id: 'a-stale',
        command: 'approve',
        request_id: requestId,
        subject_digest: 'b'.repeat(64),
      },
    });
    expect(stale.status).toBe(200);
    expect(await json(stale)).toMatchObject({
      ack: 'rejected',
      reason: 'digest_mismatch',
      seq: expect.any(Number),
    });

    const good = await request('POST', `/runs/${run.run_id}/controls`, {
      body: { control_id: 'a-good', command: 'approve', request_id: requestId, subject_digest: DIGEST },
    });
    expect(good.status).toBe(200);
    expect(await json(good)).toMatchObject({ ack: 'applied' });

    await runtime.engine.stepRun(run.run_id);
    expect(await json(request('GET', `/runs/${run.run_id}`))).toMatchObject({
      status: 'completed',
      summary: 'approved',
    });
  });

  it('stops a run during an operation: cancelling at once, stopped when the operation returns', async () => {
    const { run } = await createRun('/r/slow');
    const step = runtime.engine.stepRun(run.run_id);
    let current = await stored(run.run_id);
    for (let i = 0; i < 100 && !(current.status === 'running' && current.operation?.started_at); i += 1) {
      await new Promise((r) => setTimeout(r, 20));
      current = await stored(run.run_id);
    }
    expect(current.operation?.started_at).toEqual(expect.any(Number));

    const stop = await request('POST', `/runs/${run.run_id}/controls`, {
      body: { control_id: 's1', command: 'stop', reason: 'enough' },
    });
    expect(stop.status).toBe(200);
    expect(await json(stop)).toMatchObject({ ack: 'applied' });
    expect((await stored(run.run_id)).status).toBe('cancelling');

    await step;
    const stopped = await json<RunRecord>(request('GET', `/runs/${run.run_id}`));
    expect(stopped.status).toBe('stopped');
    expect(stopped.operation).toBeNull();
  });

  it('answers a resent control with the same ack (duplicate) and writes nothing', async () => {
    const run = await waitingRun();
    const body = { control_id: 'steer-1', command: 'steer', input: 'also this' };
    const first = await json<{ ack: string; seq: number }>(
      request('POST', `/runs/${run.run_id}/controls`, { body }),
    );
    expect(first).toMatchObject({ ack: 'applied' });
    const before = await stored(run.run_id);

    const again = await request('POST', `/runs/${run.run_id}/controls`, { body });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual({ ack: 'duplicate', original_seq: first.seq });
    const after = await stored(run.run_id);
    expect({ version: after.version, last_seq: after.last_seq }).toEqual({
      version: before.version,
      last_seq: before.last_seq,
    });

    const reused = await json(
      request('POST', `/runs/${run.run_id}/controls`, { body: { control_id: 'steer-1', command: 'pause' } }),
    );
    expect(reused).toMatchObject({ ack: 'rejected', reason: 'control_id_reused' });
  });

  it('acks controls on a terminal run as rejected run_terminal (200), and its log stays as it ended', async () => {
    const run = await waitingRun();
    await request('POST', `/runs/${run.run_id}/controls`, { body: { control_id: 'stop', command: 'stop' } });
    const ended = await stored(run.run_id);
    const late = await request('POST', `/runs/${run.run_id}/controls`, {
      body: { control_id: 'late', command: 'pause' },
    });
    expect(late.status).toBe(200);
    expect(await json(late)).toMatchObject({ ack: 'rejected', reason: 'run_terminal' });
    // Thirty more stops by the owner: none of them is written into the ended run.
    for (let i = 0; i < 30; i += 1) {
      const again = await request('POST', `/runs/${run.run_id}/controls`, {
        body: { control_id: `stop-${i}`, command: 'stop' },
      });
      expect(await json(again)).toMatchObject({ ack: 'rejected', reason: 'run_terminal' });
    }
    const after = await stored(run.run_id);
    expect({ version: after.version, last_seq: after.last_seq }).toEqual({
      version: ended.version,
      last_seq: ended.last_seq,
    });
  });

  it('delivers an external result by resume key, refuses a second one for the used key (409), and holds one for an unknown key', async () => {
    const { run } = await createRun('/r/park');
    await runtime.engine.stepRun(run.run_id);
    const waiting = await stored(run.run_id);
    expect(waiting.open_requests[0]).toMatchObject({ kind: 'result', resume_key: `rk-${run.run_id}` });

    const delivered = await request('POST', `/results/rk-${run.run_id}`, { body: { done: true } });
    expect(delivered.status).toBe(200);
    const out = await json<{ run_id: string; seq: number }>(delivered);
    expect(out).toEqual({ ack: 'applied', run_id: run.run_id, seq: expect.any(Number) });
    expect((await stored(run.run_id)).open_requests).toEqual([]);

    // The key is used now: a second delivery without the first one's delivery_id is refused.
    const again = await request('POST', `/results/rk-${run.run_id}`, { body: { done: true } });
    expect(again.status).toBe(409);
    expect(await json(again)).toMatchObject({ code: 'result_already_delivered' });
    // A key no wait holds yet is unknown to a user: only a system caller's early result is held.
    const unknown = await request('POST', `/results/rk-${randomUUID()}`, { body: { done: true } });
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toMatchObject({ code: 'resume_key_not_found' });
  });
});

describe('HTTP API: bad requests change nothing', () => {
  const cases: {
    name: string;
    body?: unknown;
    raw?: string;
    contentType?: string;
    status: number;
    code: string;
    path?: string;
  }[] = [
    {
      name: 'a missing control_id',
      body: { command: 'stop' },
      status: 400,
      code: 'validation_failed',
      path: 'control_id',
    },
    {
      name: 'an unknown command',
      body: { control_id: 'u1', command: 'explode' },
      status: 400,
      code: 'validation_failed',
      path: 'command',
    },
    {
      name: 'a wrong type',
      body: { control_id: 'w1', command: 'approve', request_id: 5, subject_digest: 'x' },
      status: 400,
      code: 'validation_failed',
      path: 'request_id',
    },
    { name: 'a non-object body', body: ['stop'], status: 400, code: 'validation_failed', path: '' },
    { name: 'malformed JSON', raw: '{"control_id": "m1", "command": ', status: 400, code: 'invalid_json' },
    { name: 'an empty body', raw: '', status: 400, code: 'validation_failed' },
    {
      name: 'a text/plain body',
      raw: '{"control_id":"t1","command":"stop"}',
      contentType: 'text/plain',
      status: 415,
      code: 'unsupported_media_type',
    },
    {
      name: 'an oversized body',
      body: { control_id: 'big', command: 'steer', input: 'x'.repeat(1024 * 1024 + 10) },
      status: 413,
      code: 'payload_too_large',
    },
  ];

  for (const c of cases) {
    it(`answers ${c.status} ${c.code} to a control with ${c.name}`, async () => {
      const run = await waitingRun();
      const response = await request('POST', `/runs/${run.run_id}/controls`, {
        ...(c.raw !== undefined ? { raw: c.raw } : { body: c.body }),
        ...(c.contentType ? { headers: { 'content-type': c.contentType } } : {}),
      });
      expect(response.status).toBe(c.status);
      const body = await json<{ code: string; message: string; details: { issues?: { path: string }[] } }>(
        response,
      );
      expect(body).toMatchObject({ code: c.code, message: expect.any(String), details: expect.any(Object) });
      if (c.path !== undefined) expect(body.details.issues?.map((i) => i.path)).toContain(c.path);
      const after = await stored(run.run_id);
      expect({ version: after.version, last_seq: after.last_seq }).toEqual({
        version: run.version,
        last_seq: run.last_seq,
      });
    });
  }

  it('refuses a body nested deeper than 64 levels with 400 too_deep, and creates nothing', async () => {
    const input = `${'['.repeat(5_000)}"bottom"${']'.repeat(5_000)}`;
    const subject = uniqueSubject();
    const raw = `{"subject":${JSON.stringify(subject)},"reducer":null,"input":${input}}`;
    const response = await request('POST', '/runs', { raw });
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({
      code: 'validation_failed',
      details: { issues: [{ code: 'too_deep' }] },
    });
    expect(await runtime.store.findBySubject(subject)).toBeNull();
  });

  it('refuses a create with an unknown budget or field (a typo), naming it, and creates nothing', async () => {
    for (const body of [
      { subject: uniqueSubject(), reducer: null, budgets: { max_turn: 3 } },
      { subject: uniqueSubject(), reducer: null, budget: { max_turns: 3 } },
    ]) {
      const response = await request('POST', '/runs', { body });
      expect(response.status).toBe(400);
      const error = await json<{ code: string; details: { issues: { path: string }[] } }>(response);
      expect(error.code).toBe('validation_failed');
      expect(JSON.stringify(error.details)).toMatch(/max_turn|budget/);
      expect(await runtime.store.findBySubject(body.subject)).toBeNull();
    }
  });

  it('refuses a create with a missing subject or a wrong type, naming the path, and creates nothing', async () => {
    const missing = await request('POST', '/runs', { body: { input: 'go' } });
    expect(missing.status).toBe(400);
    expect(await json(missing)).toMatchObject({
      code: 'validation_failed',
      details: { target: 'json', issues: [expect.objectContaining({ path: 'subject' })] },
    });

    const subject = uniqueSubject();
    const wrong = await request('POST', '/runs', {
      body: { subject: { workspace: subject.workspace, path: 5 }, input: 'go', budgets: { max_turns: -1 } },
    });
    expect(wrong.status).toBe(400);
    const paths = (await json<{ details: { issues: { path: string }[] } }>(wrong)).details.issues.map(
      (i) => i.path,
    );
    expect(paths).toEqual(expect.arrayContaining(['subject.path', 'budgets.max_turns']));

    const oversized = await request('POST', '/runs', { body: { subject, input: 'x'.repeat(1024 * 1024) } });
    expect(oversized.status).toBe(413);
    expect(await runtime.store.findBySubject(subject)).toBeNull();
  });
});

describe('HTTP API: authentication, routing', () => {
  it('answers 401 unauthenticated without or with a wrong token, and serves /health and /openapi.json without one', async () => {
    const run = await waitingRun();
    for (const token of [null, 'wrong']) {
      const response = await request('GET', `/runs/${run.run_id}`, { token });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await json(response)).toMatchObject({ code: 'unauthenticated' });
    }
    const control = await request('POST', `/runs/${run.run_id}/controls`, {
      token: null,
      body: { control_id: 'anon', command: 'stop' },
    });
    expect(control.status).toBe(401);
    expect((await stored(run.run_id)).last_seq).toBe(run.last_seq);

    expect((await request('GET', '/health', { token: null })).status).toBe(200);
    expect((await request('GET', '/openapi.json', { token: null })).status).toBe(200);
  });

  it("answers 404 to another user reading a run, exactly as for an unknown id, unless they present the run's capability", async () => {
    const { run, control_capability } = await createRun('/r/ask');
    const denied = await request('GET', `/runs/${run.run_id}`, { token: BOB_TOKEN });
    const unknownId = `run_${randomUUID().replaceAll('-', '')}`;
    const unknown = await request('GET', `/runs/${unknownId}`, { token: BOB_TOKEN });
    expect(denied.status).toBe(404);
    expect(unknown.status).toBe(404);
    const body = (await json(denied)) as { code: string; message: string; details: Record<string, unknown> };
    const unknownBody = (await json(unknown)) as typeof body;
    expect(body.code).toBe('run_not_found');
    expect(body.message.replace(run.run_id, 'ID')).toBe(unknownBody.message.replace(unknownId, 'ID'));
    expect(Object.keys(body.details)).toEqual(Object.keys(unknownBody.details));
    const allowed = await request('GET', `/runs/${run.run_id}`, {
      token: BOB_TOKEN,
      headers: { 'X-Control-Capability': control_capability },
    });
    expect(allowed.status).toBe(200);
  });

  it('refuses an unknown key inside the subject as it does at the top level of a create', async () => {
    const response = await request('POST', '/runs', {
      body: { subject: { ...uniqueSubject(), extra: 1 }, reducer: null },
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await json(response))).toContain('extra');
  });

  it('refuses a wrong capability with 403 capability_invalid to the owner, and with 404 to anyone else', async () => {
    const { run } = await createRun('/r/ask');
    const owner = await request('GET', `/runs/${run.run_id}`, {
      headers: { 'X-Control-Capability': 'garbage' },
    });
    expect(owner.status).toBe(403);
    expect(await json(owner)).toMatchObject({ code: 'capability_invalid' });
    const ownerControl = await request('POST', `/runs/${run.run_id}/controls`, {
      body: { control_id: `c-${randomUUID()}`, command: 'steer', input: 'hi' },
      headers: { 'X-Control-Capability': 'garbage' },
    });
    expect(ownerControl.status).toBe(403);
    const other = await request('GET', `/runs/${run.run_id}`, {
      token: BOB_TOKEN,
      headers: { 'X-Control-Capability': 'garbage' },
    });
    expect(other.status).toBe(404);
    const after = await json<{ last_seq: number; version: number }>(request('GET', `/runs/${run.run_id}`));
    expect(after.last_seq).toBe(run.last_seq);
  });

  it('answers 405 with Allow for a known path and a wrong method, and 404 for an unknown route', async () => {
    const wrong = await request('DELETE', '/runs/run_x');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    expect(await json(wrong)).toMatchObject({ code: 'method_not_allowed' });
    const put = await request('PUT', '/runs', { body: {} });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('POST, GET, HEAD');
    const unknown = await request('GET', '/nothing/here');
    expect(unknown.status).toBe(404);
    expect(await json(unknown)).toMatchObject({ code: 'not_found' });
  });

  it('lists tool metadata, never handlers', async () => {
    const out = await json<{ tools: Record<string, unknown>[] }>(request('GET', '/v1/tools'));
    const lookup = out.tools.find((t) => t.name === 'lookup');
    expect(lookup).toMatchObject({
      version: '1.0.0',
      description: 'echoes its argument',
      metadata: { mutating: false },
    });
    expect(JSON.stringify(out)).not.toContain('handler');
  });
});

describe('HTTP API: long polling', () => {
  it('returns as soon as an event arrives, well before the wait ends', async () => {
    const run = await waitingRun();
    const started = Date.now();
    const poll = json<{ events: RunEvent[]; status: string }>(
      request('GET', `/runs/${run.run_id}/events?after=${run.last_seq}&wait=10`),
    );
    await new Promise((r) => setTimeout(r, 300));
    await request('POST', `/runs/${run.run_id}/controls`, {
      body: { control_id: 'lp', command: 'steer', input: 'hi' },
    });
    const page = await poll;
    const elapsed = Date.now() - started;
    expect(page.events.map((e) => e.kind)).toContain('steer_queued');
    expect(page.events[0]?.seq).toBe(run.last_seq + 1);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(3_000);
  });

  it('returns an empty page when the wait elapses, and at once for a terminal run', async () => {
    const run = await waitingRun();
    const started = Date.now();
    const empty = await json<{ events: RunEvent[]; next_after: number }>(
      request('GET', `/runs/${run.run_id}/events?after=${run.last_seq}&wait=0.5`),
    );
    expect(empty).toMatchObject({ events: [], next_after: run.last_seq, status: 'waiting', settled: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);

    // A stopped run still owes its reducer the `stopped` event: the poll waits for that answer.
    await request('POST', `/runs/${run.run_id}/controls`, { body: { control_id: 'end', command: 'stop' } });
    const ended = await stored(run.run_id);
    const polling = json<{ events: RunEvent[]; settled: boolean }>(
      request('GET', `/runs/${run.run_id}/events?after=${ended.last_seq}&wait=10`),
    );
    await runtime.engine.stepRun(run.run_id);
    const answered = await polling;
    expect(answered).toMatchObject({ status: 'stopped' });
    expect(answered.events.map((e) => e.kind)).toContain('reducer_answered');

    const done = await stored(run.run_id);
    const t0 = Date.now();
    const terminal = await json(request('GET', `/runs/${run.run_id}/events?after=${done.last_seq}&wait=10`));
    expect(terminal).toMatchObject({ events: [], status: 'stopped', settled: true });
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('refuses a wait above 20 seconds with 400', async () => {
    const response = await request('GET', '/runs/run_x/events?wait=21');
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ code: 'validation_failed', details: { target: 'query' } });
  });
});
