import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiHandler, type Gateway, GatewayError, startGateway } from '../../lib/local/gateway.ts';

const open: Gateway[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((g) => g.stop()));
});

async function serve(handler: ApiHandler | null, maxBodyBytes?: number): Promise<Gateway> {
  const gateway = await startGateway({ handler, port: 0, ...(maxBodyBytes ? { maxBodyBytes } : {}) });
  open.push(gateway);
  return gateway;
}

/** A handler that answers with the event it received. */
function echo(seen: APIGatewayProxyEventV2[]): ApiHandler {
  return async (event, context) => {
    seen.push(event);
    return {
      statusCode: 201,
      headers: { 'x-remaining': String(context.getRemainingTimeInMillis() > 0) },
      body: JSON.stringify({ ok: true }),
    };
  };
}

describe('local API gateway', () => {
  it('turns a request into a payload 2.0 event and writes the structured result back', async () => {
    const seen: APIGatewayProxyEventV2[] = [];
    const gateway = await serve(echo(seen));

    const response = await fetch(`${gateway.url}/runs/r1/events?after=3&wait=2&x=a&x=b`, {
      method: 'POST',
      headers: { Authorization: 'Bearer t0k', 'Content-Type': 'application/json', Cookie: 'a=1; b=2' },
      body: '{"hello":"world"}',
    });

    expect(response.status).toBe(201);
    expect(response.headers.get('x-remaining')).toBe('true');
    expect(await response.json()).toEqual({ ok: true });
    const event = seen[0];
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: '$default',
      rawPath: '/runs/r1/events',
      rawQueryString: 'after=3&wait=2&x=a&x=b',
      queryStringParameters: { after: '3', wait: '2', x: 'a,b' },
      cookies: ['a=1', 'b=2'],
      body: '{"hello":"world"}',
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST', path: '/runs/r1/events' }, stage: '$default' },
    });
    expect(event?.headers.authorization).toBe('Bearer t0k');
    expect(event?.headers['content-type']).toBe('application/json');
    expect(event?.headers['x-forwarded-proto']).toBe('http');
  });

  it('passes a JSON body that is not valid UTF-8 base64-encoded, its bytes as sent, never with U+FFFD', async () => {
    const seen: APIGatewayProxyEventV2[] = [];
    const gateway = await serve(echo(seen));
    const bytes = Buffer.concat([Buffer.from('{"path":"/u8'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    await fetch(`${gateway.url}/runs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
      body: bytes,
    });
    expect(seen[0]).toMatchObject({ isBase64Encoded: true, body: bytes.toString('base64') });
  });

  it('passes a binary body base64-encoded and decodes a base64 result', async () => {
    const seen: APIGatewayProxyEventV2[] = [];
    const gateway = await serve(async (event) => {
      seen.push(event);
      return {
        statusCode: 200,
        isBase64Encoded: true,
        body: event.body ?? '',
        headers: { 'content-type': 'application/wasm' },
      };
    });
    const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 255]);

    const response = await fetch(`${gateway.url}/functions/lib/x.wasm`, {
      method: 'PUT',
      headers: { 'content-type': 'application/wasm' },
      body: bytes,
    });

    expect(seen[0]?.isBase64Encoded).toBe(true);
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
  });

  it('answers a plain string result as a 200 JSON body, like API Gateway', async () => {
    const gateway = await serve(async () => '{"plain":true}');
    const response = await fetch(`${gateway.url}/x`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ plain: true });
  });

  it('answers 500 internal when the handler throws', async () => {
    const gateway = await serve(async () => {
      throw new Error('bug');
    });
    const response = await fetch(`${gateway.url}/runs`);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      code: 'internal',
      message: 'Internal Server Error',
      details: {},
    });
  });

  it('refuses a body over the limit with 413 without invoking the handler', async () => {
    const seen: APIGatewayProxyEventV2[] = [];
    const gateway = await serve(echo(seen), 1024);
    const response = await fetch(`${gateway.url}/runs`, { method: 'POST', body: 'x'.repeat(2048) });
    expect(response.status).toBe(413);
    // Worded as the HTTP app words its own limit: "the body is N bytes, over the L-byte limit".
    expect(await response.json()).toEqual({
      code: 'payload_too_large',
      message: 'the body is 2048 bytes, over the 1024-byte limit',
      details: { limit_bytes: 1024, bytes: 2048 },
    });
    expect(seen).toHaveLength(0);
  });

  it('answers 503 store_unavailable with Retry-After until a handler is set', async () => {
    const gateway = await serve(null);
    const starting = await fetch(`${gateway.url}/health`);
    expect(starting.status).toBe(503);
    expect(starting.headers.get('retry-after')).toBe('1');
    expect(await starting.json()).toMatchObject({ code: 'store_unavailable' });
    gateway.setHandler(async () => ({ statusCode: 204 }));
    expect((await fetch(`${gateway.url}/health`)).status).toBe(204);
  });

  it('fails with port_in_use when the port is taken', async () => {
    const first = await serve(null);
    const error = await startGateway({ handler: null, port: first.port }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: 'port_in_use', port: first.port });
    expect(String((error as Error).message)).toContain(`port ${first.port} is already in use`);
  });
});
