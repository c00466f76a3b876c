/**
 * Sign-in with the OAuth 2.0 authorization code flow and PKCE (S256), for a deployment whose
 * console configuration names an authorization server (the Cognito hosted UI): redirect to the
 * authorization endpoint, come back to `/console/callback` with a code, exchange it at the token
 * endpoint (a public client: no secret), keep the tokens in the session. The protocol work is
 * oauth4webapi's; the verifier and state live in sessionStorage between the two page loads.
 */
import * as oauth from 'oauth4webapi';
import type { ConsoleConfig } from '../../../lib/http/console-config.ts';
import type { Session } from './session.ts';

type OAuthConfig = Extract<ConsoleConfig['auth'], { kind: 'oauth' }>;

const PENDING_KEY = 'agent-runs.console.oauth';

interface Pending {
  verifier: string;
  state: string;
  nonce: string;
  /** Where to go after signing in (a path under /console). */
  returnTo: string;
}

function server(config: OAuthConfig): oauth.AuthorizationServer {
  return {
    issuer: config.issuer,
    authorization_endpoint: config.authorization_endpoint,
    token_endpoint: config.token_endpoint,
    ...(config.end_session_endpoint !== undefined
      ? { end_session_endpoint: config.end_session_endpoint }
      : {}),
  };
}

/** Plain http is allowed only for a loopback authorization server (tests, local development). */
function requestOptions(config: OAuthConfig): { [oauth.allowInsecureRequests]?: boolean } {
  const host = new URL(config.token_endpoint).hostname;
  return host === '127.0.0.1' || host === 'localhost' ? { [oauth.allowInsecureRequests]: true } : {};
}

/** `{origin}/console/callback`: registered as the app client's callback URL. */
export function redirectUri(origin: string, base: string): string {
  return `${origin}${base}callback`;
}

/** Starts the sign-in: remembers the PKCE verifier, state and nonce, then navigates to the authorization endpoint. */
export async function startSignIn(
  config: OAuthConfig,
  location: { origin: string; assign(url: string): void },
  base: string,
  returnTo: string,
): Promise<void> {
  const pending: Pending = {
    verifier: oauth.generateRandomCodeVerifier(),
    state: oauth.generateRandomState(),
    nonce: oauth.generateRandomNonce(),
    returnTo,
  };
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(config.authorization_endpoint);
  url.searchParams.set('client_id', config.client_id);
  url.searchParams.set('redirect_uri', redirectUri(location.origin, base));
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', config.scopes.join(' '));
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(pending.verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', pending.state);
  if (config.scopes.includes('openid')) url.searchParams.set('nonce', pending.nonce);
  location.assign(url.toString());
}

/**
 * Completes the sign-in on the callback page: checks the state, exchanges the code with the
 * verifier, validates the ID token's claims (issuer, audience, nonce) and returns the session
 * and where to go next. Throws (oauth4webapi's errors, or an Error) when anything does not
 * match; the pending sign-in is forgotten either way.
 */
export async function completeSignIn(
  config: OAuthConfig,
  currentUrl: URL,
  base: string,
  now: number,
): Promise<{ session: Session; returnTo: string }> {
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (raw === null) throw new Error('no sign-in in progress in this tab: start again');
  const pending = JSON.parse(raw) as Pending;
  const as = server(config);
  const client: oauth.Client = { client_id: config.client_id };
  const params = oauth.validateAuthResponse(as, client, currentUrl, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    redirectUri(currentUrl.origin, base),
    pending.verifier,
    requestOptions(config),
  );
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, {
    ...(config.scopes.includes('openid') ? { expectedNonce: pending.nonce } : {}),
  });
  const bearer = config.token_use === 'id' ? tokens.id_token : tokens.access_token;
  if (bearer === undefined) throw new Error(`the token endpoint returned no ${config.token_use} token`);
  const session: Session = {
    token: bearer,
    via: 'oauth',
    ...(tokens.expires_in !== undefined ? { expiresAt: now + tokens.expires_in * 1000 } : {}),
    ...(tokens.id_token !== undefined ? { idToken: tokens.id_token } : {}),
  };
  return { session, returnTo: pending.returnTo.startsWith('/') ? pending.returnTo : '/' };
}

/** The URL that ends the session at the authorization server (Cognito's /logout), or null. */
export function signOutUrl(config: OAuthConfig, origin: string, base: string): string | null {
  if (config.end_session_endpoint === undefined) return null;
  const url = new URL(config.end_session_endpoint);
  url.searchParams.set('client_id', config.client_id);
  url.searchParams.set('logout_uri', `${origin}${base}`);
  return url.toString();
}
