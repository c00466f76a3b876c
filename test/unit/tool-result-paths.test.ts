import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { Client } from '@modelcontextprotocol/sdk/client';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TOOL_RESULT_ENVELOPE, type ToolResultEnvelope } from '../../lib/contracts/index.ts';
import { normalizeToolResult } from '../../lib/core/tool-result-validation.ts';
import type { ToolCallRequest, ToolHost } from '../../lib/engine/ports.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
  type ToolHandler,
} from '../../lib/tools/index.ts';

// One table of tool answers, each sent through every path a result can take to the reducer:
// an in-process handler, the Lambda, HTTP and MCP adapters (all through the dispatcher), and a
// delivery over POST /results/{resume_key} (the engine's deliverResult normalizes the body
// with normalizeToolResult and the waiting operation's id). Every path must give the same
// envelope. docs/contracts/tool-result.md, "The tool-result envelope".

const revision = { value: 'r42', alg: 'raisin.node/1' };
const locator = { workspace: 'content', path: '/articles/b' };
const claimed = (fields: Record<string, unknown>) => ({ envelope: TOOL_RESULT_ENVELOPE, ...fields });

/** `expect`: "ok" (accepted as sent), "legacy" (wrapped), or the refusal code. */
const CASES: { name: string; raw: unknown; expect: string }[] = [
  {
    name: 'a legacy object with writes of its own',
    raw: { rows: [1], writes: [{ locator }] },
    expect: 'legacy',
  },
  { name: 'a legacy string', raw: 'done', expect: 'legacy' },
  { name: 'a legacy array', raw: [1, 2, 3], expect: 'legacy' },
  { name: 'null', raw: null, expect: 'legacy' },
  { name: 'an object whose envelope field is null', raw: { envelope: null, data: 1 }, expect: 'legacy' },
  {
    name: 'a complete envelope',
    raw: claimed({
      operation_id: 'op_from_tool',
      status: 'succeeded',
      writes: [{ locator, action: 'updated', revision }],
      artifact_refs: [{ kind: 'node', locator, revision, role: 'primary' }],
      evidence: [{ kind: 'read_back', subject: { locator, revision }, ok: true, level: null }],
      payload: { moved: true },
    }),
    expect: 'ok',
  },
  {
    name: 'an envelope whose absent optionals are null',
    raw: claimed({
      operation_id: null,
      status: 'failed',
      resume_key: null,
      writes: null,
      diagnostics: [{ code: 'stale', severity: 'error', class: null, message: 'm', path: null }],
      retry_policy: null,
      error_class: null,
    }),
    expect: 'ok',
  },
  {
    name: 'a waiting envelope with its key',
    raw: claimed({ status: 'waiting', resume_key: 'cb:1' }),
    expect: 'ok',
  },
  {
    name: 'an envelope that marks itself legacy, with writes and no primary',
    raw: claimed({ status: 'succeeded', legacy: true, writes: [{ locator, action: 'created' }] }),
    expect: 'ok',
  },
  {
    name: 'another envelope version',
    raw: claimed({ envelope: 'raisin.tool-result/2', status: 'succeeded' }),
    expect: 'envelope_mismatch',
  },
  { name: 'an unknown status', raw: claimed({ status: 'great' }), expect: 'envelope_mismatch' },
  {
    name: 'waiting with an empty resume_key',
    raw: claimed({ status: 'waiting', resume_key: '' }),
    expect: 'waiting_without_resume_key',
  },
  {
    name: 'succeeded writes without a primary',
    raw: claimed({ status: 'succeeded', writes: [{ locator, action: 'created' }], artifact_refs: [] }),
    expect: 'writes_without_primary',
  },
  {
    name: 'evidence whose revision has no alg',
    raw: claimed({
      status: 'succeeded',
      evidence: [{ kind: 'read_back', subject: { revision: { value: 'r1' } } }],
    }),
    expect: 'evidence_revision_without_alg',
  },
];

const OP_ID = 'op-paths';
const rawOf = (args: unknown): unknown => CASES[(args as { case: number }).case]?.raw;

// HTTP: a real local server answering each POST with the case its args name.
let server: Server;
// MCP: a real MCP server over the SDK's in-memory transport.
const mcpServer = new McpServer({ name: 'paths', version: '1.0.0' });
const mcpClient = new Client({ name: 'paths-test', version: '1.0.0' });
mcpServer.registerTool('answer', { inputSchema: { case: z.number() } }, async (args) => ({
  content: [{ type: 'text', text: JSON.stringify(rawOf(args)) }],
}));
// Lambda: a real LambdaClient whose HTTP layer answers the Invoke with the case's payload.
const lambdaClient = new LambdaClient({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-secret' },
  maxAttempts: 1,
  requestHandler: {
    handle: async (request: { body?: unknown }) => {
      const body = typeof request.body === 'string' ? request.body : Buffer.from(request.body as Uint8Array);
      const payload = JSON.stringify(rawOf((JSON.parse(String(body)) as { args: unknown }).args));
      return { response: { statusCode: 200, headers: {}, body: Readable.from([Buffer.from(payload)]) } };
    },
  } as unknown as LambdaClient['config']['requestHandler'],
});

let host: ToolHost;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { args } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { args: unknown };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(rawOf(args)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`;
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await mcpServer.connect(serverTransport);
  await mcpClient.connect(clientTransport);

  const registry = createToolRegistry();
  const handlers: Record<string, ToolHandler> = {
    in_process: { kind: 'module', fn: async (args) => rawOf(args) },
    lambda: { kind: 'lambda', function_name: 'answer', client: lambdaClient },
    http: { kind: 'http', url },
    mcp: { kind: 'mcp', client: mcpClient, tool_name: 'answer' },
  };
  for (const [name, handler] of Object.entries(handlers)) {
    registry.register({
      name,
      version: '1.0.0',
      input_schema: { type: 'object' },
      handler,
      metadata: { mutating: false, replay_safe: true, timeout_ms: 5_000 },
    });
  }
  host = createToolHost({ registry, gate: createPolicyGate(), audit: createAuditLog(() => {}) });
});

afterAll(async () => {
  await mcpClient.close();
  await mcpServer.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function dispatched(tool: string, index: number): Promise<ToolResultEnvelope> {
  const request: ToolCallRequest = {
    run_id: 'run-paths',
    op_id: OP_ID,
    tool,
    args: { case: index },
    principal: { kind: 'user', id: 'u-1' },
    attempt: 1,
    mutating: false,
    replay_safe: true,
  };
  return host.execute(request, new AbortController().signal);
}

describe('one normalizer on every path: the same tool answer gives the same envelope', () => {
  it.each(CASES.map((c, index) => [c.name, index] as const))('%s', async (_name, index) => {
    const { raw, expect: expected } = CASES[index] ?? { raw: undefined, expect: '' };
    const delivered = normalizeToolResult(JSON.parse(JSON.stringify(raw)) as unknown, OP_ID);
    const paths = {
      in_process: await dispatched('in_process', index),
      lambda: await dispatched('lambda', index),
      http: await dispatched('http', index),
      mcp: await dispatched('mcp', index),
    };
    for (const [path, envelope] of Object.entries(paths)) {
      expect(envelope, path).toStrictEqual(delivered.envelope);
    }
    const { envelope, refusal } = delivered;
    expect(envelope.operation_id).toBe(OP_ID);
    if (expected === 'ok') {
      expect(refusal).toBeUndefined();
      expect(envelope.status).toBe((raw as { status: string }).status);
      return;
    }
    // Wrapped or refused: nothing of the tool's own writes or evidence is in the envelope's lists.
    expect(envelope).toMatchObject({ writes: [], evidence: [], artifact_refs: [], reads: [], payload: raw });
    if (expected === 'legacy') {
      expect(refusal).toBeUndefined();
      expect(envelope).toMatchObject({ status: 'succeeded', legacy: true });
    } else {
      expect(refusal?.code).toBe(expected);
      expect(envelope).toMatchObject({
        status: 'failed',
        error_class: 'tool_error',
        retry_policy: { retryable: false },
      });
      expect(envelope.diagnostics).toEqual([
        expect.objectContaining({ code: expected, path: refusal?.path }),
      ]);
    }
  });
});
