import { describe, expect, it } from 'vitest';
import {
  ADMIN_SCOPE,
  anyOf,
  authFromEnv,
  bearerTokenAuth,
  CALLER_GROUPS,
  iamCallerAuth,
  jwtClaimsAuth,
  LOCAL_PRINCIPAL,
  SYSTEM_SCOPE,
} from '../../lib/http/index.ts';

const req = (authorization?: string) =>
  new Request('http://api.test/runs', { headers: authorization ? { authorization } : {} });

/** What hono's aws-lambda adapter passes as `c.env` for an API Gateway v2 event with JWT claims. */
const lambdaEnv = (claims: Record<string, unknown> | undefined) => ({
  event: {
    version: '2.0',
    rawPath: '/runs',
    requestContext:
      claims === undefined ? { http: { method: 'GET' } } : { authorizer: { jwt: { claims, scopes: null } } },
  },
});

describe('bearerTokenAuth', () => {
  const auth = bearerTokenAuth('s3cret');

  it('maps the exact token to local-user with admin rights', async () => {
    expect(await auth(req('Bearer s3cret'), undefined)).toEqual({ principal: LOCAL_PRINCIPAL, admin: true });
    expect(await auth(req('bearer s3cret'), undefined)).toEqual({ principal: LOCAL_PRINCIPAL, admin: true });
  });

  it('recognizes nothing else: no header, another token, another scheme, a prefix of the token', async () => {
    for (const header of [undefined, 'Bearer s3cre', 'Bearer s3cret2', 'Basic s3cret', 's3cret', 'Bearer ']) {
      expect(await auth(req(header), undefined)).toBeNull();
    }
  });

  it('maps to the given principal, without admin rights when told', async () => {
    const bob = bearerTokenAuth('b', { kind: 'user', id: 'bob' }, { admin: false });
    expect(await bob(req('Bearer b'), undefined)).toEqual({
      principal: { kind: 'user', id: 'bob' },
      admin: false,
    });
  });

  it('refuses an empty token at construction', () => {
    expect(() => bearerTokenAuth('')).toThrow(/non-empty/);
  });
});

describe('jwtClaimsAuth', () => {
  const auth = jwtClaimsAuth();

  it('reads the user from sub, without admin rights by default', async () => {
    expect(await auth(req(), lambdaEnv({ sub: 'u-1', scope: 'openid' }))).toEqual({
      principal: { kind: 'user', id: 'u-1' },
      admin: false,
    });
  });

  it('grants admin from custom:role admin or the admin scope (string or API Gateway array form)', async () => {
    for (const claims of [
      { sub: 'u', 'custom:role': 'admin' },
      { sub: 'u', scope: `openid ${ADMIN_SCOPE}` },
      { sub: 'u', scp: `[openid ${ADMIN_SCOPE}]` },
    ]) {
      expect(await auth(req(), lambdaEnv(claims))).toEqual({
        principal: { kind: 'user', id: 'u' },
        admin: true,
      });
    }
  });

  it('makes a system caller only from a verified system role or scope', async () => {
    expect(await auth(req(), lambdaEnv({ sub: 'trigger', scope: SYSTEM_SCOPE }))).toEqual({
      principal: { kind: 'system', id: 'trigger' },
      admin: true,
    });
    expect(await auth(req(), lambdaEnv({ sub: 'svc', 'custom:role': 'system' }))).toMatchObject({
      principal: { kind: 'system' },
    });
  });

  it("grants nothing for a bare system or admin scope: only the namespaced scopes are the runtime's", async () => {
    // An identity provider may hand out scopes named `system` or `admin` for its own purposes.
    for (const scope of ['openid system', 'openid admin', ['system', 'admin']]) {
      expect(await auth(req(), lambdaEnv({ sub: 'bob', scope }))).toEqual({
        principal: { kind: 'user', id: 'bob' },
        admin: false,
      });
    }
    expect(await auth(req(), lambdaEnv({ sub: 'bob', scp: ['system'] }))).toMatchObject({
      principal: { kind: 'user' },
      admin: false,
    });
  });

  it('reads admin and system rights from the Cognito groups claim, as API Gateway passes it', async () => {
    expect(await auth(req(), lambdaEnv({ sub: 'u', 'cognito:groups': `[${CALLER_GROUPS.admin}]` }))).toEqual({
      principal: { kind: 'user', id: 'u', groups: [CALLER_GROUPS.admin] },
      admin: true,
    });
    expect(
      await auth(req(), lambdaEnv({ sub: 'svc', 'cognito:groups': ['readers', CALLER_GROUPS.system] })),
    ).toEqual({ principal: { kind: 'system', id: 'svc' }, admin: true });
    expect(await auth(req(), lambdaEnv({ sub: 'u', 'cognito:groups': '[readers]' }))).toEqual({
      principal: { kind: 'user', id: 'u', groups: ['readers'] },
      admin: false,
    });
  });

  it('puts the user groups of cognito:groups and groups on the principal, for policy and agents to match', async () => {
    expect(
      await auth(
        req(),
        lambdaEnv({ sub: 'u', 'cognito:groups': '[support staff]', groups: ['staff', 'oncall'] }),
      ),
    ).toEqual({ principal: { kind: 'user', id: 'u', groups: ['support', 'staff', 'oncall'] }, admin: false });
    expect(await auth(req(), lambdaEnv({ sub: 'u' }))).toEqual({
      principal: { kind: 'user', id: 'u' },
      admin: false,
    });
  });

  it('returns null without claims, without sub, or outside Lambda; never falls back to system', async () => {
    expect(await auth(req('Bearer x'), undefined)).toBeNull();
    expect(await auth(req(), {})).toBeNull();
    expect(await auth(req(), lambdaEnv(undefined))).toBeNull();
    expect(await auth(req(), lambdaEnv({ scope: SYSTEM_SCOPE }))).toBeNull();
    expect(await auth(req(), lambdaEnv({ sub: '' }))).toBeNull();
  });
});

describe('iamCallerAuth', () => {
  const iamEnv = (iam: Record<string, unknown> | undefined) => ({
    event: { version: '2.0', requestContext: iam === undefined ? {} : { authorizer: { iam } } },
  });
  const arn = 'arn:aws:sts::123456789012:assumed-role/billing-service/session';

  it('makes the SigV4 signer a system caller named by its ARN', async () => {
    expect(await iamCallerAuth()(req(), iamEnv({ userArn: arn, accountId: '123456789012' }))).toEqual({
      principal: { kind: 'system', id: arn },
      admin: true,
    });
  });

  it('recognizes no request without an IAM authorizer context', async () => {
    expect(await iamCallerAuth()(req(), iamEnv(undefined))).toBeNull();
    expect(await iamCallerAuth()(req(), lambdaEnv({ sub: 'u' }))).toBeNull();
    expect(await iamCallerAuth()(req(), iamEnv({ userArn: '' }))).toBeNull();
  });
});

describe('anyOf and authFromEnv', () => {
  it('takes the first authenticator that recognizes the request', async () => {
    const auth = anyOf(
      bearerTokenAuth('a', { kind: 'user', id: 'alice' }),
      bearerTokenAuth('b', { kind: 'user', id: 'bob' }),
    );
    expect((await auth(req('Bearer b'), undefined))?.principal.id).toBe('bob');
    expect(await auth(req('Bearer c'), undefined)).toBeNull();
  });

  it('uses the local bearer token when AGENT_RUNS_LOCAL_TOKEN is set, JWT claims otherwise', async () => {
    const local = authFromEnv({ AGENT_RUNS_LOCAL_TOKEN: 'tok' });
    expect(await local(req('Bearer tok'), undefined)).toEqual({ principal: LOCAL_PRINCIPAL, admin: true });
    expect(await local(req(), lambdaEnv({ sub: 'u' }))).toBeNull();

    const aws = authFromEnv({});
    expect(await aws(req('Bearer tok'), undefined)).toBeNull();
    expect(await aws(req(), lambdaEnv({ sub: 'u' }))).toMatchObject({ principal: { kind: 'user', id: 'u' } });
    const signed = {
      event: { requestContext: { authorizer: { iam: { userArn: 'arn:aws:iam::1:role/x' } } } },
    };
    expect(await aws(req(), signed)).toMatchObject({
      principal: { kind: 'system', id: 'arn:aws:iam::1:role/x' },
    });
  });
});
