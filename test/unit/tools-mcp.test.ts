import { Client } from '@modelcontextprotocol/sdk/client';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TOOL_RESULT_ENVELOPE, type ToolResultEnvelope } from '../../lib/contracts/index.ts';
import type { ToolCallRequest } from '../../lib/engine/ports.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
} from '../../lib/tools/index.ts';

const server = new McpServer({ name: 'airline', version: '1.0.0' });
const client = new Client({ name: 'raisin-tools-test', version: '1.0.0' });
const received: { args: unknown; meta: unknown }[] = [];
let slowCallAborted = false;

server.registerTool('lookup', { inputSchema: { id: z.number() } }, async (args, extra) => {
  received.push({ args, meta: extra._meta });
  return { content: [{ type: 'text', text: JSON.stringify({ id: args.id, status: 'confirmed' }) }] };
});
server.registerTool('greet', { inputSchema: { name: z.string() } }, async ({ name }) => ({
  content: [{ type: 'text', text: `hello ${name}` }],
}));
server.registerTool('structured', { inputSchema: {} }, async () => ({
  content: [],
  structuredContent: { envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', payload: { ok: 1 } },
}));
server.registerTool('broken', { inputSchema: {} }, async () => ({
  isError: true,
  content: [{ type: 'text', text: 'stack trace with SECRET-9d1' }],
}));
server.registerTool('busy', { inputSchema: {} }, async () => ({
  isError: true,
  content: [{ type: 'text', text: 'later' }],
  structuredContent: { error_class: 'rate_limited' },
}));
server.registerTool('slow', { inputSchema: {} }, async (_args, extra) => {
  await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve()));
  slowCallAborted = true;
  return { content: [] };
});

beforeAll(async () => {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);
});
afterAll(async () => {
  await client.close();
  await server.close();
});

function host() {
  const registry = createToolRegistry();
  for (const [name, tool_name, mutating] of [
    ['lookup', 'lookup', true],
    ['greet', 'greet', false],
    ['structured', 'structured', false],
    ['broken', 'broken', false],
    ['busy', 'busy', false],
    ['slow', 'slow', false],
    ['ghost', 'not_on_server', false],
  ] as const) {
    registry.register({
      name,
      version: '1.0.0',
      input_schema: { type: 'object' },
      handler: { kind: 'mcp', client, tool_name },
      metadata: { mutating, replay_safe: true, timeout_ms: 2_000 },
    });
  }
  return createToolHost({
    registry,
    gate: createPolicyGate(),
    audit: createAuditLog(() => {}),
    finalizeGraceMs: 50,
  });
}

function call(
  tool: string,
  args: Record<string, unknown> = {},
  signal = new AbortController().signal,
  timeout_ms?: number,
) {
  const request: ToolCallRequest = {
    run_id: 'run-m',
    op_id: `op-${tool}`,
    tool,
    args,
    principal: { kind: 'user', id: 'u-1' },
    attempt: 1,
    mutating: false,
    replay_safe: true,
    ...(timeout_ms === undefined ? {} : { timeout_ms }),
  };
  return host().execute(request, signal);
}

describe('MCP handler', () => {
  it('calls the server tool with plain args and the run context in _meta, parsing a JSON text answer', async () => {
    const envelope = await call('lookup', { id: 42, __raisin_context: { trace: 't' } });

    expect(envelope).toMatchObject({
      status: 'succeeded',
      legacy: true,
      payload: { id: 42, status: 'confirmed' },
    });
    expect(received.at(-1)).toEqual({
      args: { id: 42 },
      meta: {
        'raisin/context': {
          run_id: 'run-m',
          operation_id: 'op-lookup',
          idempotency_key: 'op-lookup',
          principal: { kind: 'user', id: 'u-1' },
          attempt: 1,
          timeout_ms: 2_000,
        },
      },
    });
  });

  it('returns a plain text answer as content', async () => {
    const envelope = await call('greet', { name: 'Ada' });
    expect(envelope.payload).toEqual({ content: [{ type: 'text', text: 'hello Ada' }] });
  });

  it('passes an envelope in structuredContent through', async () => {
    const envelope: ToolResultEnvelope = await call('structured');
    expect(envelope).toMatchObject({
      status: 'succeeded',
      operation_id: 'op-structured',
      payload: { ok: 1 },
    });
    expect(envelope.legacy).toBeUndefined();
  });

  it('maps isError to tool_error without forwarding the server text', async () => {
    const envelope = await call('broken');
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(JSON.stringify(envelope)).not.toContain('SECRET-9d1');
  });

  it('maps isError with a structured error_class to that class', async () => {
    const envelope = await call('busy');
    expect(envelope).toMatchObject({ error_class: 'rate_limited', retry_policy: { retryable: true } });
  });

  it('maps a call to a tool the server does not have to not_found', async () => {
    const envelope = await call('ghost');
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'not_found' });
    expect(envelope.diagnostics[0]?.code).toBe('mcp_tool_not_found');
  });

  it('maps arguments the server refuses to invalid_input without forwarding its text', async () => {
    const envelope = await call('greet', { name: 7 });
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'invalid_input' });
    expect(JSON.stringify(envelope)).not.toContain('Input validation error');
  });

  it('cancels the server-side call when the caller aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const envelope = await call('slow', {}, controller.signal);
    expect(envelope.diagnostics[0]?.code).toBe('cancelled');
    await expect.poll(() => slowCallAborted).toBe(true);
  });

  it('times out a server call that outlives the deadline', async () => {
    const envelope = await call('slow', {}, undefined, 30);
    expect(envelope).toMatchObject({ error_class: 'timeout', retry_policy: { retryable: true } });
  });
});
