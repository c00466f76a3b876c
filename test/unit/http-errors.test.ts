/**
 * Error mapping, the admin function route and the Lambda adapter of the HTTP API, over a fake
 * engine (no services): what each failure of the layers below becomes on the wire.
 */
import { handle } from 'hono/aws-lambda';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../lib/core/authority.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { EngineError, StoreUnavailable } from '../../lib/engine/errors.ts';
import { CommitRejected } from '../../lib/engine/ports.ts';
import { validationFailed } from '../../lib/http/errors.ts';
import { anyOf, bearerTokenAuth, createHttpApp, jwtClaimsAuth } from '../../lib/http/index.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';

const ADMIN = 'admin-token';
const USER = 'user-token';

function fakeApp(getRun: (runId: string, caller: Caller) => Promise<unknown>) {
  const logged: Record<string, unknown>[] = [];
  const callers: Caller[] = [];
  const functions = new InMemoryFunctionRegistry([
    { function_path: '/lib/builtin', kind: 'js', bytes: new TextEncoder().encode('export default 1') },
  ]);
  const engine = {
    getRun: async (runId: string, caller: Caller) => {
      callers.push(caller);
      return getRun(runId, caller);
    },
  } as unknown as Engine;
  const app = createHttpApp({
    engine,
    functions,
    tools: { list: () => [] },
    auth: anyOf(
      bearerTokenAuth(ADMIN),
      bearerTokenAuth(USER, { kind: 'user', id: 'u' }, { admin: false }),
      jwtClaimsAuth(),
    ),
    functionBodyLimitBytes: 64 * 1024,
    log: (entry) => logged.push(entry),
  });
  return { app, logged, callers, functions };
}

const get = (app: ReturnType<typeof fakeApp>['app'], path: string, headers: Record<string, string> = {}) =>
  app.request(path, { headers: { authorization: `Bearer ${ADMIN}`, ...headers } });

describe('HTTP API error mapping', () => {
  it('answers 503 store_unavailable with Retry-After and the code when the store is unavailable', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });
    const { app } = fakeApp(async () => {
      throw new StoreUnavailable('DynamoDB is unavailable; retry', { cause: refused });
    });
    const response = await get(app, '/runs/r1');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toMatchObject({ code: 'store_unavailable' });
  });

  it('answers 503 for an exhausted transaction conflict and for a retryable engine error', async () => {
    for (const err of [
      new CommitRejected('transaction_conflict', 'conflict'),
      new EngineError('store_unavailable', 'busy', {}, { retryable: true }),
    ]) {
      const { app } = fakeApp(async () => {
        throw err;
      });
      const response = await get(app, '/runs/r1');
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toMatchObject({ code: 'store_unavailable' });
    }
  });

  it('does not guess from SDK error names: an SDK error that reached it unmapped is internal', async () => {
    // The adapters raise StoreUnavailable; one that lets an SDK error through is a bug to see.
    const { app } = fakeApp(async () => {
      throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
    });
    const response = await get(app, '/runs/r1');
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ code: 'internal' });
  });

  it('answers 500 internal for an unexpected error, logs it, and leaks neither its message nor its stack', async () => {
    const { app, logged } = fakeApp(async () => {
      throw new TypeError('secret at /var/task/lib/x.ts:12');
    });
    const response = await get(app, '/runs/r1');
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ code: 'internal', message: 'internal error', details: {} });
    expect(text).not.toContain('secret');
    expect(logged).toEqual([
      expect.objectContaining({ level: 'error', error: expect.stringContaining('secret') }),
    ]);
  });

  it('maps engine errors to their statuses: unauthorized 403, run_not_found 404', async () => {
    const cases: [EngineError, number][] = [
      [new EngineError('unauthorized', 'no'), 403],
      [new EngineError('run_not_found', 'gone', { run_id: 'r1' }), 404],
    ];
    for (const [err, status] of cases) {
      const { app } = fakeApp(async () => {
        throw err;
      });
      const response = await get(app, '/runs/r1');
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ code: err.code, message: err.message, details: err.details });
    }
  });

  it('answers 401 unauthenticated saying how to send a token and where the local stack prints one', async () => {
    const { app } = fakeApp(async () => ({}));
    for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
      const response = await app.request('/runs/r1', { headers });
      expect(response.status).toBe(401);
      const body = (await response.json()) as { code: string; message: string };
      expect(body.code).toBe('unauthenticated');
      expect(body.message).toBe(
        'missing or invalid credentials: send Authorization: Bearer <token>; ' +
          'on the local stack `npx agent-runs token --sub NAME` prints one',
      );
    }
  });

  it('adds the X-Control-Capability header to the caller', async () => {
    const { app, callers } = fakeApp(async () => {
      throw new EngineError('run_not_found', 'gone');
    });
    await get(app, '/runs/r1', { 'X-Control-Capability': 'cap-1' });
    expect(callers).toEqual([{ principal: { kind: 'user', id: 'local-user' }, capability: 'cap-1' }]);
  });
});

describe('PUT /functions/{path}', () => {
  const put = (
    app: ReturnType<typeof fakeApp>['app'],
    path: string,
    body: Uint8Array | string,
    contentType: string,
    token = ADMIN,
  ) =>
    app.request(path, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
      body: typeof body === 'string' ? body : body.slice().buffer,
    });

  it('registers a JavaScript module at the path, for an admin', async () => {
    const { app, functions } = fakeApp(async () => null);
    const response = await put(
      app,
      '/functions/agents/triage',
      'export function reduce() {}',
      'application/javascript',
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { hash: string };
    expect(body).toMatchObject({ function_path: '/agents/triage', kind: 'js', size: 27 });
    expect((await functions.get('/agents/triage'))?.hash).toBe(body.hash);
  });

  it('registers a Starlark file under text/x-starlark or application/x-starlark', async () => {
    const { app, functions } = fakeApp(async () => null);
    const source = 'def reduce(request):\n    return request\n';
    const text = await put(app, '/functions/agents/star', source, 'text/x-starlark; charset=utf-8');
    const application = await put(app, '/functions/agents/star2', source, 'application/x-starlark');
    expect([text.status, application.status]).toEqual([200, 200]);
    const body = (await text.json()) as { hash: string };
    expect(body).toMatchObject({ function_path: '/agents/star', kind: 'star', size: source.length });
    expect(await functions.get('/agents/star')).toMatchObject({ kind: 'star', hash: body.hash });
    expect(await application.json()).toMatchObject({ kind: 'star', hash: body.hash });
  });

  it('refuses a non-admin with 403 and registers nothing', async () => {
    const { app, functions } = fakeApp(async () => null);
    const response = await put(app, '/functions/agents/x', 'export {}', 'application/javascript', USER);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'unauthorized' });
    expect(await functions.get('/agents/x')).toBeNull();
  });

  it('answers 415 for another content type, 400 for a bad module, a bad path or no bytes, 413 when too large', async () => {
    const { app, functions } = fakeApp(async () => null);
    const cases: [string, Uint8Array | string, string, number, string][] = [
      ['/functions/a/b%20c', 'export {}', 'application/javascript', 400, 'validation_failed'],
      ['/functions/a/b', '{}', 'application/json', 415, 'unsupported_media_type'],
      [
        '/functions/a/b',
        new Uint8Array([0, 0x61, 0x73, 0x6d, 9, 9]),
        'application/wasm',
        400,
        'invalid_artifact',
      ],
      [
        '/functions/a/b',
        new Uint8Array([0xff, 0xfe, 0xfd]),
        'application/javascript',
        400,
        'invalid_artifact',
      ],
      ['/functions/a/b', new Uint8Array([0x64, 0xff]), 'text/x-starlark', 400, 'invalid_artifact'],
      ['/functions/a/b', '', 'application/javascript', 400, 'invalid_artifact'],
      ['/functions/a//b', 'export {}', 'application/javascript', 400, 'validation_failed'],
      ['/functions/a/b', 'x'.repeat(64 * 1024 + 1), 'application/javascript', 413, 'payload_too_large'],
    ];
    for (const [path, body, type, status, code] of cases) {
      const response = await put(app, path, body, type);
      expect(response.status, `${path} ${type}`).toBe(status);
      expect(await response.json()).toMatchObject({ code });
    }
    expect((await functions.list()).map((f) => f.function_path)).toEqual(['/lib/builtin']);
  });
});

describe('the Lambda adapter (API Gateway HTTP API, payload v2)', () => {
  it('authenticates from the JWT authorizer claims of the event and answers in the v2 result shape', async () => {
    const { app, callers } = fakeApp(async (runId) => {
      throw new EngineError('run_not_found', `run ${runId} not found`, { run_id: runId });
    });
    const handler = handle(app);
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/runs/r9',
      rawQueryString: '',
      headers: { host: 'api.example.com' },
      isBase64Encoded: false,
      requestContext: {
        accountId: '123',
        apiId: 'api',
        domainName: 'api.example.com',
        domainPrefix: 'api',
        http: {
          method: 'GET',
          path: '/runs/r9',
          protocol: 'HTTP/1.1',
          sourceIp: '1.2.3.4',
          userAgent: 'test',
        },
        requestId: 'req',
        routeKey: '$default',
        stage: '$default',
        time: '',
        timeEpoch: 0,
        authorizer: { jwt: { claims: { sub: 'cognito-user-1', 'custom:role': 'admin' }, scopes: null } },
      },
    };
    const result = (await handler(event as never, {} as never)) as { statusCode: number; body: string };
    expect(result.statusCode).toBe(404);
    expect(JSON.parse(result.body)).toMatchObject({ code: 'run_not_found', details: { run_id: 'r9' } });
    expect(callers).toEqual([{ principal: { kind: 'user', id: 'cognito-user-1' } }]);

    const anonymous = { ...event, requestContext: { ...event.requestContext, authorizer: undefined } };
    const denied = (await handler(anonymous as never, {} as never)) as { statusCode: number };
    expect(denied.statusCode).toBe(401);
  });
});

describe('validation messages', () => {
  it('say "invalid request" and name the field, the query parameter or the part that failed', () => {
    const issue = (path: (string | number)[]) => ({ code: 'too_small', path, message: 'too small' });
    expect(validationFailed('json', [issue(['budgets', 'max_turns'])]).message).toBe(
      'invalid request: field budgets.max_turns: too small',
    );
    expect(validationFailed('query', [issue(['limit'])]).message).toBe(
      'invalid request: query parameter limit: too small',
    );
    expect(validationFailed('json', [issue([])]).message).toBe('invalid request: the body: too small');
    expect(validationFailed('json', []).message).toBe('invalid request: the body');
  });

  it("name an unknown field's documented neighbour where there is one, and only there", () => {
    const unknown = (path: string[], keys: string[]) => ({
      code: 'unrecognized_keys',
      path,
      keys,
      message: '',
    });
    const text = validationFailed('json', [unknown(['result'], ['text'])]);
    expect(text.message).toBe(
      'invalid request: field result.text: unknown field "text"; ' +
        "a model turn's text goes in result.message.text",
    );
    expect(text.details.issues).toEqual([
      {
        path: 'result.text',
        code: 'unrecognized_key',
        message: 'unknown field "text"; a model turn\'s text goes in result.message.text',
      },
    ]);
    expect(validationFailed('json', [unknown(['result'], ['input_tokens'])]).message).toMatch(
      /; token counts go in result\.usage/,
    );
    expect(validationFailed('json', [unknown([], ['text'])]).message).toBe(
      'invalid request: field text: unknown field "text"',
    );
  });
});
