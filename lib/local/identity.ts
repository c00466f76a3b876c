/**
 * Who calls the local stack, decided as in AWS: the caller presents a JWT of the local issuer
 * (issuer.ts) as `Authorization: Bearer ...`; the gateway verifies it the way API Gateway's JWT
 * authorizer does and hands its claims to the control function in
 * `requestContext.authorizer.jwt.claims`; the HTTP app reads the principal from those claims with
 * the same `jwtClaimsAuth` the Lambda uses. A request without a valid token reaches the function
 * without claims and is answered 401 by the app (public routes stay public). Any number of users,
 * groups and system callers can so be tried on one local stack (`agent-runs token`).
 * Issue 11, item 1; DESIGN section 12 ("Authority").
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { type HttpCaller, jwtClaimsAuth } from '../http/auth.ts';
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
  return async (event, context) => {
    const { authorizer: _ignored, ...requestContext } =
      event.requestContext as APIGatewayProxyEventV2['requestContext'] & {
        authorizer?: unknown;
      };
    const claims = await verifiedClaims(issuer, bearerOf(event.headers?.authorization));
    const authorized =
      claims === null ? requestContext : { ...requestContext, authorizer: { jwt: { claims, scopes: null } } };
    return handler({ ...event, requestContext: authorized } as typeof event, context);
  };
}

/** The caller a local token stands for (as the HTTP API would decide), or null. For the live socket. */
export async function callerOfToken(issuer: LocalIssuer, token: string | null): Promise<HttpCaller | null> {
  const claims = await verifiedClaims(issuer, token);
  if (claims === null) return null;
  const event = { requestContext: { authorizer: { jwt: { claims } } } };
  return jwtClaimsAuth()(new Request('http://local/'), { event });
}

/** The issuer of the stack whose state directory is `stateDir` (its key is created on first use). */
export function localIssuer(stateDir: string | null): Promise<LocalIssuer> {
  return loadOrCreateIssuer(agentRunsDirOf(stateDir));
}
