/**
 * The one configuration source (lib/config.ts): every variable parsed at once with its default,
 * a bad value named; the reference rendered from it and committed; no other file of the runtime,
 * handlers, local stack or CDK stack spelling a variable name; and the deployment's timings
 * reported by `GET /config` and the console's config.json.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_REFERENCE_PATH, renderConfigReference } from '../../lib/checker/config-reference.ts';
import { ConfigError, configFromEnv, ENV, NAMES, VARIABLES } from '../../lib/config.ts';
import { CLI_ENV } from '../../lib/contracts/env-names.ts';
import { DEFAULT_TIMINGS } from '../../lib/contracts/timings.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { bearerTokenAuth, createHttpApp } from '../../lib/http/index.ts';
import { createRuntime, runtimeConfigFromEnv } from '../../lib/runtime.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('configFromEnv', () => {
  it('gives each variable its default when unset or empty, and the value when set', () => {
    const config = configFromEnv({
      AGENT_RUNS_MAX_OPEN_WAITS: '',
      AGENT_RUNS_MAX_LIVE_RUNS: '5',
      PORT: '9000',
    });

    expect(config.AGENT_RUNS_MAX_OPEN_WAITS).toBe(32);
    expect(config.SWEEP_PASS_GAP_MS).toBe(30_000);
    expect(config.AGENT_RUNS_LEASE_TTL_MS).toBe(DEFAULT_TIMINGS.lease_ttl_ms);
    expect(config.AGENT_RUNS_MAX_LIVE_RUNS).toBe(5);
    expect(config.PORT).toBe(9000);
    expect(config.TABLE_NAME).toBeUndefined();
  });

  it('names the variable of a bad value, with the type it expected', () => {
    const cases: Array<[string, string]> = [
      ['AGENT_RUNS_MAX_OPEN_WAITS', '2.5'],
      ['AGENT_RUNS_MAX_LIVE_RUNS', 'many'],
      ['SWEEP_PASS_GAP_MS', '-1'],
      ['AGENT_RUNS_RISK_TIER_FLOOR', 'extreme'],
      ['LIVE_CALLBACK_URL', 'ftp://x'],
      ['AGENT_RUNS_LEASE_TTL_MS', '0'],
      ['PORT', '70000'],
    ];
    for (const [name, value] of cases) {
      let thrown: unknown;
      try {
        configFromEnv({ [name]: value });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, name).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).variable).toBe(name);
      expect((thrown as ConfigError).code).toBe('config_invalid');
      expect((thrown as ConfigError).message).toContain(`invalid ${name}: expected `);
    }
  });

  it('parses one environment once while its values stay, and again when one changes', () => {
    const env: Record<string, string> = { AGENT_RUNS_MAX_OPEN_WAITS: '3' };

    const first = configFromEnv(env);
    const again = configFromEnv(env);
    env.AGENT_RUNS_MAX_OPEN_WAITS = '4';
    const changed = configFromEnv(env);

    expect(again).toBe(first);
    expect(changed.AGENT_RUNS_MAX_OPEN_WAITS).toBe(4);
  });

  it('exports each name as its own value', () => {
    expect(NAMES.length).toBeGreaterThan(40);
    for (const name of NAMES) expect(ENV[name]).toBe(name);
  });
});

describe('docs/reference/configuration.md', () => {
  const committed = readFileSync(join(ROOT, CONFIG_REFERENCE_PATH), 'utf8');

  it('is the current rendering of the schema', () => {
    // Stale: run `node bin/write-config-docs.ts` after changing lib/config.ts.
    expect(committed).toBe(renderConfigReference());
  });

  it('has a row for every variable, those documented before the schema included', () => {
    const rows = committed.split('\n').filter((line) => line.startsWith('| `'));
    const documented = rows.map((row) => /^\| `([A-Z0-9_]+)`/.exec(row)?.[1]).filter((n) => n !== undefined);
    expect(documented.sort()).toEqual([...NAMES].sort());
    for (const name of [
      'PORT',
      'AGENT_RUNS_TOKEN',
      'AGENT_RUNS_URL',
      'AGENT_RUNS_WS_URL',
      'CHROMIUM_PATH',
      'BEDROCK_MODEL_ID',
      'OPENAI_BASE_URL',
      'OPENAI_MODEL',
      'OPENAI_API_KEY',
      'OPENAI_API_KEY_SECRET',
      'AGENT_RUNS_MODELS',
      'AGENT_RUNS_DEFAULT_MODEL',
      'AGENT_RUNS_TOOLS',
      'AGENT_RUNS_ENVIRONMENT',
      'AGENT_RUNS_MAX_LIVE_RUNS',
      'AGENT_RUNS_MAX_CREATES_PER_MINUTE',
      'AGENT_RUNS_MAX_CHILDREN_PER_RUN',
      'AGENT_RUNS_MAX_TREE_DEPTH',
      'AGENT_RUNS_MAX_QUEUED_STEERS',
      'AGENT_RUNS_MAX_OPEN_WAITS',
      'AGENT_RUNS_RISK_TIER_FLOOR',
      'AWS_LAMBDA_FUNCTION_MEMORY_SIZE',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'AGENT_RUNS_OTEL_CAPTURE_CONTENT',
    ])
      expect(documented, name).toContain(name);
  });
});

/**
 * The source files of the parts that read configuration: lib (the client included), the CLI
 * (bin), cdk, functions. lib/config.ts spells the names, and lib/contracts/env-names.ts those
 * of the CLI (zod-free, so that `--help` stays light); everyone else uses ENV or CLI_ENV.
 */
const SPELLERS = new Set(['lib/config.ts', 'lib/contracts/env-names.ts']);
function sourceFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return walk(path);
      return /\.tsx?$/.test(entry.name) ? [path] : [];
    });
  return ['lib', 'bin', 'cdk', 'functions']
    .flatMap((dir) => walk(join(ROOT, dir)))
    .map((path) => relative(ROOT, path))
    .filter((path) => !SPELLERS.has(path));
}

/** Where `code` (comments stripped) spells a variable name: a string literal or `env.NAME`. */
function spelledNames(code: string): string[] {
  const alternatives = [...NAMES].sort((a, b) => b.length - a.length).join('|');
  const pattern = new RegExp(`(['"\`])(${alternatives})\\1|\\benv\\.(${alternatives})\\b`, 'g');
  const uncommented = code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...uncommented.matchAll(pattern)].map((m) => m[0]);
}

describe('the variable names', () => {
  it('are spelled only in lib/config.ts: everyone else uses ENV', () => {
    // The premise: the files are found, and the check sees both spellings.
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(100);
    expect(spelledNames("x('TABLE_NAME'); env.PORT; /* 'PORT' */")).toEqual(["'TABLE_NAME'", 'env.PORT']);

    const found = files.flatMap((path) =>
      spelledNames(readFileSync(join(ROOT, path), 'utf8')).map((hit) => `${path}: ${hit}`),
    );
    expect(found).toEqual([]);
  });
});

describe("the CLI's variable names (lib/contracts/env-names.ts)", () => {
  it('are each in the schema, read by the CLI, under the same name', () => {
    const names = Object.values(CLI_ENV);
    expect(names).toEqual(['AGENT_RUNS_URL', 'AGENT_RUNS_TOKEN', 'AGENT_RUNS_WS_URL']);
    for (const name of names) {
      expect(ENV[name]).toBe(name);
      expect(VARIABLES[name].readBy).toBe('cli');
    }
    expect(NAMES.filter((n) => VARIABLES[n].readBy === 'cli').sort()).toEqual([...names].sort());
  });

  it('come from a module without imports, so that --help loads nothing more for them', () => {
    const source = readFileSync(join(ROOT, 'lib/contracts/env-names.ts'), 'utf8');
    expect(source).not.toMatch(/^\s*(import|export .* from)\b/m);
  });
});

describe('the deployment timings', () => {
  it('are read from the environment into the runtime and reported by GET /config and config.json', async () => {
    const runtime = createRuntime({
      ...runtimeConfigFromEnv({
        TABLE_NAME: 't',
        STEP_QUEUE_URL: 'http://127.0.0.1:1/q',
        PAYLOAD_BUCKET: 'b',
        AGENT_RUNS_LEASE_TTL_MS: '60000',
        AGENT_RUNS_SWEEP_INTERVAL_MS: '15000',
      }),
      env: {},
    });
    const app = createHttpApp({
      engine: {} as Engine,
      functions: new InMemoryFunctionRegistry(),
      tools: { list: () => [] },
      auth: bearerTokenAuth('t'),
      timings: runtime.timings,
      console: { assetsDir: '/nonexistent', config: { auth: { kind: 'token' } } },
    });
    runtime.close();

    const answer = await app.request('/config', { headers: { authorization: 'Bearer t' } });
    const site = await app.request('/console/config.json');
    const anonymous = await app.request('/config');

    const expected = {
      ...DEFAULT_TIMINGS,
      lease_ttl_ms: 60_000,
      clock_skew_ms: 20_000,
      sweep_interval_ms: 15_000,
    };
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ timings: expected });
    expect(((await site.json()) as { timings: unknown }).timings).toEqual(expected);
    expect(anonymous.status).toBe(401);
  });
});
