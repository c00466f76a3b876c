/**
 * `GET /openapi.json` is an OpenAPI 3.1 document generated from the routes' zod schemas and
 * covers every route. The document is checked with ajv: its structure against a minimal
 * OpenAPI 3.1 schema, every $ref resolves, every
 * path template parameter is declared, and every schema compiles as JSON Schema 2020-12 (the
 * dialect OpenAPI 3.1 uses). `redocly lint` (@redocly/cli, recommended rules) checks it for
 * code generators: operationIds, tags, servers, 4xx responses.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../lib/engine/engine.ts';
import { DEFAULT_SERVERS, openApiDocument } from '../../lib/http/app.ts';
import { bearerTokenAuth, createHttpApp, HTTP_ERROR_STATUS, ROUTES } from '../../lib/http/index.ts';
import { TAGS } from '../../lib/http/routes.ts';
import { InMemoryFunctionRegistry } from '../../lib/sandbox/function-registry.ts';

const app = createHttpApp({
  engine: {} as Engine,
  functions: new InMemoryFunctionRegistry(),
  tools: { list: () => [] },
  auth: bearerTokenAuth('t'),
});

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** The parts of the OpenAPI 3.1 schema (spec.openapis.org/oas/3.1/schema) this API uses. */
const OPENAPI_31_MINIMAL = {
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' },
    info: {
      type: 'object',
      required: ['title', 'version'],
      properties: { title: { type: 'string' }, version: { type: 'string' }, description: { type: 'string' } },
    },
    security: { type: 'array', items: { $ref: '#/$defs/securityRequirement' } },
    paths: {
      type: 'object',
      propertyNames: { pattern: '^/' },
      additionalProperties: {
        type: 'object',
        propertyNames: { enum: [...HTTP_METHODS, 'summary', 'description', 'parameters', 'servers', '$ref'] },
        additionalProperties: { $ref: '#/$defs/operation' },
      },
    },
    components: {
      type: 'object',
      properties: {
        schemas: { type: 'object', additionalProperties: { type: ['object', 'boolean'] } },
        parameters: { type: 'object', additionalProperties: { $ref: '#/$defs/parameter' } },
        securitySchemes: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            required: ['type'],
            properties: { type: { enum: ['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'] } },
          },
        },
      },
    },
  },
  $defs: {
    securityRequirement: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
    },
    operation: {
      type: 'object',
      required: ['responses'],
      properties: {
        summary: { type: 'string' },
        parameters: { type: 'array', items: { $ref: '#/$defs/parameter' } },
        requestBody: {
          type: 'object',
          required: ['content'],
          properties: { required: { type: 'boolean' }, content: { $ref: '#/$defs/content' } },
        },
        responses: {
          type: 'object',
          minProperties: 1,
          propertyNames: { pattern: '^([1-5](\\d\\d|XX)|default)$' },
          additionalProperties: {
            type: 'object',
            required: ['description'],
            properties: { description: { type: 'string' }, content: { $ref: '#/$defs/content' } },
          },
        },
        security: { type: 'array', items: { $ref: '#/$defs/securityRequirement' } },
      },
    },
    parameter: {
      type: 'object',
      required: ['name', 'in'],
      properties: {
        name: { type: 'string' },
        in: { enum: ['query', 'header', 'path', 'cookie'] },
        required: { type: 'boolean' },
        schema: { type: ['object', 'boolean'] },
      },
      if: { properties: { in: { const: 'path' } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
      then: { required: ['required'], properties: { required: { const: true } } },
    },
    content: {
      type: 'object',
      additionalProperties: { type: 'object', properties: { schema: { type: ['object', 'boolean'] } } },
    },
  },
};

async function document(): Promise<
  Record<string, unknown> & { paths: Record<string, Record<string, unknown>> }
> {
  const response = await app.request('/openapi.json');
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown> & {
    paths: Record<string, Record<string, unknown>>;
  };
}

/** Every `$ref` string in `value`, with the JSON path where it sits. */
function refs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refs(v, out);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

function resolve(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
}

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1.0 document with the structure the 3.1 schema requires', async () => {
    const doc = await document();
    expect(doc.openapi).toBe('3.1.0');
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const validate = ajv.compile(OPENAPI_31_MINIMAL);
    expect(validate(doc), JSON.stringify(validate.errors, null, 2)).toBe(true);
  });

  it('resolves every $ref, declares every path parameter, and has schemas that compile as JSON Schema 2020-12', async () => {
    const doc = await document();
    for (const ref of refs(doc)) expect(resolve(doc, ref), ref).toBeDefined();

    for (const [path, item] of Object.entries(doc.paths)) {
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, operation] of Object.entries(item)) {
        const params = ((operation as { parameters?: { name: string; in: string }[] }).parameters ?? [])
          .filter((p) => p.in === 'path')
          .map((p) => p.name);
        expect(params.sort(), `${method} ${path}`).toEqual([...templated].sort());
      }
    }

    // OpenAPI 3.1 schemas are JSON Schema 2020-12: compile each, with the other components as $defs.
    const components = (doc.components as { schemas: Record<string, unknown> }).schemas;
    const id = 'https://agent-runs.test/components.json';
    const defs = JSON.parse(JSON.stringify(components).replaceAll('#/components/schemas/', '#/$defs/'));
    const ajv = new Ajv2020({ strict: false, inlineRefs: false });
    ajv.addSchema({ $id: id, $defs: defs });
    const all = ajv.compile({
      type: 'object',
      properties: Object.fromEntries(
        Object.keys(components).map((name) => [name, { $ref: `${id}#/$defs/${name}` }]),
      ),
    });
    // The compiled schemas really validate: an error body, a well-formed one and a truncated one.
    expect(all({ Error: { code: 'run_not_found', message: 'm', details: {} } })).toBe(true);
    expect(all({ Error: { code: 'run_not_found' } })).toBe(false);
    expect(all({ ControlAck: { ack: 'duplicate', original_seq: 3 } })).toBe(true);
    expect(all({ ControlAck: { ack: 'maybe' } })).toBe(false);
  });

  it('covers every route the app serves, with the bearer scheme on all but /health and itself', async () => {
    const doc = await document();
    for (const route of ROUTES) {
      const operation = doc.paths[route.path]?.[route.method.toLowerCase()] as
        | { security?: unknown[] }
        | undefined;
      expect(operation, `${route.method} ${route.path}`).toBeDefined();
      if (route.path === '/health' || route.path === '/openapi.json') expect(operation?.security).toEqual([]);
      else expect(operation?.security).toBeUndefined();
    }
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.components).toMatchObject({
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
    });
  });

  it('documents the contract schemas once, by reference', async () => {
    const doc = await document();
    const schemas = (doc.components as { schemas: Record<string, unknown> }).schemas;
    expect(Object.keys(schemas)).toEqual(
      expect.arrayContaining([
        'RunRecord',
        'RunEvent',
        'Control',
        'ControlAck',
        'CreateRunInput',
        'ForkRunInput',
        'StateRevision',
        'Error',
      ]),
    );
    const fork = doc.paths['/runs/{id}/fork']?.post as {
      operationId: string;
      requestBody: { content: unknown };
    };
    expect(fork.operationId).toBe('forkRun');
    expect(fork.requestBody.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/ForkRunInput' } },
    });
    const state = doc.paths['/runs/{id}/state']?.get as { responses: Record<string, { content: unknown }> };
    expect(state.responses['200']?.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/StateRevision' } },
    });
    const getRun = doc.paths['/runs/{id}']?.get as { responses: Record<string, { content: unknown }> };
    expect(getRun.responses['200']?.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/RunRecord' } },
    });
  });
});

describe('the run view in the document', () => {
  it('gives the run usage a cost in dollars and the run its metered AWS requests', async () => {
    const text = JSON.stringify((await document()).components);
    // The RunRecord schema (GET /runs/{id}) names usage.cost's fields and the metered counts.
    for (const field of ['total_usd', 'aws_usd', 'model_usd', 'prices_as_of', 'dynamodb_write_usd']) {
      expect(text).toContain(`"${field}"`);
    }
    for (const field of [
      'dynamodb_write_units',
      'dynamodb_read_units',
      'sqs_requests',
      'lambda_gb_seconds',
    ]) {
      expect(text).toContain(`"${field}"`);
    }
  });
});

describe('the document for code generators', () => {
  it('gives every operation a unique operationId and a declared tag, and at least one 4xx response', async () => {
    const doc = await document();
    const declared = new Set((doc.tags as { name: string }[]).map((t) => t.name));
    expect([...declared].sort()).toEqual(Object.keys(TAGS).sort());
    const ids: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const o = operation as { operationId?: string; tags?: string[]; responses: Record<string, unknown> };
        expect(o.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
        ids.push(o.operationId ?? '');
        expect(o.tags?.length, `${method} ${path}`).toBe(1);
        for (const tag of o.tags ?? []) expect(declared.has(tag), tag).toBe(true);
        expect(
          Object.keys(o.responses).some((s) => /^4\d\d$/.test(s)),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(ROUTES.length);
  });

  it('lists the origin it was reached at as the first server, then the deployed and local stacks', async () => {
    const doc = await document();
    const servers = doc.servers as { url: string }[];
    // app.request resolves relative URLs against http://localhost.
    expect(servers[0]?.url).toBe('http://localhost');
    expect(servers.slice(1)).toEqual(DEFAULT_SERVERS);
    const staticDoc = openApiDocument(app);
    expect(staticDoc.servers).toEqual(DEFAULT_SERVERS);
  });

  it("names the scheme the client used, from X-Forwarded-Proto, in the first server's URL", async () => {
    const served = async (proto: string) => {
      const response = await app.request('https://api.example.com/openapi.json', {
        headers: { 'x-forwarded-proto': proto },
      });
      return ((await response.json()) as { servers: { url: string }[] }).servers[0]?.url;
    };
    expect(await served('http')).toBe('http://api.example.com');
    expect(await served('https')).toBe('https://api.example.com');
    expect(await served('gopher')).toBe('https://api.example.com');
  });

  it('passes `redocly lint` (recommended rules) without an error or a warning', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    try {
      const file = join(dir, 'openapi.json');
      // The static document: the served one differs only by the origin in front of its servers.
      writeFileSync(file, JSON.stringify(openApiDocument(app)));
      const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
      const result = spawnSync(process.execPath, [cli, 'lint', file, '--format=json'], {
        encoding: 'utf8',
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      const report = JSON.parse(result.stdout) as {
        totals: { errors: number; warnings: number };
        problems: { ruleId: string; message: string }[];
      };
      expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
      expect(result.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the error codes in the document', () => {
  type Operation = { responses: Record<string, { description: string }> };
  const operation = (doc: Awaited<ReturnType<typeof document>>, method: string, path: string) =>
    (doc.paths as Record<string, Record<string, Operation>>)[path]?.[method];

  it('names every error code of the API under the status it is answered with', async () => {
    const doc = await document();
    const described = new Map<string, string>();
    for (const item of Object.values(doc.paths as Record<string, Record<string, Operation>>))
      for (const o of Object.values(item))
        for (const [status, response] of Object.entries(o.responses ?? {}))
          described.set(status, `${described.get(status) ?? ''} ${response.description}`);
    // method_not_allowed answers a method no route has, so no operation can list it; the live
    // socket's bounds are answered on the socket (its upgrade, its messages), not by a route.
    const notOfARoute = new Set([
      'method_not_allowed',
      'too_many_connections',
      'too_many_subscriptions',
      'subscribe_rate_exceeded',
      'replay_budget_exceeded',
    ]);
    const missing = Object.entries(HTTP_ERROR_STATUS)
      .filter(([code]) => !notOfARoute.has(code))
      .filter(([code, status]) => !new RegExp(`\\b${code}\\b`).test(described.get(String(status)) ?? ''))
      .map(([code, status]) => `${status} ${code}`);
    expect(missing).toEqual([]);
  });

  it('lists the authority answers on the routes that give them', async () => {
    const doc = await document();
    const statuses = (method: string, path: string) =>
      Object.keys(operation(doc, method, path)?.responses ?? {});
    expect(statuses('post', '/runs')).toEqual(expect.arrayContaining(['403', '409', '429']));
    expect(operation(doc, 'post', '/runs')?.responses['403']?.description).toMatch(/agent_not_allowed/);
    expect(operation(doc, 'post', '/runs')?.responses['409']?.description).toMatch(
      /subject_busy.*create_key_reused/,
    );
    expect(operation(doc, 'post', '/runs')?.responses['429']?.description).toMatch(/quota_exceeded/);
    expect(statuses('post', '/runs/{id}/controls')).toEqual(expect.arrayContaining(['403', '404']));
    expect(operation(doc, 'post', '/runs/{id}/controls')?.responses['403']?.description).toMatch(
      /capability_invalid/,
    );
    expect(operation(doc, 'get', '/runs/{id}')?.responses['404']?.description).toMatch(/run_not_found/);
  });
});
