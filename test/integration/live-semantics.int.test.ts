/**
 * Live-use semantics through the HTTP API, as a new user meets them with a slow model and
 * concurrent clients: a steer sent during a model turn reaches the next
 * model request; a result delivered before its wait is recorded is held and applied exactly
 * once; result requests expire; a repeated delivery_id is a duplicate; a resume that cannot
 * resume is rejected. Over the runtime on DynamoDB Local and fauxqs, with the default agent
 * reducer and a scripted OpenAI-compatible server for the model. Each test has its own subject
 * and resume keys.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  isTerminalStatus,
  type RunEvent,
  type RunRecord,
  TOOL_RESULT_ENVELOPE,
} from '../../lib/contracts/index.ts';
import { SWEEP_SHARDS } from '../../lib/engine/ports.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { createOpenAiCompatibleModel } from '../../lib/models/openai-compatible.ts';
import { reduce as agentLoop } from '../../lib/reducers/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { shardOf } from '../../lib/store/table.ts';
import { type FakeServer, startFakeServer } from '../fixtures/models/fake-server.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime, until } from '../support/local-runtime.ts';
import { toolLoop } from '../support/reducers.ts';

const _local = inject('localServices');
const TOKEN = 'live-semantics-token';
/** The webhook's own identity: a service (system caller), the only kind whose early results are held. */
const WEBHOOK_TOKEN = 'live-semantics-webhook-token';
const MODEL_PATH = '/lib/models/scripted-openai';

let runtime: Runtime;
let app: HttpApp;
let model: FakeServer;
/** The status of each delivery a webhook tool made before answering waiting, by run id. */
const webhookStatus = new Map<string, number>();
/** The reducers by path; a test may swap one to change its artifact. */
const reducers: Record<string, (raw: Record<string, unknown>) => unknown> = {
  '/agent': (raw) => agentLoop(raw),
  '/r/park': toolLoop(1, 'park'),
  '/r/webhook': toolLoop(1, 'webhook'),
  '/r/expiring': toolLoop(1, 'park_briefly'),
  '/r/two': toolLoop(2),
  '/r/flip': toolLoop(1),
};

function waiting(resumeKey: string) {
  return { envelope: TOOL_RESULT_ENVELOPE, status: 'waiting', resume_key: resumeKey };
}

beforeAll(async () => {
  model = await startFakeServer();
  ({ runtime } = await localRuntime('live-semantics', {
    heartbeatMs: 100,
    // Read at every call, so that a test can swap the function behind a path.
    reducers: inProcessReducers(reducers),
    modelFunctions: {
      [MODEL_PATH]: createOpenAiCompatibleModel({ baseUrl: `${model.url}/v1`, model: 'scripted' }),
    },
    registerTools(registry) {
      const meta = { mutating: false, replay_safe: true };
      registry.register({
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async (args) => ({ order: args.order_id ?? args.i, status: 'shipped' }),
        },
        metadata: meta,
      });
      registry.register({
        name: 'park',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async (_args, ctx) => waiting(`park-${ctx.run_id}`) },
        metadata: meta,
      });
      registry.register({
        name: 'park_briefly',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async (_args, ctx) => waiting(`brief-${ctx.run_id}`) },
        metadata: { ...meta, result_expires_in_ms: 50 },
      });
      // A tool whose webhook answers before the tool has even returned `waiting`.
      registry.register({
        name: 'webhook',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => {
            const key = `hook-${ctx.run_id}`;
            const response = await request(
              'POST',
              `/results/${key}?delivery_id=early-1`,
              { envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', payload: 'paid' },
              WEBHOOK_TOKEN,
            );
            webhookStatus.set(ctx.run_id, response.status);
            return waiting(key);
          },
        },
        metadata: meta,
      });
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: anyOf(
      bearerTokenAuth(TOKEN, { kind: 'user', id: 'dana' }),
      bearerTokenAuth(WEBHOOK_TOKEN, { kind: 'system', id: 'payments-webhook' }, { admin: false }),
    ),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(async () => {
  runtime.close();
  await model.close();
});

function request(method: string, path: string, body?: unknown, token = TOKEN): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return Promise.resolve(
    app.request(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }),
  );
}

async function json<T = Record<string, unknown>>(response: Response | Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

async function createRun(reducer: string, extra: Record<string, unknown> = {}): Promise<RunRecord> {
  const response = await request('POST', '/runs', {
    subject: uniqueSubject('dana'),
    reducer: { function_path: reducer },
    input: 'go',
    ...extra,
  });
  expect(response.status).toBe(201);
  return (await json<{ run: RunRecord }>(response)).run;
}

async function events(runId: string): Promise<RunEvent[]> {
  return (await json<{ events: RunEvent[] }>(request('GET', `/runs/${runId}/events?after=0&limit=1000`)))
    .events;
}

async function run(runId: string): Promise<RunRecord> {
  return json<RunRecord>(request('GET', `/runs/${runId}`));
}

/** Steps the run (as the step queue would) until it rests in `status` or ends. */
async function stepUntil(runId: string, done: (r: RunRecord) => boolean): Promise<RunRecord> {
  for (let i = 0; i < 20; i += 1) {
    const current = await run(runId);
    if (done(current) || isTerminalStatus(current.status)) return current;
    await runtime.engine.stepRun(runId);
  }
  return run(runId);
}

function control(runId: string, body: Record<string, unknown>) {
  return json<{ ack: string; reason?: string; seq?: number }>(
    request('POST', `/runs/${runId}/controls`, { control_id: `ctl-${randomUUID()}`, ...body }),
  );
}

/** An OpenAI chat-completions reply: a tool call or a text. */
function chatReply(turn: { call?: { name: string; args: object }; text?: string }): string {
  const message = turn.call
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: `call_${randomUUID().slice(0, 8)}`,
            type: 'function',
            function: { name: turn.call.name, arguments: JSON.stringify(turn.call.args) },
          },
        ],
      }
    : { role: 'assistant', content: turn.text ?? '' };
  return JSON.stringify({
    id: `chatcmpl-${randomUUID().slice(0, 8)}`,
    choices: [{ message, finish_reason: turn.call ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  });
}

function agentRun(): Promise<RunRecord> {
  return createRun('/agent', {
    context: {
      instructions: 'You help with orders.',
      tools: [{ name: 'lookup', schema: { type: 'object' }, mutating: false, replay_safe: true }],
      mode: 'task',
    },
    executor_config: { model_turn_function: MODEL_PATH },
  });
}

/** The user messages of the model request `n` (0-based) the scripted server received since `from`. */
function userTexts(from: number, n: number): string[] {
  const body = JSON.parse(model.received[from + n]?.body ?? '{}') as {
    messages?: { role: string; content: unknown }[];
  };
  return (body.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
}

describe('steers reach the model', () => {
  it('puts a steer sent during a model turn into the next model request, though operations keep chaining', async () => {
    const from = model.received.length;
    model.reply(
      {
        status: 200,
        body: chatReply({ call: { name: 'lookup', args: { order_id: 'A-17' } } }),
        delayMs: 2_500,
      },
      { status: 200, body: chatReply({ text: 'A-17 and B-9 have shipped.' }) },
    );
    const created = await agentRun();
    const stepping = runtime.engine.stepRun(created.run_id);
    await until(
      async () => model.received.length,
      (n) => n > from,
      10_000,
      20,
    );
    const ack = await control(created.run_id, { command: 'steer', input: 'Also check order B-9.' });
    expect(ack.ack).toBe('applied');
    await stepping;
    const ended = await stepUntil(created.run_id, () => false);

    expect(ended.status).toBe('completed');
    expect(model.received.length - from).toBe(2);
    expect(userTexts(from, 0)).not.toContain('Also check order B-9.');
    expect(userTexts(from, 1)).toContain('Also check order B-9.');
    const kinds = (await events(created.run_id)).map((e) => e.kind);
    expect(kinds).toContain('steer_consumed');
    expect(kinds).not.toContain('steers_discarded');
    // Consumed before the tool call started, between the two operations.
    expect(kinds.indexOf('steer_consumed')).toBeLessThan(kinds.lastIndexOf('operation_started'));
  });

  it('names the control_id of a steer the run ended without seeing in steers_discarded', async () => {
    const from = model.received.length;
    model.reply({ status: 200, body: chatReply({ text: 'Done.' }), delayMs: 2_500 });
    const created = await agentRun();
    const stepping = runtime.engine.stepRun(created.run_id);
    await until(
      async () => model.received.length,
      (n) => n > from,
      10_000,
      20,
    );
    const controlId = `ctl-${randomUUID()}`;
    const ack = await json<{ ack: string }>(
      request('POST', `/runs/${created.run_id}/controls`, {
        control_id: controlId,
        command: 'steer',
        input: 'One more thing.',
      }),
    );
    expect(ack.ack).toBe('applied');
    await stepping;
    const ended = await stepUntil(created.run_id, () => false);

    expect(ended.status).toBe('completed');
    const discarded = (await events(created.run_id)).find((e) => e.kind === 'steers_discarded');
    expect(discarded?.data).toEqual({ count: 1, control_ids: [controlId] });
  });
});

describe('early results are never lost, nothing waits forever', () => {
  it('holds a result delivered before its wait is recorded and applies it exactly once when the wait commits', async () => {
    const created = await createRun('/r/webhook');
    const ended = await stepUntil(created.run_id, () => false);

    expect(webhookStatus.get(created.run_id)).toBe(202);
    expect(ended.status).toBe('completed');
    const log = await events(created.run_id);
    const results = log.filter((e) => e.kind === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]?.data.envelope).toMatchObject({ status: 'succeeded', payload: 'paid' });
    expect(log.find((e) => e.kind === 'result_delivered')?.data).toMatchObject({
      resume_key: `hook-${created.run_id}`,
      delivery_id: 'early-1',
      early: true,
    });
    // The webhook's retry is a duplicate of the applied delivery.
    const repeat = await request('POST', `/results/hook-${created.run_id}?delivery_id=early-1`, {
      envelope: TOOL_RESULT_ENVELOPE,
      status: 'succeeded',
      payload: 'paid',
    });
    expect(repeat.status).toBe(200);
    expect(await repeat.json()).toEqual({ ack: 'duplicate', original_seq: results[0]?.seq });
  });

  it('holds an early result only from a system caller: a user learns of no key and nothing is held', async () => {
    const key = `hook-${randomUUID()}`;
    const body = { envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', payload: 'forged' };

    // A user may not have a result held: the key names no run yet, so no authority can be checked.
    const byUser = await request('POST', `/results/${key}?delivery_id=u-1`, body);
    expect(byUser.status).toBe(404);
    expect(await byUser.json()).toMatchObject({ code: 'resume_key_not_found' });

    // Nothing was held: the service's own early result for the key is taken.
    const byService = await request('POST', `/results/${key}?delivery_id=s-1`, body, WEBHOOK_TOKEN);
    expect(byService.status).toBe(202);
    expect(await byService.json()).toMatchObject({ ack: 'held', resume_key: key });
  });

  it('closes a result request at its tool’s expiry, so the reducer sees request_closed', async () => {
    const created = await createRun('/r/expiring');
    const parked = await stepUntil(created.run_id, (r) => r.status === 'waiting');
    const [open] = parked.open_requests;
    expect(open?.kind).toBe('result');
    expect(open?.expires_at).toBe((open?.opened_at ?? 0) + 50);

    await until(
      async () => {
        await runtime.engine.sweep([shardOf(created.run_id, SWEEP_SHARDS)]);
        return (await events(created.run_id)).find((e) => e.kind === 'request_closed');
      },
      (closed) => closed !== undefined,
      10_000,
    );
    const log = await events(created.run_id);
    const closed = log.find((e) => e.kind === 'request_closed');
    expect(closed?.data).toMatchObject({ request_id: open?.request_id, reason: 'expired' });
    await stepUntil(created.run_id, (r) => r.reduced_seq >= (closed?.seq ?? 0));
    expect((await run(created.run_id)).reduced_seq).toBeGreaterThanOrEqual(closed?.seq ?? 0);
  });

  it('gives every result request a default expiry when its tool names none', async () => {
    const created = await createRun('/r/park');
    const parked = await stepUntil(created.run_id, (r) => r.status === 'waiting');
    const [open] = parked.open_requests;
    expect(open?.expires_at).toBe((open?.opened_at ?? 0) + 24 * 3_600_000);
  });
});

describe('deliveries are idempotent by delivery_id', () => {
  it('answers a repeated delivery_id as a duplicate of the first, and refuses another delivery for a used key', async () => {
    const created = await createRun('/r/park');
    await stepUntil(created.run_id, (r) => r.status === 'waiting');
    const key = `park-${created.run_id}`;
    const body = { envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', payload: 42 };

    const first = await json<{ ack: string; seq: number }>(
      request('POST', `/results/${key}?delivery_id=d-1`, body),
    );
    const again = await request('POST', `/results/${key}?delivery_id=d-1`, body);
    const other = await request('POST', `/results/${key}?delivery_id=d-2`, body);

    expect(first).toMatchObject({ ack: 'applied', run_id: created.run_id });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ ack: 'duplicate', original_seq: first.seq });
    expect(other.status).toBe(409);
    expect((await other.json()) as { code: string }).toMatchObject({ code: 'result_already_delivered' });
    expect((await events(created.run_id)).filter((e) => e.kind === 'tool_result')).toHaveLength(1);
  });

  it('refuses an invalid envelope with 400 naming the field and the code, and takes the corrected retry under the same delivery_id', async () => {
    const created = await createRun('/r/park');
    await stepUntil(created.run_id, (r) => r.status === 'waiting');
    const key = `park-${created.run_id}`;
    const writes = [{ locator: { workspace: 'content', path: '/a' }, action: 'created' }];

    const refused = await request('POST', `/results/${key}?delivery_id=d-1`, {
      envelope: TOOL_RESULT_ENVELOPE,
      status: 'succeeded',
      writes,
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      code: 'validation_failed',
      details: { issues: [{ path: 'artifact_refs', code: 'writes_without_primary' }] },
    });
    expect((await run(created.run_id)).open_requests).toHaveLength(1);

    const corrected = await request('POST', `/results/${key}?delivery_id=d-1`, {
      envelope: TOOL_RESULT_ENVELOPE,
      status: 'succeeded',
    });
    expect(corrected.status).toBe(200);
    expect(await corrected.json()).toMatchObject({ ack: 'applied' });
  });
});

describe('resumes that cannot resume are rejected', () => {
  it('rejects a resume without enough budget_increase while the budget is still exceeded', async () => {
    const created = await createRun('/r/two', { budgets: { max_operations: 1 } });
    const paused = await stepUntil(created.run_id, (r) => r.status === 'paused');
    expect(paused).toMatchObject({ pause_reason: 'budget_exceeded:max_operations' });

    const plain = await control(created.run_id, { command: 'resume' });
    expect(plain).toMatchObject({ ack: 'rejected', reason: 'budget_still_exceeded' });
    expect((await run(created.run_id)).status).toBe('paused');

    const raised = await control(created.run_id, {
      command: 'resume',
      budget_increase: { max_operations: 1 },
    });
    expect(raised.ack).toBe('applied');
    expect((await stepUntil(created.run_id, () => false)).status).toBe('completed');
  });

  it('rejects a resume after reducer_changed without accept_reducer_change', async () => {
    const created = await createRun('/r/flip');
    const original = reducers['/r/flip'];
    // Another artifact behind the same path: a different function body.
    reducers['/r/flip'] = (raw) => (original as (r: Record<string, unknown>) => unknown)({ ...raw });
    try {
      const paused = await stepUntil(created.run_id, (r) => r.status === 'paused');
      expect(paused).toMatchObject({ pause_reason: 'reducer_changed' });
      expect(await control(created.run_id, { command: 'resume' })).toMatchObject({
        ack: 'rejected',
        reason: 'reducer_change_not_accepted',
      });
      expect((await control(created.run_id, { command: 'resume', accept_reducer_change: true })).ack).toBe(
        'applied',
      );
    } finally {
      reducers['/r/flip'] = original as (raw: Record<string, unknown>) => unknown;
    }
  });
});
