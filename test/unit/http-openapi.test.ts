/**
 * `GET /openapi.json` is an OpenAPI 3.1 document generated from the routes' zod schemas and
 * covers every route. No OpenAPI validator package is installed, so the document is checked
 * with ajv: its structure against a minimal OpenAPI 3.1 schema, every $ref resolves, every
 * path template parameter is declared, and every schema compiles as JSON Schema 2020-12 (the
 * dialect OpenAPI 3.1 uses).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../lib/engine/engine.ts';
import { bearerTokenAuth, createHttpApp, ROUTES } from '../../lib/http/index.ts';
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
      expect.arrayContaining(['RunRecord', 'RunEvent', 'Control', 'ControlAck', 'CreateRunInput', 'Error']),
    );
    const getRun = doc.paths['/runs/{id}']?.get as { responses: Record<string, { content: unknown }> };
    expect(getRun.responses['200']?.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/RunRecord' } },
    });
  });
});
