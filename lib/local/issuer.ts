/**
 * The local stack's token issuer: real JWTs, verified the way API Gateway's JWT authorizer
 * verifies a Cognito token, so that locally the control function receives the same verified
 * claims (`requestContext.authorizer.jwt.claims`) it receives in AWS. One ES256 key per data
 * folder, kept in `issuer-key.json` (owner-only), so tokens stay valid across restarts of a
 * stack started with the same folder. docs/guides/who-may-do-what.md.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { MAX_TOKEN_LIFETIME_S } from '../core/token-exp.ts';
import { CALLER_GROUPS } from '../http/auth.ts';

/** The `iss` of every local token. */
export const LOCAL_ISSUER = 'agent-runs-local';
/** The `aud` of every local token (the HTTP API's audience). */
export const LOCAL_AUDIENCE = 'agent-runs';
/** The file, in the issuer's folder, that holds its signing key. */
export const ISSUER_KEY_FILE = 'issuer-key.json';
/** How long a local token is valid unless asked otherwise: 30 days, in seconds. */
export const DEFAULT_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

/** Who a token names: a user (`sub`) with groups; `system` adds the system group. */
export interface TokenRequest {
  sub: string;
  groups?: string[];
  system?: boolean;
  admin?: boolean;
  /** Seconds the token is valid: a positive integer (default DEFAULT_TOKEN_TTL_SECONDS). Every token has an `exp`. */
  ttlSeconds?: number;
}

export interface LocalIssuer {
  /**
   * Signs a token for `request`, always with an `exp`. Throws IssuerError
   * `token_invalid_request` for a blank sub or a `ttlSeconds` that is not a positive integer.
   */
  sign(request: TokenRequest): Promise<string>;
  /**
   * The verified claims of `token` (with a numeric `exp`), or null when it is not one of this
   * issuer's valid tokens: a bad signature, issuer or audience, expired, or without `exp`.
   */
  verify(token: string): Promise<JWTPayload | null>;
}

/** Why the issuer cannot work: its key file is unreadable or not a key of this issuer. */
export class IssuerError extends Error {
  override name = 'IssuerError';
  readonly code: 'issuer_key_invalid' | 'token_invalid_request';
  readonly retryable = false;
  constructor(code: IssuerError['code'], message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

const KeyFile = z.object({ alg: z.literal('ES256'), private_jwk: z.record(z.string(), z.unknown()) });

/**
 * The issuer whose key is in `dir` (created, with a new key, when there is none). Throws
 * IssuerError `issuer_key_invalid` when the file is there but is not a key.
 */
export async function loadOrCreateIssuer(dir: string): Promise<LocalIssuer> {
  const path = join(dir, ISSUER_KEY_FILE);
  let privateJwk: JWK;
  let text: string | null = null;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new IssuerError('issuer_key_invalid', `cannot read ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  if (text !== null) {
    const parsed = KeyFile.safeParse(safeJson(text));
    if (!parsed.success) throw new IssuerError('issuer_key_invalid', `${path} is not an issuer key file`);
    privateJwk = parsed.data.private_jwk as JWK;
  } else {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    privateJwk = await exportJWK(privateKey);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path, `${JSON.stringify({ alg: 'ES256', private_jwk: privateJwk })}\n`, { mode: 0o600 });
    chmodSync(path, 0o600);
  }
  return issuerOf(privateJwk);
}

/** An issuer whose key lives only in this process (a stack without a data folder). */
export async function createEphemeralIssuer(): Promise<LocalIssuer> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return issuerOf(await exportJWK(privateKey));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function issuerOf(privateJwk: JWK): Promise<LocalIssuer> {
  const { d: _d, ...publicJwk } = privateJwk;
  let privateKey: Awaited<ReturnType<typeof importJWK>>;
  let publicKey: Awaited<ReturnType<typeof importJWK>>;
  try {
    privateKey = await importJWK(privateJwk, 'ES256');
    publicKey = await importJWK(publicJwk, 'ES256');
  } catch (err) {
    throw new IssuerError('issuer_key_invalid', `the issuer key is not an ES256 key: ${String(err)}`, {
      cause: err,
    });
  }
  return {
    async sign(request) {
      if (request.sub.trim() === '') throw new IssuerError('token_invalid_request', 'sub must not be blank');
      const ttl = request.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS;
      if (!Number.isSafeInteger(ttl) || ttl <= 0)
        throw new IssuerError('token_invalid_request', `ttlSeconds must be a positive integer, got ${ttl}`);
      // A token living longer would be refused by the API and the live socket (core/token-exp.ts).
      if (ttl > MAX_TOKEN_LIFETIME_S)
        throw new IssuerError(
          'token_invalid_request',
          `ttlSeconds must be at most ${MAX_TOKEN_LIFETIME_S} (366 days), got ${ttl}`,
        );
      const groups = [
        ...(request.groups ?? []),
        ...(request.admin === true ? [CALLER_GROUPS.admin] : []),
        ...(request.system === true ? [CALLER_GROUPS.system] : []),
      ];
      return new SignJWT({ 'cognito:groups': [...new Set(groups)], token_use: 'access' })
        .setProtectedHeader({ alg: 'ES256', typ: 'JWT' })
        .setSubject(request.sub)
        .setIssuer(LOCAL_ISSUER)
        .setAudience(LOCAL_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(`${ttl}s`)
        .sign(privateKey);
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, publicKey, {
          issuer: LOCAL_ISSUER,
          audience: LOCAL_AUDIENCE,
          algorithms: ['ES256'],
          requiredClaims: ['exp'],
        });
        return typeof payload.exp === 'number' ? payload : null;
      } catch {
        return null;
      }
    },
  };
}

/**
 * Claims as API Gateway's JWT authorizer hands them to the function: every value a string
 * except arrays, which it renders as `[a b]`. The authenticator reads both forms.
 */
export function claimsAsApiGateway(payload: JWTPayload): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(payload)) {
    out[key] = Array.isArray(value) ? `[${value.map(String).join(' ')}]` : String(value);
  }
  return out;
}
