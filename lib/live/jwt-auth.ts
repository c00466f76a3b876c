/**
 * Authenticates a WebSocket connect in AWS: API Gateway's WebSocket APIs have no JWT authorizer
 * (the HTTP API's), so the live function verifies the bearer token itself, the way that
 * authorizer does: the signature against the issuer's JWKS (`{issuer}/.well-known/jwks.json`,
 * Cognito's), `iss`, `exp` (required: a token without one is refused) and `nbf`, and the audience in `aud` or, for a Cognito access token,
 * `client_id`. The verified claims then map to a caller by the HTTP API's own rule
 * (lib/http/auth.ts jwtClaimsAuth), so a token is the same caller on both; its `exp` bounds the
 * socket's life (lib/live/expiry.ts). docs/contracts/run-lifecycle.md, "over HTTP, WebSocket";
 * docs/guides/who-may-do-what.md.
 */
import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { jwtClaimsAuth } from '../http/auth.ts';
import type { TokenIdentity } from './socket.ts';

export interface JwtTokenAuthOptions {
  /** The issuer URL (`iss`), e.g. `https://cognito-idp.{region}.amazonaws.com/{userPoolId}`. */
  issuer: string;
  /** Accepted audiences: `aud`, or `client_id` of an access token. At least one. */
  audiences: readonly string[];
  /** The verification keys (default: the issuer's JWKS, fetched and cached by jose). */
  keys?: JWTVerifyGetKey;
}

/** Whether the verified claims name one of `audiences` (in `aud`, else `client_id`). */
function audienceMatches(claims: JWTPayload, audiences: readonly string[]): boolean {
  const aud = claims.aud === undefined ? [] : Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  const clientId = typeof claims.client_id === 'string' ? [claims.client_id] : [];
  return [...aud, ...clientId].some((a) => audiences.includes(a));
}

/**
 * The authenticate function of the live socket: the caller a token stands for and its `exp`
 * (seconds since epoch), or null (no token, a bad signature, a wrong issuer or audience, no
 * `exp`, expired). Never throws for a bad token; a JWKS that cannot be fetched is null too (the
 * connect is refused 401 and the client retries).
 */
export function jwtTokenAuth(
  options: JwtTokenAuthOptions,
): (token: string | null) => Promise<TokenIdentity | null> {
  if (options.audiences.length === 0) throw new Error('jwtTokenAuth needs at least one audience');
  const keys =
    options.keys ??
    createRemoteJWKSet(new URL(`${options.issuer.replace(/\/+$/, '')}/.well-known/jwks.json`));
  const claimsAuth = jwtClaimsAuth();
  return async (token) => {
    if (token === null || token === '') return null;
    let claims: JWTPayload;
    try {
      claims = (await jwtVerify(token, keys, { issuer: options.issuer, requiredClaims: ['exp'] })).payload;
    } catch {
      return null;
    }
    if (typeof claims.exp !== 'number') return null;
    if (!audienceMatches(claims, options.audiences)) return null;
    const event = { requestContext: { authorizer: { jwt: { claims } } } };
    const caller = await claimsAuth(new Request('http://live.invalid/'), { event });
    return caller === null ? null : { caller: { principal: caller.principal }, exp: claims.exp };
  };
}
