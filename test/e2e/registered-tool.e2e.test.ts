/**
 * Tools and policy registered as data, used by a default-reducer run, over HTTP against the
 * local stack (what a user of `npm start` does with `agent-runs registry publish`): an admin
 * publishes an HTTP tool served by this test (`POST /admin/tools`) and a policy that requires
 * approval for it (`POST /admin/policy`); a run of the default agent reducer, whose scripted
 * model asks for the tool, waits for the approval, calls the tool once approved and completes
 * with an answer built from the tool's result. The approval, the call and the completion are in
 * the run's log.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentRunsClient, createClient } from '../../lib/client/index.ts';
import {
  type CompiledContext,
  DEFAULT_MODEL_TURN_FUNCTION,
  type ModelTurnOutput,
  type RunRecord,
} from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { untilRun } from '../support/http-runs.ts';

const TOOL = `order_status_${randomUUID().slice(0, 8)}`;

let stack: LocalStack;
let client: AgentRunsClient;
let server: Server;
/** The bodies the HTTP tool received. */
const received: { args: Record<string, unknown> }[] = [];

/** Asks for the tool once, then answers with what the tool said. */
async function model(_input: unknown, context: CompiledContext): Promise<ModelTurnOutput> {
  const usage = { input_tokens: 10, output_tokens: 2 };
  const result = context.messages.find((m) => m.role === 'tool');
  if (result === undefined) {
    return {
      message: { text: null },
      tool_calls: [{ call_id: 'c1', name: TOOL, args: { order_id: 'A-17' } }],
      finish_reason: 'tool_calls',
      usage,
    };
  }
  const status = JSON.stringify(result).includes('shipped') ? 'shipped' : 'unknown';
  return { message: { text: `Order A-17: ${status}.` }, tool_calls: [], finish_reason: 'stop', usage };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      received.push(JSON.parse(text) as { args: Record<string, unknown> });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ order_id: 'A-17', status: 'shipped' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: (input, context) => model(input, context) },
  });
  client = createClient({ baseUrl: stack.url, token: stack.token });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

describe('a tool and a policy registered over the API, used by a default-reducer run', () => {
  it('waits for the approval the policy requires, then calls the HTTP tool once and completes', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
    const tool = await client.publishEntry('tools', {
      name: TOOL,
      version: '1.0.0',
      input_schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
      metadata: { mutating: false, replay_safe: true, risk: 'medium' },
      target: { kind: 'http', url },
    });
    expect(tool.created).toBe(true);
    const policy = await client.publishEntry('policy', {
      rules: [{ effect: 'require_approval', tools: [TOOL], code: 'orders_need_review' }],
    });
    expect(policy.created).toBe(true);
    expect((await client.tools()).map((t) => t.name)).toContain(TOOL);

    const { run } = await client.createRun({
      subject: { workspace: 'e2e', path: `/registered/${randomUUID()}` },
      reducer: { function_path: AGENT_LOOP_PATH },
      input: 'Where is order A-17?',
      context: { mode: 'task', instructions: 'Look orders up.', tools: [{ name: TOOL, mutating: false }] },
    });
    expect(run.pinned).toMatchObject({ catalogue: tool.registry_version, policy: policy.registry_version });

    const waiting = await untilRun(client, run.run_id, (r) => r.status === 'waiting', 30_000);
    const request = waiting.open_requests[0];
    if (request?.kind !== 'approval') throw new Error(`expected an approval, got ${JSON.stringify(request)}`);
    expect(received).toEqual([]);
    const ack = await client.approve(run.run_id, request.request_id, request.subject.digest);
    expect(ack.ack).toBe('applied');

    const done = await untilRun(
      client,
      run.run_id,
      (r: RunRecord) => ['completed', 'failed', 'stopped'].includes(r.status),
      30_000,
    );
    expect(done).toMatchObject({ status: 'completed', summary: 'Order A-17: shipped.' });
    // The tool got the model's args and, as the seed gives every call, the run's __raisin_context.
    expect(received).toEqual([
      expect.objectContaining({
        args: { order_id: 'A-17', __raisin_context: expect.objectContaining({ run_id: run.run_id }) },
      }),
    ]);

    const events = (await client.events(run.run_id, { after: 0, limit: 1000 })).events;
    const kinds = events.map((e) => e.kind);
    const opened = events.find((e) => e.kind === 'request_opened');
    const resolved = events.find((e) => e.kind === 'request_resolved');
    const result = events.find((e) => e.kind === 'tool_result');
    expect(resolved?.data).toMatchObject({ request_id: request.request_id, decision: 'approved' });
    expect(result?.data).toMatchObject({
      tool: TOOL,
      envelope: { status: 'succeeded', payload: { order_id: 'A-17', status: 'shipped' } },
    });
    expect(opened?.seq).toBeLessThan(resolved?.seq ?? 0);
    expect(resolved?.seq).toBeLessThan(result?.seq ?? 0);
    expect(kinds).toContain('run_completed');
    expect(kinds.indexOf('tool_result')).toBeLessThan(kinds.indexOf('run_completed'));
  });
});
