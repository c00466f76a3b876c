/**
 * The HTTP app serving the web console (lib/http/console.ts) over a real runtime: pages and
 * assets without credentials while the API still needs them, the cache and security headers,
 * config.json, compression, client-side routes, and the page that says the console is not
 * built.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync } from 'node:zlib';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { contentSecurityPolicy } from '../../lib/http/console.ts';
import { ConsoleConfig, type ConsoleConfigInput } from '../../lib/http/console-config.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import { createRuntime, type Runtime } from '../../lib/runtime.ts';

const local = inject('localServices');
const TOKEN = 'console-test-token';
const INDEX =
  '<!doctype html><title>Agent Runs console</title><script type="module" src="/console/assets/app-1a2b.js"></script>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;
const CONFIG: ConsoleConfigInput = {
  auth: {
    kind: 'oauth',
    issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc',
    authorization_endpoint: 'https://login.example.com/oauth2/authorize',
    token_endpoint: 'https://login.example.com/oauth2/token',
    client_id: 'client-1',
  },
  sweep_interval_ms: 60_000,
};

let runtime: Runtime;
let dir: string;
let app: HttpApp;
let bare: HttpApp;

beforeAll(async () => {
  const clients = createAwsClients(local);
  const { QueueUrl } = await clients.sqs.send(
    new CreateQueueCommand({ QueueName: `console-${randomUUID().slice(0, 12)}` }),
  );
  clients.destroy();
  runtime = createRuntime({
    endpoints: local,
    tableName: local.tableName,
    bucketName: local.bucketName,
    queueUrl: QueueUrl ?? '',
  });
  dir = mkdtempSync(join(tmpdir(), 'console-assets-'));
  mkdirSync(join(dir, 'built', 'assets'), { recursive: true });
  writeFileSync(join(dir, 'built', 'index.html'), INDEX);
  writeFileSync(join(dir, 'built', 'assets', 'app-1a2b.js'), SCRIPT);
  // What console/vite.config.ts writes beside each asset (gzip left out: compressed on the fly).
  writeFileSync(join(dir, 'built', 'assets', 'app-1a2b.js.br'), brotliCompressSync(SCRIPT));
  const auth = bearerTokenAuth(TOKEN);
  app = createHttpApp({ ...runtime, auth, console: { assetsDir: join(dir, 'built'), config: CONFIG } });
  bare = createHttpApp({
    ...runtime,
    auth,
    console: { assetsDir: join(dir, 'empty'), config: { auth: { kind: 'token' } } },
  });
});

afterAll(() => {
  runtime?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('the console served by the HTTP app', () => {
  it('serves the page at /console and at client-side routes without credentials, with a strict policy', async () => {
    const pages = await Promise.all(
      ['/console', '/console/', '/console/runs/run_1/transcript'].map((p) => app.request(p)),
    );

    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(await page.text()).toBe(INDEX);
      expect(page.headers.get('cache-control')).toBe('no-cache');
    }
    const csp = pages[0]?.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    // The browser may call the OAuth token endpoint, and nothing else off-origin.
    expect(csp).toContain("connect-src 'self' https://login.example.com");
  });

  it('keeps the API behind its credentials', async () => {
    const anonymous = await app.request('/runs?status=running');
    const withToken = await app.request('/runs?status=running', {
      headers: { authorization: `Bearer ${TOKEN}` },
    });

    expect(anonymous.status).toBe(401);
    expect(withToken.status).toBe(200);
  });

  it('serves hashed assets as immutable and answers 404 for a missing one, not the page', async () => {
    const asset = await app.request('/console/assets/app-1a2b.js');
    const missing = await app.request('/console/assets/app-ffff.js');

    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await asset.text()).toBe(SCRIPT);
    expect(missing.status).toBe(404);
  });

  it('compresses what it serves when the browser accepts gzip', async () => {
    const response = await app.request('/console/assets/app-1a2b.js', {
      headers: { 'accept-encoding': 'gzip' },
    });

    expect(response.headers.get('content-encoding')).toBe('gzip');
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.length).toBeLessThan(SCRIPT.length / 4);
    expect(gunzipSync(bytes).toString('utf8')).toBe(SCRIPT);
  });

  it("sends the build's precompressed copy of an asset as it is, brotli first", async () => {
    const response = await app.request('/console/assets/app-1a2b.js', {
      headers: { 'accept-encoding': 'gzip, br' },
    });

    expect(response.headers.get('content-encoding')).toBe('br');
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.equals(brotliCompressSync(SCRIPT))).toBe(true);
    expect(brotliDecompressSync(bytes).toString('utf8')).toBe(SCRIPT);
  });

  it('names the live socket in the page policy when the configuration names it', () => {
    const policy = contentSecurityPolicy(
      ConsoleConfig.parse({ ...CONFIG, live_url: 'wss://live.example.com/prod' }),
    );
    expect(policy).toContain('connect-src');
    expect(policy).toContain('wss://live.example.com');
  });

  it('serves its run-time configuration, with defaults filled, the runtime timings and never cached', async () => {
    const response = await app.request('/console/config.json');

    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({
      ...CONFIG,
      auth: { ...CONFIG.auth, scopes: ['openid'], token_use: 'access' },
      timings: runtime.timings,
    });
  });

  it('says how to build the console when it is not built', async () => {
    const page = await bare.request('/console/');

    expect(page.status).toBe(503);
    expect(await page.text()).toContain('npm run console:build');
    expect((await bare.request('/console/config.json')).status).toBe(200);
  });

  it('refuses a configuration that is not one at start-up', () => {
    const bad = {
      auth: { kind: 'oauth', issuer: 'javascript:alert(1)', client_id: '' },
    } as unknown as ConsoleConfigInput;

    expect(() =>
      createHttpApp({ ...runtime, auth: bearerTokenAuth(TOKEN), console: { assetsDir: dir, config: bad } }),
    ).toThrow();
  });
});
