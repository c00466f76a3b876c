import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOL_RESULT_ENVELOPE } from '../../lib/contracts/index.ts';
import type { ToolCallRequest } from '../../lib/engine/ports.ts';
import {
  createAuditLog,
  createPolicyGate,
  createToolHost,
  createToolRegistry,
} from '../../lib/tools/index.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

const received: Received[] = [];
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      const status = /^\/status\/(\d+)$/.exec(path)?.[1];
      if (status !== undefined) {
        res.writeHead(Number(status), { 'content-type': 'text/plain' });
        res.end('internal detail: SECRET-http-7');
      } else if (path === '/ok') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ booked: true }));
      } else if (path === '/envelope') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ envelope: TOOL_RESULT_ENVELOPE, status: 'succeeded', payload: { id: 9 } }));
      } else if (path === '/empty') {
        res.writeHead(204);
        res.end();
      } else if (path === '/html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html></html>');
      } else if (path === '/big') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ blob: 'x'.repeat(50_000) }));
      } else if (path === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      } else if (path === '/slow') {
        // Never answers; the client's abort closes the socket.
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function host(path: string, options: { mutating?: boolean; maxOutputBytes?: number; url?: string } = {}) {
  const registry = createToolRegistry();
  registry.register({
    name: 'remote',
    version: '1.0.0',
    input_schema: { type: 'object', properties: { seat: { type: 'string' } } },
    handler: { kind: 'http', url: options.url ?? `${base}${path}`, headers: { 'x-api-key': 'key-123' } },
    metadata: {
      mutating: options.mutating ?? false,
      replay_safe: true,
      timeout_ms: 5_000,
      max_output_bytes: options.maxOutputBytes ?? 10_000,
    },
  });
  return createToolHost({
    registry,
    gate: createPolicyGate(),
    audit: createAuditLog(() => {}),
    finalizeGraceMs: 100,
  });
}

function request(overrides: Partial<ToolCallRequest> = {}): ToolCallRequest {
  return {
    run_id: `run-${randomUUID()}`,
    op_id: `op-${randomUUID()}`,
    tool: 'remote',
    args: { seat: '3A' },
    principal: { kind: 'user', id: 'u-1' },
    attempt: 1,
    mutating: false,
    replay_safe: true,
    ...overrides,
  };
}

const never = new AbortController().signal;

describe('HTTP handler against a local server', () => {
  it('POSTs {args, context} with the Idempotency-Key of a mutating call and wraps the JSON answer', async () => {
    const call = request();

    const envelope = await host('/ok', { mutating: true }).execute(call, never);

    expect(envelope).toMatchObject({ status: 'succeeded', legacy: true, payload: { booked: true } });
    const seen = received.find(
      (r) => (r.body as { context: { operation_id: string } }).context.operation_id === call.op_id,
    );
    expect(seen?.headers['idempotency-key']).toBe(call.op_id);
    expect(seen?.headers['x-api-key']).toBe('key-123');
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.body).toEqual({
      args: { seat: '3A', __raisin_context: { run_id: call.run_id, operation_id: call.op_id } },
      context: {
        run_id: call.run_id,
        operation_id: call.op_id,
        idempotency_key: call.op_id,
        principal: { kind: 'user', id: 'u-1' },
        attempt: 1,
        timeout_ms: 5_000,
      },
    });
  });

  it('sends no Idempotency-Key for a read-only call', async () => {
    const call = request();
    await host('/ok').execute(call, never);
    const seen = received.find(
      (r) => (r.body as { context: { operation_id: string } }).context.operation_id === call.op_id,
    );
    expect(seen).toBeDefined();
    expect(seen?.headers['idempotency-key']).toBeUndefined();
  });

  it('passes an envelope answer through', async () => {
    const call = request();
    const envelope = await host('/envelope').execute(call, never);
    expect(envelope).toMatchObject({ status: 'succeeded', operation_id: call.op_id, payload: { id: 9 } });
    expect(envelope.legacy).toBeUndefined();
  });

  it('reads an empty 204 answer as a null payload', async () => {
    expect((await host('/empty').execute(request(), never)).payload).toBeNull();
  });

  it.each([
    [500, 'transient', true],
    [503, 'transient', true],
    [400, 'invalid_input', false],
    [401, 'permission_denied', false],
    [403, 'permission_denied', false],
    [404, 'not_found', false],
    [409, 'conflict', false],
    [429, 'rate_limited', true],
    [501, 'unsupported', false],
    [504, 'timeout', true],
  ])('maps HTTP %i to %s (retryable %s) without the body', async (status, errorClass, retryable) => {
    const envelope = await host(`/status/${status}`).execute(request(), never);
    expect(envelope).toMatchObject({
      status: 'failed',
      error_class: errorClass,
      retry_policy: { retryable },
    });
    expect(envelope.diagnostics[0]?.code).toBe(`http_${status}`);
    expect(JSON.stringify(envelope)).not.toContain('SECRET-http-7');
  });

  it('does not follow redirects', async () => {
    const envelope = await host('/redirect').execute(request(), never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(envelope.diagnostics[0]?.code).toBe('http_302');
  });

  it('refuses a 2xx answer that is not JSON', async () => {
    const envelope = await host('/html').execute(request(), never);
    expect(envelope.diagnostics[0]?.code).toBe('response_not_json');
  });

  it('stops reading an answer past the output bound', async () => {
    const envelope = await host('/big', { maxOutputBytes: 1_000 }).execute(request(), never);
    expect(envelope).toMatchObject({ status: 'failed', error_class: 'tool_error' });
    expect(envelope.diagnostics[0]?.code).toBe('output_too_large');
    expect(envelope.payload).toBeUndefined();
  });

  it('times out a request the endpoint never answers', async () => {
    const envelope = await host('/slow').execute(request({ timeout_ms: 100 }), never);
    expect(envelope).toMatchObject({ error_class: 'timeout', retry_policy: { retryable: true } });
  });

  it('answers a cancelled request with a cancelled envelope', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const envelope = await host('/slow').execute(request(), controller.signal);
    expect(envelope.diagnostics[0]?.code).toBe('cancelled');
  });

  it('maps an unreachable endpoint to transient', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const envelope = await host('', { url: `http://127.0.0.1:${port}/tool` }).execute(request(), never);

    expect(envelope).toMatchObject({ error_class: 'transient', retry_policy: { retryable: true } });
    expect(envelope.diagnostics[0]?.code).toBe('unreachable');
  });
});
