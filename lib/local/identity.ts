/**
 * Who calls the local stack, decided as in AWS: the caller presents a JWT of the local issuer
 * (issuer.ts) as `Authorization: Bearer ...`; the gateway verifies it the way API Gateway's JWT
 * authorizer does and hands its claims to the control function in
 * `requestContext.authorizer.jwt.claims`; the HTTP app reads the principal from those claims with
 * the same `jwtClaimsAuth` the Lambda uses. A request without a valid token reaches the function
 * without claims and is answered 401 by the app (public routes stay public). Any number of users,
 * groups and system callers can so be tried on one local stack (`agent-runs token`).
 * The default user's token (`npm start` prints it) is kept in the data folder of a stack started
 * with one (`local-token.json`, owner-only) and printed again after a restart, as long as it is
 * still valid for a day (defaultIdentity). docs/guides/who-may-do-what.md.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { z } from 'zod';
import { jwtClaimsAuth } from '../http/auth.ts';
import type { TokenIdentity } from '../live/socket.ts';
import type { ApiHandler } from './gateway.ts';
import { claimsAsApiGateway, type LocalIssuer, loadOrCreateIssuer } from './issuer.ts';

/** The stack's `.agent-runs` folder (issuer key, notifications) under the state directory, else under the OS temp dir. */
export function agentRunsDirOf(stateDir: string | null): string {
  return join(stateDir ?? join(tmpdir(), `agent-runs-${process.pid}`), '.agent-runs');
}

/** The bearer token of an `Authorization` header value, or null. */
function bearerOf(header: string | undefined | null): string | null {
  const match = header == null ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** The claims of `token` as API Gateway's JWT authorizer hands them on, or null when it is not a valid local token. */
async function verifiedClaims(
  issuer: LocalIssuer,
  token: string | null,
): Promise<Record<string, string> | null> {
  if (token === null) return null;
  const payload = await issuer.verify(token);
  return payload === null ? null : claimsAsApiGateway(payload);
}

/**
 * Wraps the control handler as API Gateway's JWT authorizer would sit before it: a verified
 * bearer token's claims go into `requestContext.authorizer.jwt.claims`; any authorizer context
 * the request claimed for itself is dropped first.
 */
export function withJwtAuthorizer(issuer: LocalIssuer, handler: ApiHandler): ApiHandler {
  return async (event, context, signal) => {
    const { authorizer: _ignored, ...requestContext } =
      event.requestContext as APIGatewayProxyEventV2['requestContext'] & {
        authorizer?: unknown;
      };
    const claims = await verifiedClaims(issuer, bearerOf(event.headers?.authorization));
    const authorized =
      claims === null ? requestContext : { ...requestContext, authorizer: { jwt: { claims, scopes: null } } };
    return handler({ ...event, requestContext: authorized } as typeof event, context, signal);
  };
}

/**
 * Who a local token stands for on the live socket and until when (its `exp`, seconds since
 * epoch), or null when it is not a valid token of `issuer` (expired, no `exp`, ...).
 */
export async function identityOfToken(
  issuer: LocalIssuer,
  token: string | null,
): Promise<TokenIdentity | null> {
  if (token === null) return null;
  const payload = await issuer.verify(token);
  if (payload === null || typeof payload.exp !== 'number') return null;
  const event = { requestContext: { authorizer: { jwt: { claims: claimsAsApiGateway(payload) } } } };
  const caller = await jwtClaimsAuth()(new Request('http://local/'), { event });
  return caller === null ? null : { caller: { principal: caller.principal }, exp: payload.exp };
}

/** The issuer of the stack whose state directory is `stateDir` (its key is created on first use). */
export function localIssuer(stateDir: string | null): Promise<LocalIssuer> {
  return loadOrCreateIssuer(agentRunsDirOf(stateDir));
}

/** The file, in the data folder, that keeps the default user's token. */
export const TOKEN_FILE = 'local-token.json';
/** A kept token is signed again when it has less than this left (s): one day. */
export const TOKEN_RENEW_BEFORE_S = 24 * 3600;

/** The default user's token, who it names, and where it is kept. */
export interface DefaultIdentity {
  token: string;
  /** The user the token names (`local-user`, admin). */
  user: string;
  /** The file keeping the token, or null when nothing is kept (no data folder). */
  tokenFile: string | null;
  /** True when the token was read back from `tokenFile` rather than signed now. */
  kept: boolean;
}

const TokenFile = z.object({ token: z.string().min(1) });

/**
 * The default user's token (admin): with a data folder, the one kept there when `issuer` still
 * accepts it for `user` with more than a day left (`nowS`: the clock in seconds), else a new one,
 * written there owner-only; without, a new one each start.
 */
export async function defaultIdentity(
  issuer: LocalIssuer,
  user: string,
  dataDir: string | undefined,
  nowS: number,
): Promise<DefaultIdentity> {
  if (dataDir === undefined) {
    return { token: await issuer.sign({ sub: user, admin: true }), user, tokenFile: null, kept: false };
  }
  const tokenFile = join(resolve(dataDir), TOKEN_FILE);
  const kept = readKeptToken(tokenFile);
  if (kept !== null) {
    const claims = await issuer.verify(kept);
    if (claims?.sub === user && typeof claims.exp === 'number' && claims.exp - nowS > TOKEN_RENEW_BEFORE_S) {
      return { token: kept, user, tokenFile, kept: true };
    }
  }
  const token = await issuer.sign({ sub: user, admin: true });
  mkdirSync(resolve(dataDir), { recursive: true });
  writeFileSync(tokenFile, `${JSON.stringify({ token })}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  return { token, user, tokenFile, kept: false };
}

/** The kept token, or null when there is none or the file does not hold one. */
function readKeptToken(path: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null; // no kept token yet: a new one is signed
  }
  try {
    const parsed = TokenFile.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.token : null;
  } catch {
    return null; // not JSON: replaced by a new token
  }
}
