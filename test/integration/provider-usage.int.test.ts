/**
 * Provider calls and retries through the HTTP API, with the OpenAI-compatible adapter against a
 * scripted local server: usage counts every provider call and the retries
 * apart from turns, max_model_calls bounds the calls (retries included), an outage pauses the run
 * (on_provider_outage pause, the default) with the turn kept for resume, and under `fail` the
 * reducer's operation_failed says how many attempts were made.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { createOpenAiCompatibleModel } from '../../lib/models/openai-compatible.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { type FakeServer, startFakeServer } from '../fixtures/models/fake-server.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime, until } from '../support/local-runtime.ts';
import { respond, unchanged } from '../support/reducers.ts';

const TOKEN = 'provider-token';
let runtime: Runtime;
let app: HttpApp;
let server: FakeServer;

/** Asks the model once; completes with its text; fails the run on operation_failed. */
function askModel(raw: Record<string, unknown>) {
  const req = raw as { state: { seen: number } | null; state_rev: number; event: RunEvent };
  if (req.event.seq <= (req.state?.seen ?? 0)) return unchanged(req);
  const state = { seen: req.event.seq };
  switch (req.event.kind) {
    case 'run_started':
    case 'resumed':
      return respond(
        req,
        state,
        req.event.kind === 'run_started' ? [{ kind: 'request_model_turn', tools_offered: [] }] : [],
      );
    case 'model_turn_completed':
      return respond(req, state, [{ kind: 'complete', outcome: 'succeeded', summary: 'answered' }]);
    case 'operation_failed':
      return respond(req, state, [
        { kind: 'fail', code: 'model_failed', message: String(req.event.data.error_class) },
      ]);
    default:
      return respond(req, state, []);
  }
}

beforeAll(async () => {
  server = await startFakeServer();
  ({ runtime } = await localRuntime('provider-usage', {
    heartbeatMs: 100,
    reducers: inProcessReducers({ '/r/ask-model': askModel }),
    modelFunctions: {
      '/m/scripted': createOpenAiCompatibleModel({ baseUrl: server.url, model: 'scripted-1' }),
    },
    defaultModelFunction: '/m/scripted',
    modelRetry: { attempts: 3, baseMs: 10, maxDelayMs: 50 },
  }));
  app = createHttpApp({
    ...runtime,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'pia' }),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(async () => {
  runtime.close();
  await server.close();
});

function send(method: string, path: string, body?: unknown) {
  return app.request(path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}
async function create(extra: Record<string, unknown> = {}): Promise<RunRecord> {
  const response = await send('POST', '/runs', {
    subject: uniqueSubject('pia'),
    reducer: { function_path: '/r/ask-model' },
    input: 'hello',
    ...extra,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { run: RunRecord }).run;
}
/** Steps the run (playing the step queue) until it rests, and reads it over HTTP. */
async function settle(runId: string): Promise<RunRecord> {
  return until(
    async () => {
      await runtime.engine.stepRun(runId);
      return (await (await send('GET', `/runs/${runId}`)).json()) as RunRecord;
    },
    (r) => r.status !== 'running' && r.status !== 'queued',
    15_000,
  );
}
async function events(runId: string): Promise<RunEvent[]> {
  return ((await (await send('GET', `/runs/${runId}/events`)).json()) as { events: RunEvent[] }).events;
}
const serverError = { status: 500, body: 'fixture:openai-server-error.json' };
const text = { status: 200, body: 'fixture:openai-chat-text.json' };
/** A 200 whose tool call's arguments are not JSON (a truncated object). */
const brokenToolCall = {
  status: 200,
  body: JSON.stringify({
    id: 'chatcmpl-broken',
    choices: [
      {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"order_id": "A-1' } },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  }),
};

describe('provider calls and retries', () => {
  it('counts every provider call, and the retries, apart from turns', async () => {
    server.reply(serverError, serverError, text);
    const before = server.received.length;
    const run = await create();
    const done = await settle(run.run_id);
    expect(server.received.length - before).toBe(3);
    expect(done).toMatchObject({
      status: 'completed',
      usage: { turns: 1, model_calls: 3, model_retries: 2 },
    });
  });

  it('counts answers whose tool-call JSON does not parse as calls and retries, not turns', async () => {
    server.reply(brokenToolCall, brokenToolCall, text);
    const before = server.received.length;
    const run = await create();
    const done = await settle(run.run_id);
    expect(server.received.length - before).toBe(3);
    expect(done).toMatchObject({
      status: 'completed',
      usage: { turns: 1, model_calls: 3, model_retries: 2 },
    });
  });

  it('pauses the run on a provider outage by default, keeping the turn, and resumes it', async () => {
    server.reply(serverError, serverError, serverError);
    const run = await create();
    const paused = await settle(run.run_id);
    expect(paused).toMatchObject({
      status: 'paused',
      pause_reason: 'provider_outage:transient',
      usage: { model_calls: 3, model_retries: 2 },
    });
    const log = await events(run.run_id);
    expect(log.find((e) => e.kind === 'provider_outage')?.data).toMatchObject({
      error_class: 'transient',
      attempts: 3,
    });
    expect(log.some((e) => e.kind === 'operation_failed')).toBe(false);

    server.reply(text);
    const ack = await send('POST', `/runs/${run.run_id}/controls`, {
      control_id: 'go-on',
      command: 'resume',
    });
    expect(await ack.json()).toMatchObject({ ack: 'applied' });
    const done = await settle(run.run_id);
    expect(done).toMatchObject({
      status: 'completed',
      usage: { turns: 1, model_calls: 4, model_retries: 2 },
    });
  });

  it('under on_provider_outage fail, hands the reducer an operation_failed that says how many attempts were made', async () => {
    server.reply(serverError, serverError, serverError);
    const run = await create({ on_provider_outage: 'fail' });
    const failed = await settle(run.run_id);
    expect(failed).toMatchObject({ status: 'failed', usage: { model_calls: 3, model_retries: 2 } });
    const failure = (await events(run.run_id)).find((e) => e.kind === 'operation_failed');
    expect(failure?.data).toMatchObject({ error_class: 'transient', attempts: 3 });
  });

  it('stops retrying when max_model_calls is used up, retries included', async () => {
    server.reply(serverError, serverError);
    const before = server.received.length;
    const run = await create({ budgets: { max_model_calls: 2 }, on_provider_outage: 'fail' });
    const failed = await settle(run.run_id);
    expect(server.received.length - before).toBe(2);
    expect(failed.usage).toMatchObject({ model_calls: 2, model_retries: 1 });
  });

  it('refuses an unknown on_provider_outage at create', async () => {
    const response = await send('POST', '/runs', {
      subject: uniqueSubject('pia'),
      reducer: null,
      on_provider_outage: 'retry_forever',
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toMatch(/on_provider_outage/);
  });
});
