/**
 * The WebSocket connect's token check in AWS (lib/live/jwt-auth.ts): a token is the same caller
 * as on the HTTP API's JWT authorizer, and anything the authorizer would refuse is refused, a
 * token without `exp` too; the token's `exp` comes along.
 */
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { liveConfigFromEnv } from '../../lib/handlers/live-config.ts';
import { jwtTokenAuth } from '../../lib/live/jwt-auth.ts';

const ISSUER = 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_test';
let sign: (
  claims: Record<string, unknown>,
  options?: { issuer?: string; expired?: boolean; noExp?: boolean },
) => Promise<string>;
let auth: ReturnType<typeof jwtTokenAuth>;

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  auth = jwtTokenAuth({ issuer: ISSUER, audiences: ['client-1'], keys: createLocalJWKSet({ keys: [jwk] }) });
  sign = (claims, options = {}) => {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(options.issuer ?? ISSUER)
      .setIssuedAt();
    if (options.noExp !== true)
      jwt.setExpirationTime(options.expired === true ? Math.floor(Date.now() / 1000) - 60 : '1h');
    return jwt.sign(privateKey);
  };
});

/** A user caller with the token's exp. */
const user = (id: string) => ({ caller: { principal: { kind: 'user', id } }, exp: expect.any(Number) });

describe('the live socket token check', () => {
  it('takes a Cognito access token by client_id and an ID token by aud, as the same user', async () => {
    const access = await sign({ sub: 'u1', client_id: 'client-1', token_use: 'access' });
    const id = await sign({ sub: 'u1', aud: 'client-1', token_use: 'id' });
    expect(await auth(access)).toEqual(user('u1'));
    expect(await auth(id)).toEqual(user('u1'));
  });

  it('makes a member of the system group a system caller, as the HTTP API does', async () => {
    const token = await sign({ sub: 'svc', client_id: 'client-1', 'cognito:groups': ['system'] });
    expect(await auth(token)).toEqual({
      caller: { principal: { kind: 'system', id: 'svc' } },
      exp: expect.any(Number),
    });
  });

  it("hands on the token's exp, which bounds the socket's life", async () => {
    const token = await sign({ sub: 'u1', client_id: 'client-1' });
    const { exp } = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
      exp: number;
    };
    expect((await auth(token))?.exp).toBe(exp);
  });

  it('refuses a correctly signed token without exp', async () => {
    expect(await auth(await sign({ sub: 'u1', client_id: 'client-1' }, { noExp: true }))).toBeNull();
  });

  it('refuses no token, another audience, another issuer, an expired token and a forged one', async () => {
    expect(await auth(null)).toBeNull();
    expect(await auth(await sign({ sub: 'u1', client_id: 'other' }))).toBeNull();
    expect(
      await auth(await sign({ sub: 'u1', client_id: 'client-1' }, { issuer: 'https://evil.example' })),
    ).toBeNull();
    expect(await auth(await sign({ sub: 'u1', client_id: 'client-1' }, { expired: true }))).toBeNull();
    const good = await sign({ sub: 'u1', client_id: 'client-1' });
    const [h, , sig] = good.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'admin', client_id: 'client-1', iss: ISSUER })).toString('base64url')}.${sig}`;
    expect(await auth(forged)).toBeNull();
  });

  it('names the missing variable of the live configuration', () => {
    expect(() => liveConfigFromEnv({})).toThrow(/LIVE_CALLBACK_URL/);
    expect(() => liveConfigFromEnv({ LIVE_CALLBACK_URL: 'https://x/live' }, { auth: true })).toThrow(
      /JWT_ISSUER/,
    );
    expect(
      liveConfigFromEnv(
        { LIVE_CALLBACK_URL: 'https://x/live', JWT_ISSUER: ISSUER, JWT_AUDIENCES: 'a, b' },
        { auth: true },
      ).jwtAudiences,
    ).toEqual(['a', 'b']);
  });
});
