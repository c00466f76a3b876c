/**
 * The web console's run-time configuration, served at `GET /console/config.json` and read by the
 * console before it renders (console/src/config.ts): how to sign in and what the deployment's
 * timers are. It is written by whoever serves the console (the local stack, or the control
 * function from the environment the CDK stack sets), never baked into the bundle, and it holds
 * no secret: the OAuth client is a public client (PKCE, no client secret).
 *
 * Only zod here (and the zod-only lib/contracts/timings.ts): the console (a browser bundle) imports this file.
 */
import { z } from 'zod';
import { Timings } from '../contracts/timings.ts';

/** An absolute http(s) URL. */
const httpUrl = () => z.url({ protocol: /^https?$/ });

/** Sign in by pasting a bearer token (the local stack, or a deployment without a user pool). */
export const TokenLogin = z.object({
  kind: z.literal('token'),
  /** A line the login page shows under the token field (e.g. how to get a token). */
  hint: z.string().max(500).optional(),
});

/**
 * Sign in with the OAuth 2.0 authorization code flow and PKCE (S256) against an authorization
 * server such as the Cognito hosted UI. Endpoints are absolute URLs.
 */
export const OAuthLogin = z.object({
  kind: z.literal('oauth'),
  /** The `iss` of the tokens (Cognito: `https://cognito-idp.{region}.amazonaws.com/{pool_id}`). */
  issuer: httpUrl(),
  /** Cognito: `https://{domain}/oauth2/authorize`. */
  authorization_endpoint: httpUrl(),
  /** Cognito: `https://{domain}/oauth2/token`. */
  token_endpoint: httpUrl(),
  /** Cognito: `https://{domain}/logout` (called with client_id and logout_uri). */
  end_session_endpoint: httpUrl().optional(),
  client_id: z.string().min(1),
  scopes: z.array(z.string().min(1)).default(['openid']),
  /** Which token the console sends as `Authorization: Bearer`: the access token (default) or the ID token. */
  token_use: z.enum(['access', 'id']).default('access'),
});

export const ConsoleConfig = z.object({
  /** Base URL of the HTTP API; absent: the origin that served the console (same origin). */
  api_base: httpUrl().optional(),
  auth: z.discriminatedUnion('kind', [TokenLogin, OAuthLogin]),
  /**
   * The live event WebSocket (`ws://` or `wss://`, the stack output LiveUrl; lib/contracts/live.ts):
   * the console follows runs over it, else over server-sent events, else long polls.
   */
  live_url: z.url({ protocol: /^wss?$/ }).optional(),
  /** Time between sweeper passes in ms: the console's estimate of when a dead lease holder is replaced. */
  sweep_interval_ms: z.number().int().positive().optional(),
  /** How often a live lease holder renews its lease, in ms (a lease not renewed for longer is suspect). */
  heartbeat_ms: z.number().int().positive().optional(),
  /**
   * The deployment's timings (lib/contracts/timings.ts), as `GET /config` answers them: filled in by
   * the HTTP app that serves config.json; where given, they win over the two fields above.
   */
  timings: Timings.optional(),
  /** A name the console shows in its title bar (e.g. `local` or the stack name). */
  environment: z.string().max(80).optional(),
});
export type ConsoleConfig = z.infer<typeof ConsoleConfig>;
export type ConsoleConfigInput = z.input<typeof ConsoleConfig>;
