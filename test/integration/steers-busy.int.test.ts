/**
 * Steers while busy through the HTTP API, with the default agent reducer and a
 * scripted OpenAI-compatible server for the model: a steer sent while a model turn is in flight
 * says what to do with it: `reject` is refused `run_busy` and never reaches the model;
 * `interrupt` cancels the turn (the stop watch reads the mark, long before the heartbeat) and the
 * steer is consumed at that boundary, so the next model request holds it. Over the runtime on
 * DynamoDB Local and fauxqs; each test has its own subject.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { createOpenAiCompatibleModel } from '../../lib/models/openai-compatible.ts';
import { reduce as agentLoop } from '../../lib/reducers/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { type FakeServer, startFakeServer } from '../fixtures/models/fake-server.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime, until } from '../support/local-runtime.ts';

const TOKEN = 'steers-busy-token';
const MODEL_PATH = '/lib/models/scripted-openai';

let runtime: Runtime;
let app: HttpApp;
let model: FakeServer;

beforeAll(async () => {
  model = await startFakeServer();
  ({ runtime } = await localRuntime('steers-busy', {
    // The heartbeat is a minute away: only the stop watch can see an interrupt within the test.
    heartbeatMs: 60_000,
    stopPollMs: 100,
    reducers: inProcessReducers({ '/agent': (raw) => agentLoop(raw) }),
    modelFunctions: {
      [MODEL_PATH]: createOpenAiCompatibleModel({ baseUrl: `${model.url}/v1`, model: 'scripted' }),
    },
    registerTools(registry) {
      registry.register({
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: { kind: 'module', fn: async (args) => ({ order: args.order_id, status: 'shipped' }) },
        metadata: { mutating: false, replay_safe: true },
      });
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'sam' }),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(async () => {
  runtime.close();
  await model.close();
});

async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return (await response.json()) as T;
}

const text = (reply: string) =>
  JSON.stringify({
    id: `chatcmpl-${randomUUID().slice(0, 8)}`,
    choices: [{ message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  });
const lookup = (orderId: string) =>
  JSON.stringify({
    id: `chatcmpl-${randomUUID().slice(0, 8)}`,
    choices: [
      {
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${randomUUID().slice(0, 8)}`,
              type: 'function',
              function: { name: 'lookup', arguments: JSON.stringify({ order_id: orderId }) },
            },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  });

/** The user messages of the model request `n` (0-based) the scripted server received since `from`. */
function userTexts(from: number, n: number): string[] {
  const body = JSON.parse(model.received[from + n]?.body ?? '{}') as {
    messages?: { role: string; content: unknown }[];
  };
  return (body.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
}

/** Creates an agent run over HTTP and starts stepping it; resolves once its model turn is in flight. */
async function agentRunInFlight(): Promise<{ run: RunRecord; stepping: Promise<unknown>; from: number }> {
  const from = model.received.length;
  const { run } = await send<{ run: RunRecord }>('POST', '/runs', {
    subject: uniqueSubject('sam'),
    reducer: { function_path: '/agent' },
    input: 'Where is order A-17?',
    context: {
      instructions: 'You help with orders.',
      tools: [{ name: 'lookup', schema: { type: 'object' }, mutating: false, replay_safe: true }],
      mode: 'task',
    },
    executor_config: { model_turn_function: MODEL_PATH },
  });
  const stepping = runtime.engine.stepRun(run.run_id);
  await until(
    async () => model.received.length,
    (n) => n > from,
    10_000,
    20,
  );
  return { run, stepping, from };
}

/** Steps the run (as the step queue would) until it ended, and reads it over HTTP. */
async function untilEnded(runId: string): Promise<RunRecord> {
  return until(
    async () => {
      await runtime.engine.stepRun(runId);
      return send<RunRecord>('GET', `/runs/${runId}`);
    },
    (r) => r.status === 'completed' || r.status === 'failed' || r.status === 'stopped',
    15_000,
  );
}

async function kinds(runId: string): Promise<string[]> {
  const page = await send<{ events: RunEvent[] }>('GET', `/runs/${runId}/events?after=0&limit=1000`);
  return page.events.map((e) => e.kind);
}

describe('steers while an operation is in flight', () => {
  it('queues a steer without when_busy behind the model turn, and the next model request holds it, with no heartbeat in between', async () => {
    model.reply(
      { status: 200, body: lookup('A-17'), delayMs: 2_500 },
      { status: 200, body: text('A-17 and B-9 have shipped.') },
    );
    const { run, stepping, from } = await agentRunInFlight();

    const ack = await send<{ ack: string }>('POST', `/runs/${run.run_id}/controls`, {
      control_id: `ctl-${randomUUID()}`,
      command: 'steer',
      input: 'Also check order B-9.',
    });
    expect(ack.ack).toBe('applied');
    await stepping;
    const ended = await untilEnded(run.run_id);

    expect(ended.status).toBe('completed');
    expect(model.received.length - from).toBe(2);
    expect(userTexts(from, 1)).toContain('Also check order B-9.');
    const log = await kinds(run.run_id);
    // Consumed at the first boundary: before the tool call started, not after it.
    expect(log).toContain('steer_consumed');
    expect(log.indexOf('steer_consumed')).toBeLessThan(log.lastIndexOf('operation_started') - 1);
    expect(log).not.toContain('operation_cancelled');
    expect(log).not.toContain('steers_discarded');
  });

  it('refuses a steer with when_busy reject as run_busy, and the model never sees it', async () => {
    model.reply({ status: 200, body: text('A-17 has shipped.'), delayMs: 2_500 });
    const { run, stepping, from } = await agentRunInFlight();

    const ack = await send<{ ack: string; reason?: string }>('POST', `/runs/${run.run_id}/controls`, {
      control_id: `ctl-${randomUUID()}`,
      command: 'steer',
      input: 'Never mind.',
      when_busy: 'reject',
    });
    await stepping;
    const ended = await untilEnded(run.run_id);

    expect(ack).toMatchObject({ ack: 'rejected', reason: 'run_busy' });
    expect(ended).toMatchObject({ status: 'completed', queued_steers: [] });
    expect(model.received.length - from).toBe(1);
    const log = await kinds(run.run_id);
    expect(log).toContain('control_rejected');
    expect(log).not.toContain('steer_queued');
  });

  it('cancels the model turn for a steer with when_busy interrupt, and the next model request holds the steer', async () => {
    // The first reply would take a minute: only the interrupt ends that turn within the test.
    model.reply(
      { status: 200, body: text('A-17 has shipped.'), delayMs: 60_000 },
      { status: 200, body: text('B-9 has shipped too.') },
    );
    const { run, stepping, from } = await agentRunInFlight();

    const ack = await send<{ ack: string }>('POST', `/runs/${run.run_id}/controls`, {
      control_id: `ctl-${randomUUID()}`,
      command: 'steer',
      input: 'Check order B-9 instead.',
      when_busy: 'interrupt',
    });
    expect(ack.ack).toBe('applied');
    await stepping;
    const ended = await untilEnded(run.run_id);

    expect(ended.status).toBe('completed');
    expect(model.received.length - from).toBe(2);
    expect(userTexts(from, 0)).not.toContain('Check order B-9 instead.');
    expect(userTexts(from, 1)).toContain('Check order B-9 instead.');
    const log = await kinds(run.run_id);
    // The turn was cancelled, then the steer was consumed before the next turn began.
    expect(log).toContain('steer_queued');
    expect(log.indexOf('operation_cancelled')).toBeGreaterThan(log.indexOf('steer_queued'));
    expect(log.indexOf('steer_consumed')).toBeGreaterThan(log.indexOf('operation_cancelled'));
    expect(log.lastIndexOf('operation_started')).toBeGreaterThan(log.indexOf('steer_consumed'));
    expect(log).not.toContain('steers_discarded');
  });
});
