/**
 * End to end over HTTP: the local stack (`npm start`) started once, runs driven with the typed
 * client exactly as a user would: create → complete; an approval round trip; stop during an
 * operation; a duplicate control; bad bodies. The default agent reducer (a built-in artifact in
 * the QuickJS sandbox) drives every run; a scripted model-turn function stands in for the
 * model, and two in-process tools are registered. docs/guides/local-stack.md, "How it stands in for
 * AWS".
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, ApiError, createClient } from '../../lib/client/index.ts';
import {
  DEFAULT_MODEL_TURN_FUNCTION,
  type ModelTurnInput,
  type ModelTurnOutput,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { untilRun } from '../support/http-runs.ts';

let stack: LocalStack;
let client: AgentRunsClient;
const charges: number[] = [];
let slowAborted = 0;

/** The scripted model: the scenario is the first segment of the run's subject path. */
async function scriptedModel(input: ModelTurnInput): Promise<ModelTurnOutput> {
  const scenario = input.subject.path.split('/')[1];
  const answered = input.request.tool_results.length > 0;
  const usage = { input_tokens: 20, output_tokens: 5 };
  if (scenario === 'approve' && !answered) {
    return {
      message: {},
      tool_calls: [{ call_id: 'c1', name: 'charge', args: { amount: 42 } }],
      finish_reason: 'tool_calls',
      usage,
    };
  }
  if (scenario === 'stop' && !answered) {
    return {
      message: {},
      tool_calls: [{ call_id: 'c1', name: 'slow', args: {} }],
      finish_reason: 'tool_calls',
      usage,
    };
  }
  return { message: { text: `done: ${scenario}` }, tool_calls: [], finish_reason: 'stop', usage };
}

const TOOLS_CONTEXT = [
  {
    name: 'charge',
    schema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
    mutating: true,
    replay_safe: false,
  },
  { name: 'slow', schema: { type: 'object' }, mutating: false, interruptible: true },
];

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    heartbeatMs: 300,
    sweepIntervalMs: 1_000,
    // The machine running the suite may be busy: do not let the 200 ms reducer limit flake these tests.
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: (input) => scriptedModel(input) },
    registerTools(registry) {
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: TOOLS_CONTEXT[0]?.schema ?? {},
        metadata: { mutating: true, replay_safe: false, approval: 'always', risk: 'high' },
        handler: {
          kind: 'module',
          fn: async (args) => {
            charges.push(Number(args.amount));
            return { charged: args.amount };
          },
        },
      });
      registry.register({
        name: 'slow',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 60_000 },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => {
            await new Promise<void>((done) => {
              const timer = setTimeout(done, 30_000);
              ctx.signal.addEventListener('abort', () => {
                slowAborted += 1;
                clearTimeout(timer);
                done();
              });
            });
            return { slept: true };
          },
        },
      });
    },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

function subject(scenario: string) {
  return { workspace: 'e2e', path: `/${scenario}/${randomUUID()}` };
}

const until = (runId: string, done: (run: RunRecord) => boolean, timeoutMs?: number) =>
  untilRun(client, runId, done, timeoutMs);

describe('e2e over the local stack', () => {
  it('creates a task run that the step poller drives to completion', async () => {
    const { run, created, control_capability } = await client.createRun({
      subject: subject('complete'),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'finish the task',
      context: { mode: 'task' },
    });
    expect(created).toBe(true);
    expect(control_capability).toBeTypeOf('string');

    const done = await until(run.run_id, (r) => r.status === 'completed');

    expect(done).toMatchObject({ status: 'completed', summary: 'done: complete', lease: null });
    expect(done.usage).toMatchObject({ model_calls: 1, input_tokens: 20, output_tokens: 5 });
    const page = await client.events(run.run_id, { limit: 1000 });
    expect(page.events.map((e) => e.seq)).toEqual(page.events.map((_, i) => i + 1));
    expect(page.events.map((e) => e.kind)).toContain('run_completed');
  });

  it('waits for an approval holding no lease, refuses a stale digest, and runs the tool once approved', async () => {
    const { run } = await client.createRun({
      subject: subject('approve'),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'charge 42',
      context: { mode: 'task', tools: TOOLS_CONTEXT },
    });
    const waiting = await until(run.run_id, (r) => r.status === 'waiting');
    const request = waiting.open_requests[0];
    expect(request?.kind).toBe('approval');
    expect(waiting.lease).toBeNull();
    expect(charges).not.toContain(42);
    if (request?.kind !== 'approval') throw new Error('no approval request');

    const stale = await client.approve(run.run_id, request.request_id, 'sha256:not-what-was-shown');
    expect(stale).toMatchObject({ ack: 'rejected', reason: 'digest_mismatch' });
    expect((await client.getRun(run.run_id)).status).toBe('waiting');

    const ack = await client.approve(run.run_id, request.request_id, request.subject.digest);
    expect(ack.ack).toBe('applied');

    const done = await until(run.run_id, (r) => r.status === 'completed');
    expect(done).toMatchObject({ summary: 'done: approve' });
    expect(charges.filter((a) => a === 42)).toHaveLength(1);
  });

  it('stops a run during an operation: cancelling, the tool aborted, then stopped', async () => {
    const abortedBefore = slowAborted;
    const { run } = await client.createRun({
      subject: subject('stop'),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'take your time',
      context: { mode: 'task', tools: TOOLS_CONTEXT },
    });
    await until(run.run_id, (r) => r.status === 'running' && (r.operation?.started_at ?? null) !== null);

    const ack = await client.stop(run.run_id, { reason: 'changed my mind' });
    expect(ack.ack).toBe('applied');

    const stopped = await until(run.run_id, (r) => r.status === 'stopped');
    expect(stopped).toMatchObject({ lease: null, operation: null });
    expect(slowAborted).toBe(abortedBefore + 1);
    // The stop arrived mid-operation: stop_requested (the run went cancelling) before stopped.
    const kinds = (await client.events(run.run_id, { limit: 1000 })).events.map((e) => e.kind);
    expect(kinds.indexOf('stop_requested')).toBeGreaterThan(-1);
    expect(kinds.indexOf('stopped')).toBeGreaterThan(kinds.indexOf('stop_requested'));
  });

  it('answers a repeated control with duplicate and its original seq, and rejects a reused control_id', async () => {
    const { run } = await client.createRun({
      subject: subject('duplicate'),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'hello',
    });
    await until(run.run_id, (r) => r.status === 'waiting');
    const controlId = `pause-${randomUUID()}`;

    const first = await client.pause(run.run_id, { control_id: controlId });
    const again = await client.pause(run.run_id, { control_id: controlId });
    const reused = await client.stop(run.run_id, { control_id: controlId });

    expect(first.ack).toBe('applied');
    expect(again).toEqual({ ack: 'duplicate', original_seq: first.ack === 'applied' ? first.seq : -1 });
    expect(reused).toMatchObject({ ack: 'rejected', reason: 'control_id_reused' });
    expect((await client.getRun(run.run_id)).status).toBe('paused');
  });

  it('refuses bad bodies with their documented codes and changes nothing', async () => {
    const { run } = await client.createRun({
      subject: subject('duplicate'),
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'hello',
    });
    const before = await until(run.run_id, (r) => r.status === 'waiting');
    const post = (path: string, body: string) =>
      fetch(`${stack.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
        body,
      });

    const missing = await post('/runs', JSON.stringify({ input: 'no subject' }));
    const wrongType = await post(
      `/runs/${run.run_id}/controls`,
      JSON.stringify({ control_id: 7, command: 'stop' }),
    );
    const unknown = await post(
      `/runs/${run.run_id}/controls`,
      JSON.stringify({ control_id: 'x1', command: 'explode' }),
    );
    const oversized = await post(
      `/runs/${run.run_id}/controls`,
      JSON.stringify({ control_id: 'x2', command: 'steer', input: 'x'.repeat(2 * 1024 * 1024) }),
    );

    expect([missing.status, wrongType.status, unknown.status, oversized.status]).toEqual([
      400, 400, 400, 413,
    ]);
    const codes = await Promise.all(
      [missing, wrongType, unknown, oversized].map(async (r) => (await r.json()) as { code: string }),
    );
    expect(codes.map((b) => b.code)).toEqual([
      'validation_failed',
      'validation_failed',
      'validation_failed',
      'payload_too_large',
    ]);
    const after = await client.getRun(run.run_id);
    expect(after.version).toBe(before.version);
    expect(after.last_seq).toBe(before.last_seq);
    await expect(client.getRun('run_does_not_exist')).rejects.toMatchObject({
      code: 'run_not_found',
      status: 404,
    });
    await expect(client.getRun('run_does_not_exist')).rejects.toBeInstanceOf(ApiError);
  });
});
