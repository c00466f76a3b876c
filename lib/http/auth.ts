/**
 * Who is calling: an `Authenticate` function turns a request into an HttpCaller or null (null
 * → 401 unauthenticated). In AWS the principal comes from the API Gateway HTTP API's JWT
 * authorizer claims; locally from a bearer token printed at start-up. No path falls back to
 * system rights: a system caller exists only when a verified claim says so. The run's control
 * capability travels in the `X-Control-Capability` header and is added by the app, whatever
 * the authenticator. docs/contracts/run-lifecycle.md, "Controls" (authorization).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { configFromEnv } from '../config.ts';
import type { Principal } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { tokenExpProblem } from '../core/token-exp.ts';
import { HttpError } from './errors.ts';

/**
 * A caller of the HTTP API: the engine's Caller, whose `admin` also says it may use the admin
 * routes (registries, `PUT /functions/...`).
 */
export type HttpCaller = Caller;

/**
 * Authenticates one request. `env` is what the runtime adapter passes to `app.fetch` (for
 * hono's aws-lambda adapter: `{event, requestContext, lambdaContext}`). Returns null when the
 * request carries no valid credentials. Must not throw for bad credentials.
 */
export type Authenticate = (request: Request, env: unknown) => HttpCaller | null | Promise<HttpCaller | null>;

/** The principal the local stack's bearer token stands for. */
export const LOCAL_PRINCIPAL: Principal = { kind: 'user', id: 'local-user' };

/** Header that carries a run's control capability secret. */
export const CAPABILITY_HEADER = 'X-Control-Capability';

/** OAuth scopes (or `custom:role` values) that grant admin and system rights. */
export const ADMIN_SCOPE = 'agent-runs/admin';
export const SYSTEM_SCOPE = 'agent-runs/system';

/**
 * Cognito group names that grant admin and system rights (claim `cognito:groups`). The CDK
 * stack creates these groups in its user pool (cdk/auth.ts).
 */
export const CALLER_GROUPS = { admin: 'admin', system: 'system' } as const;

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/**
 * `Authorization: Bearer <token>` with exactly `token` (compared in constant time) → `principal`
 * (default `local-user`, a user with admin rights). Anything else → null.
 */
export function bearerTokenAuth(
  token: string,
  principal: Principal = LOCAL_PRINCIPAL,
  options: { admin?: boolean } = {},
): Authenticate {
  if (token.length === 0) throw new Error('bearerTokenAuth needs a non-empty token');
  const expected = sha256(token);
  const admin = options.admin ?? true;
  return (request) => {
    const header = request.headers.get('authorization');
    const match = header === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match?.[1] === undefined) return null;
    return timingSafeEqual(sha256(match[1]), expected) ? { principal: { ...principal }, admin } : null;
  };
}

/** The parts of an API Gateway HTTP API (payload v2) event the JWT authenticator reads. */
const JwtEvent = z.object({
  requestContext: z.object({
    authorizer: z.object({
      jwt: z.object({ claims: z.record(z.string(), z.unknown()) }),
    }),
  }),
});

/**
 * The claims API Gateway's JWT authorizer verified for this request
 * (`env.event.requestContext.authorizer.jwt.claims`), or null when there are none (no
 * authorizer, a local request without the local authorizer's wrapper).
 */
export function jwtClaimsOf(env: unknown): Record<string, unknown> | null {
  const parsed = JwtEvent.safeParse((env as { event?: unknown } | null | undefined)?.event);
  return parsed.success ? parsed.data.requestContext.authorizer.jwt.claims : null;
}

/** Claim values as API Gateway passes them: strings, `[a b]` for arrays, sometimes real arrays. */
function claimValues(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value !== 'string') return [];
  return value
    .replace(/^\[|\]$/g, '')
    .split(/[\s,]+/)
    .filter((v) => v.length > 0);
}

export interface JwtClaimsAuthOptions {
  /** Claim naming a role (default `custom:role`, Cognito's custom attribute). */
  roleClaim?: string;
  /** Claim listing the caller's groups (default `cognito:groups`, in ID and access tokens of a Cognito user pool). */
  groupsClaim?: string;
  /** Claims holding scopes (default `scope`, `scp`). */
  scopeClaims?: string[];
  /** The clock against the token's `exp` (ms since epoch; default Date.now). */
  now?: () => number;
}

/**
 * Reads the principal from the JWT authorizer claims API Gateway verified
 * (`c.env.event.requestContext.authorizer.jwt.claims`): `sub` is the user id; a group or role
 * `system` or the scope `agent-runs/system` makes a system caller (admin too); a group or role
 * `admin` or the scope `agent-runs/admin` gives admin rights (a bare `system` or `admin` SCOPE
 * grants nothing). Groups come from `cognito:groups`
 * (CALLER_GROUPS) and `groups`, and a user principal carries them (`principal.groups`, what
 * policy rules and agents' `acts_for` match on); roles from `custom:role`, scopes from `scope` / `scp`. No claims (no
 * authorizer, a local request) → null. An `exp` claim that is not a safe integer or lies more
 * than 366 days ahead (core/token-exp.ts) throws 401 unauthenticated saying so.
 */
export function jwtClaimsAuth(options: JwtClaimsAuthOptions = {}): Authenticate {
  const roleClaim = options.roleClaim ?? 'custom:role';
  const groupsClaim = options.groupsClaim ?? 'cognito:groups';
  const scopeClaims = options.scopeClaims ?? ['scope', 'scp'];
  return (_request, env) => {
    const claims = jwtClaimsOf(env);
    if (claims === null) return null;
    const expProblem = tokenExpProblem(claims.exp, (options.now ?? Date.now)());
    if (expProblem !== null)
      throw new HttpError('unauthenticated', expProblem, {}, { headers: { 'WWW-Authenticate': 'Bearer' } });
    const sub = claims.sub;
    if (typeof sub !== 'string' || sub.length === 0) return null;
    const groups = [...new Set([...claimValues(claims[groupsClaim]), ...claimValues(claims.groups)])];
    // A role or group grants by its bare name (admin, system) or the scope's; a scope only by
    // the namespaced one: an identity provider may hand out a bare `admin` or `system` scope for
    // its own purposes, and that must not make a caller the runtime's admin or system.
    const named = new Set([...claimValues(claims[roleClaim]), ...claimValues(claims[groupsClaim])]);
    const scopes = new Set(scopeClaims.flatMap((name) => claimValues(claims[name])));
    const grants = (group: string, scope: string) =>
      named.has(group) || named.has(scope) || scopes.has(scope);
    if (grants(CALLER_GROUPS.system, SYSTEM_SCOPE)) {
      return { principal: { kind: 'system', id: sub }, admin: true };
    }
    return {
      principal: { kind: 'user', id: sub, ...(groups.length > 0 ? { groups: groups.slice(0, 64) } : {}) },
      admin: grants(CALLER_GROUPS.admin, ADMIN_SCOPE),
    };
  };
}

/** The part of an HTTP API (payload v2) event an IAM (SigV4) authorizer fills. */
const IamEvent = z.object({
  requestContext: z.object({
    authorizer: z.object({
      iam: z.object({ userArn: z.string().min(1), accountId: z.string().optional() }),
    }),
  }),
});

/**
 * Service callers on the IAM-authorized API (the stack's `iamAuth`): API Gateway verified the
 * SigV4 signature and the caller's `execute-api:Invoke` permission, so the signing identity
 * (`requestContext.authorizer.iam.userArn`, e.g. an assumed-role ARN) is a system caller with
 * admin rights. Granting that permission is granting system rights. No IAM context → null.
 */
export function iamCallerAuth(): Authenticate {
  return (_request, env) => {
    const parsed = IamEvent.safeParse((env as { event?: unknown } | null | undefined)?.event);
    if (!parsed.success) return null;
    return {
      principal: { kind: 'system', id: parsed.data.requestContext.authorizer.iam.userArn },
      admin: true,
    };
  };
}

/** The first authenticator that recognizes the request wins; null when none does. */
export function anyOf(...authenticators: Authenticate[]): Authenticate {
  return async (request, env) => {
    for (const authenticate of authenticators) {
      const caller = await authenticate(request, env);
      if (caller !== null) return caller;
    }
    return null;
  };
}

/**
 * The authenticator a deployment's environment asks for: `AGENT_RUNS_LOCAL_TOKEN` set (the
 * local stack) → bearerTokenAuth with that token for `AGENT_RUNS_LOCAL_PRINCIPAL` (default
 * `local-user`); otherwise (AWS) → jwtClaimsAuth, then iamCallerAuth. A request that carries
 * neither verified claims nor an IAM identity is 401.
 */
export function authFromEnv(env: NodeJS.ProcessEnv): Authenticate {
  const config = configFromEnv(env);
  const token = config.AGENT_RUNS_LOCAL_TOKEN;
  if (token !== undefined) {
    const id = config.AGENT_RUNS_LOCAL_PRINCIPAL;
    return bearerTokenAuth(token, id ? { kind: 'user', id } : LOCAL_PRINCIPAL);
  }
  return anyOf(jwtClaimsAuth(), iamCallerAuth());
}
