/**
 * Who the local stack's printed token names, and how a request's bearer token becomes a caller.
 * The token is a JWT of the stack's issuer (lib/local/issuer.ts) for the default user
 * `local-user` in the `admin` group, read the way API Gateway's JWT authorizer hands claims to
 * the control function (jwtClaimsAuth). With a data folder the signing key and the token are kept
 * there (`issuer-key.json`, `local-token.json`, owner-only), so a restart keeps the token the CLI
 * state, scripts and the console already hold; it is signed again only when it is no longer
 * valid or has less than a day left. Issue 20, item 3; issue 11, item 1.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { type Authenticate, jwtClaimsAuth, LOCAL_PRINCIPAL } from '../http/auth.ts';
import { claimsAsApiGateway, createEphemeralIssuer, type LocalIssuer, loadOrCreateIssuer } from './issuer.ts';

/** The file, in the data folder, that keeps the default user's token. */
export const TOKEN_FILE = 'local-token.json';
/** A kept token is signed again when it has less than this left (s): one day. */
export const TOKEN_RENEW_BEFORE_S = 24 * 3600;

/** The stack's identity: its issuer, the default user's token, and where they are kept. */
export interface LocalIdentity {
  issuer: LocalIssuer;
  token: string;
  /** The default user's id (`local-user`). */
  user: string;
  /** The file keeping the token, or null when nothing is kept (no data folder). */
  tokenFile: string | null;
  /** True when the token was read back from `tokenFile` rather than signed now. */
  kept: boolean;
}

const TokenFile = z.object({ token: z.string().min(1) });

/**
 * The identity of a stack whose data is in `dataDir` (kept there), or in memory when undefined.
 * `nowS` is the clock in seconds. Throws IssuerError `issuer_key_invalid` for a key file that is
 * not a key.
 */
export async function localIdentity(dataDir: string | undefined, nowS: number): Promise<LocalIdentity> {
  const user = LOCAL_PRINCIPAL.id;
  if (dataDir === undefined) {
    const issuer = await createEphemeralIssuer();
    return {
      issuer,
      token: await issuer.sign({ sub: user, admin: true }),
      user,
      tokenFile: null,
      kept: false,
    };
  }
  const issuer = await loadOrCreateIssuer(dataDir);
  const tokenFile = join(dataDir, TOKEN_FILE);
  const kept = readToken(tokenFile);
  if (kept !== null) {
    const claims = await issuer.verify(kept);
    if (claims?.sub === user && typeof claims.exp === 'number' && claims.exp - nowS > TOKEN_RENEW_BEFORE_S) {
      return { issuer, token: kept, user, tokenFile, kept: true };
    }
  }
  const token = await issuer.sign({ sub: user, admin: true });
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(tokenFile, `${JSON.stringify({ token })}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  return { issuer, token, user, tokenFile, kept: false };
}

/** The kept token, or null when there is none or the file does not hold one. */
function readToken(path: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  try {
    const parsed = TokenFile.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.token : null;
  } catch {
    return null;
  }
}

/**
 * `Authorization: Bearer <jwt>` signed by `issuer` → the caller API Gateway's JWT authorizer and
 * jwtClaimsAuth would make of its claims (`sub`, `cognito:groups`: admin, system). Anything else
 * → null (401).
 */
export function issuerAuth(issuer: LocalIssuer): Authenticate {
  const fromClaims = jwtClaimsAuth();
  return async (request) => {
    const header = request.headers.get('authorization');
    const match = header === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match?.[1] === undefined) return null;
    const payload = await issuer.verify(match[1]);
    if (payload === null) return null;
    const claims = claimsAsApiGateway(payload);
    return fromClaims(request, { event: { requestContext: { authorizer: { jwt: { claims } } } } });
  };
}
