/**
 * The console's OAuth sign-in (authorization code + PKCE S256, a public client), in chromium,
 * against oauth2-mock-server standing in for the Cognito hosted UI: the server refuses a token
 * request whose code_verifier does not match the challenge, so a completed sign-in proves the
 * PKCE pair; the console then calls the API with the access token it received. The local stack
 * verifies only its own token, so that call is answered 401 and the console asks to sign in
 * again: what a deployment does with a token its authorizer does not accept.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OAuth2Server } from 'oauth2-mock-server';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS_DIR,
  buildConsole,
  type ConsoleStack,
  launchChromium,
  startConsoleStack,
} from '../support/console-stack.ts';

let dir: string;
let oauth: OAuth2Server;
let cs: ConsoleStack;
let browser: Browser;
let issuer: string;
const tokenRequests: Record<string, string>[] = [];

beforeAll(async () => {
  oauth = new OAuth2Server();
  await oauth.issuer.keys.generate('RS256');
  await oauth.start(0, '127.0.0.1');
  issuer = oauth.issuer.url ?? '';
  // Fired once per token signed (access and ID token): keep one entry per token request.
  oauth.service.on('beforeTokenSigning', (_token, req: { body?: Record<string, string> }) => {
    const body = req.body;
    if (body !== undefined && !tokenRequests.some((b) => b.code === body.code)) tokenRequests.push(body);
  });
  dir = mkdtempSync(join(tmpdir(), 'agent-runs-console-oauth-'));
  await buildConsole(dir);
  cs = await startConsoleStack(dir, {
    consoleAuth: {
      kind: 'oauth',
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      client_id: 'console-client',
      scopes: ['openid', 'profile'],
    },
  });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await cs?.stack.stop();
  await oauth?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('OAuth sign-in with PKCE', { timeout: 120_000 }, () => {
  it('completes the code flow with a matching verifier and calls the API with the access token', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const apiAuth: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${cs.stack.url}/runs`)) apiAuth.push(r.headers().authorization ?? '');
    });
    const authorize: URL[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${issuer}/authorize`)) authorize.push(new URL(r.url()));
    });

    await page.goto(`${cs.stack.url}/console/`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back from the authorization server, the console exchanged the code and called the API,
    // which does not trust this issuer: it asks to sign in again.
    await page.getByText('The API did not accept your token (401)').waitFor({ timeout: 20_000 });
    await page.screenshot({ path: join(ARTIFACTS_DIR, 'login-oauth.png') });

    const asked = authorize[0];
    expect(asked?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(asked?.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(asked?.searchParams.get('redirect_uri')).toBe(`${cs.stack.url}/console/callback`);
    expect(asked?.searchParams.get('client_id')).toBe('console-client');
    expect(tokenRequests).toHaveLength(1);
    expect(tokenRequests[0]).toMatchObject({ grant_type: 'authorization_code', client_id: 'console-client' });
    expect(tokenRequests[0]?.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    const bearer = apiAuth[0]?.replace(/^Bearer /, '') ?? '';
    const claims = JSON.parse(Buffer.from(bearer.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      iss?: string;
    };
    expect(claims.iss).toBe(issuer);
    expect(page.url()).not.toContain('code=');
    await context.close();
  });

  it('refuses a callback it did not start, and exchanges nothing', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const before = tokenRequests.length;

    await page.goto(`${cs.stack.url}/console/callback?code=stolen&state=forged`);

    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('no sign-in in progress in this tab');
    expect(tokenRequests).toHaveLength(before);
    await context.close();
  });
});
