/**
 * Client-given durations that become timestamps are bounded: a client-driven run's request
 * `expires_in_ms` past 30 days is refused 400 validation_failed naming the field and changes
 * nothing; a reducer's `ask_user` / `request_approval` effect past it is refused by the reducer
 * contract. docs/contracts/run-lifecycle.md, "Requests". The HTTP app on the memory engine.
 */
import { handle } from 'hono/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  AskUserEffect,
  MAX_REQUEST_EXPIRES_IN_MS,
  RequestApprovalEffect,
} from '../../lib/contracts/index.ts';
import {
  anyOf,
  bearerTokenAuth,
  createHttpApp,
  type HttpApp,
  jwtClaimsAuth,
  keepEmptyLastEventId,
} from '../../lib/http/index.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';
import { inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const ALICE = { kind: 'user' as const, id: 'alice' };
const BOB = { kind: 'user' as const, id: 'bob' };

let app: HttpApp;

beforeAll(async () => {
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({}),
    tools: inProcessTools({}),
    models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
  });
  app = createHttpApp({
    engine: t.engine,
    functions: new InMemoryFunctionRegistry([]),
    tools: { list: () => [] },
    auth: anyOf(
      bearerTokenAuth('alice', ALICE, { admin: false }),
      bearerTokenAuth('bob', BOB, { admin: false }),
    ),
    log: () => {},
  });
});

async function call(who: string, method: string, path: string, body?: unknown) {
  const response = await app.request(path, {
    method,
    headers: { authorization: `Bearer ${who}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the answers' shapes are what the assertions check
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** A client-driven run of `who` with its lease taken; returns the run id and the fence. */
async function leasedRun(who: 'alice' | 'bob') {
  const created = await call(who, 'POST', '/runs', { subject: uniqueSubject(who), input: 'go' });
  expect(created.status).toBe(201);
  const runId = created.body.run.run_id as string;
  const lease = await call(who, 'POST', `/runs/${runId}/lease`, { owner: 'w' });
  expect(lease.status).toBe(200);
  return { runId, fence: { owner: 'w', epoch: lease.body.lease.epoch } };
}

describe('a request expiry a client gives', () => {
  it('past 30 days is refused validation_failed at request.expires_in_ms and changes nothing', async () => {
    const { runId, fence } = await leasedRun('bob');
    const before = await call('bob', 'GET', `/runs/${runId}`);
    for (const request of [
      { kind: 'input', question: 'q', expires_in_ms: Number.MAX_SAFE_INTEGER },
      { kind: 'input', question: 'q', expires_in_ms: MAX_REQUEST_EXPIRES_IN_MS + 1 },
      { kind: 'approval', subject: approvalSubject(), expires_in_ms: 9007199254740991 },
    ]) {
      const refused = await call('bob', 'POST', `/runs/${runId}/requests`, { fence, request });
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('validation_failed');
      expect(JSON.stringify(refused.body)).toContain('expires_in_ms');
    }
    const after = await call('bob', 'GET', `/runs/${runId}`);
    expect(after.body.last_seq).toBe(before.body.last_seq);
    expect(after.body.version).toBe(before.body.version);
    // The lease is still released cleanly.
    expect((await call('bob', 'POST', `/runs/${runId}/lease/release`, { fence })).status).toBe(200);
  });

  it('of exactly 30 days is accepted and the lease is released', async () => {
    const { runId, fence } = await leasedRun('alice');
    const opened = await call('alice', 'POST', `/runs/${runId}/requests`, {
      fence,
      request: { kind: 'input', question: 'q', expires_in_ms: MAX_REQUEST_EXPIRES_IN_MS },
    });
    expect(opened.status).toBe(200);
    expect(Number.isSafeInteger(opened.body.run.open_requests[0].expires_at)).toBe(true);
    const released = await call('alice', 'POST', `/runs/${runId}/lease/release`, { fence });
    expect(released.status).toBe(200);
    expect(released.body.run.status).toBe('waiting');
  });
});

describe('a request expiry a reducer gives', () => {
  it('past 30 days is a bad effect (the reducer contract refuses it), at most 30 days is not', () => {
    const base = { effect_id: 'e1', kind: 'ask_user', question: 'q' };
    expect(AskUserEffect.safeParse({ ...base, expires_in_ms: MAX_REQUEST_EXPIRES_IN_MS }).success).toBe(true);
    const bad = AskUserEffect.safeParse({ ...base, expires_in_ms: 9007199254740991 });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(['expires_in_ms']);
    const approval = { effect_id: 'e2', kind: 'request_approval', subject: approvalSubject() };
    expect(RequestApprovalEffect.safeParse({ ...approval, expires_in_ms: 9007199254740991 }).success).toBe(
      false,
    );
  });
});

function approvalSubject() {
  return { kind: 'tool_call', digest: 'a'.repeat(64), digest_alg: 'sha256', summary: 'do it' };
}

describe('a lookup by subject', () => {
  it('refuses a subject a create would refuse (control_character), as a create does', async () => {
    for (const path of ['/a%E2%80%AEb', '/a%01b']) {
      const listed = await call('alice', 'GET', `/runs?subject_workspace=user:bob&subject_path=${path}`);
      const created = await call('alice', 'POST', '/runs', {
        subject: { workspace: 'user:alice', path: decodeURIComponent(path) },
        input: 'x',
      });
      expect(created.status).toBe(400);
      expect(listed.status).toBe(400);
      expect(listed.body.code).toBe('validation_failed');
      expect(JSON.stringify(listed.body)).toContain('subject_path');
      expect(JSON.stringify(listed.body)).toContain('control_character');
    }
    const workspace = await call('alice', 'GET', '/runs?subject_workspace=user:b%E2%80%AEob&subject_path=/a');
    expect(workspace.status).toBe(400);
    expect(JSON.stringify(workspace.body)).toContain('subject_workspace');
  });
});

describe('an empty Last-Event-ID', () => {
  it('is refused 400 through the Lambda adapter (which drops empty headers) and streams nothing', async () => {
    const { runId } = await leasedRun('alice');
    const lambda = handle(app);
    const event = (headers: Record<string, string>) => ({
      version: '2.0',
      routeKey: '$default',
      rawPath: `/runs/${runId}/events/stream`,
      rawQueryString: 'wait=0',
      headers: { host: 'localhost', authorization: 'Bearer alice', ...headers },
      requestContext: {
        http: {
          method: 'GET',
          path: `/runs/${runId}/events/stream`,
          protocol: 'HTTP/1.1',
          sourceIp: '127.0.0.1',
          userAgent: '',
        },
        domainName: 'localhost',
        requestId: 'r',
        routeKey: '$default',
        stage: '$default',
        time: '',
        timeEpoch: 0,
        accountId: '1',
        apiId: 'a',
        domainPrefix: 'localhost',
      },
      isBase64Encoded: false,
    });
    const send = async (headers: Record<string, string>) =>
      (await lambda(keepEmptyLastEventId(event(headers)) as never, {} as never)) as {
        statusCode: number;
        body: string;
      };
    const empty = await send({ 'last-event-id': '' });
    expect(empty.statusCode).toBe(400);
    expect(JSON.parse(empty.body).code).toBe('validation_failed');
    expect(empty.body).toContain('Last-Event-ID');
    const Capital = await send({ 'Last-Event-ID': '' });
    expect(Capital.statusCode).toBe(400);
    // A good one (and none) still streams.
    expect((await send({ 'last-event-id': '1' })).statusCode).toBe(200);
    expect((await send({})).statusCode).toBe(200);
  });
});

describe('a token exp over HTTP', () => {
  it('is refused 401 with a clear message when it is no safe integer or lies over 366 days ahead', async () => {
    const jwtApp = createHttpApp({
      engine: {} as never,
      functions: new InMemoryFunctionRegistry([]),
      tools: { list: () => [] },
      auth: jwtClaimsAuth(),
      log: () => {},
    });
    const nowS = Math.floor(Date.now() / 1000);
    const ask = async (exp: unknown) => {
      const event = { requestContext: { authorizer: { jwt: { claims: { sub: 'bob', exp } } } } };
      const response = await jwtApp.request('/runs?status=running', {}, { event });
      return { status: response.status, body: (await response.json()) as { code: string; message: string } };
    };
    for (const exp of [
      1e300,
      '1e+300',
      String(nowS + 400 * 86_400),
      1.5,
      String(Number.MAX_SAFE_INTEGER + 2),
    ]) {
      const refused = await ask(exp);
      expect(refused.status).toBe(401);
      expect(refused.body.code).toBe('unauthenticated');
      expect(refused.body.message).toMatch(/token exp/);
    }
  });
});
