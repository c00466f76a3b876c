/**
 * The control function's console configuration from its environment (consoleFromEnv) and the
 * page's Content-Security-Policy.
 */
import { describe, expect, it } from 'vitest';
import { consoleFromEnv, contentSecurityPolicy } from '../../lib/http/console.ts';
import { ConsoleConfig } from '../../lib/http/console-config.ts';

const OAUTH = {
  kind: 'oauth',
  issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc',
  authorization_endpoint: 'https://pool.auth.eu-west-1.amazoncognito.com/oauth2/authorize',
  token_endpoint: 'https://pool.auth.eu-west-1.amazoncognito.com/oauth2/token',
  client_id: 'abc123',
};

describe('console configuration from the environment', () => {
  it('signs in with a pasted token when CONSOLE_CONFIG is not set', () => {
    expect(consoleFromEnv({}, '/var/task/console/')).toEqual({
      assetsDir: '/var/task/console/',
      config: { auth: { kind: 'token' } },
    });
  });

  it('reads the OAuth settings the stack wrote, with their defaults', () => {
    const site = consoleFromEnv(
      { CONSOLE_CONFIG: JSON.stringify({ auth: OAUTH, sweep_interval_ms: 60_000 }) },
      '/x',
    );

    expect(site.config).toEqual({
      auth: { ...OAUTH, scopes: ['openid'], token_use: 'access' },
      sweep_interval_ms: 60_000,
    });
  });

  it('refuses a configuration that is not JSON, or names the field that is wrong', () => {
    expect(() => consoleFromEnv({ CONSOLE_CONFIG: '{nope' }, '/x')).toThrow(/CONSOLE_CONFIG is not JSON/);
    expect(() =>
      consoleFromEnv(
        { CONSOLE_CONFIG: JSON.stringify({ auth: { ...OAUTH, token_endpoint: 'ftp://x/y' } }) },
        '/x',
      ),
    ).toThrow(/auth\.token_endpoint/);
  });

  it('lets the page connect to its own origin and the token endpoint only', () => {
    const token = contentSecurityPolicy(ConsoleConfig.parse({ auth: { kind: 'token' } }));
    const oauth = contentSecurityPolicy(
      ConsoleConfig.parse({ auth: OAUTH, api_base: 'https://api.example.com/' }),
    );

    expect(token).toContain("connect-src 'self';");
    expect(oauth).toContain(
      "connect-src 'self' https://api.example.com https://pool.auth.eu-west-1.amazoncognito.com;",
    );
    expect(oauth).toContain("default-src 'none'");
  });
});
