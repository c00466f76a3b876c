import { describe, expect, it } from 'vitest';
import { ToolDescriptor } from '../../lib/contracts/index.ts';
import {
  createToolRegistry,
  type ToolDefinition,
  ToolRegistrationError,
  type ToolRegistrationErrorCode,
} from '../../lib/tools/index.ts';

const noop = { kind: 'module', fn: async () => null } as const;

function definition(overrides: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name: 'lookup',
    version: '1.0.0',
    description: 'Looks something up.',
    input_schema: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
    handler: noop,
    metadata: { mutating: false, replay_safe: true },
    ...overrides,
  };
}

function registrationCode(act: () => unknown): ToolRegistrationErrorCode | 'no error' {
  try {
    act();
  } catch (error) {
    if (error instanceof ToolRegistrationError) return error.code;
    throw error;
  }
  return 'no error';
}

describe('tool registry', () => {
  it('registers a tool and applies the metadata defaults', () => {
    const registry = createToolRegistry();
    const descriptor = registry.register(definition());
    expect(descriptor.metadata).toEqual({
      mutating: false,
      replay_safe: true,
      risk: 'low',
      timeout_ms: 30_000,
      max_output_bytes: 256 * 1024,
      approval: 'never',
    });
    expect(registry.get('lookup')?.descriptor).toBe(descriptor);
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['padded', ' lookup '],
    ['too long', 'x'.repeat(129)],
  ])('refuses a %s name with invalid_name', (_label, name) => {
    expect(registrationCode(() => createToolRegistry().register(definition({ name })))).toBe('invalid_name');
  });

  it.each(['1.0', 'v1.0.0', '01.0.0', '1.0.0.0', 'latest'])(
    'refuses version %s with invalid_version',
    (version) => {
      expect(registrationCode(() => createToolRegistry().register(definition({ version })))).toBe(
        'invalid_version',
      );
    },
  );

  it('accepts a prerelease version', () => {
    expect(createToolRegistry().register(definition({ version: '2.1.0-rc.1' })).version).toBe('2.1.0-rc.1');
  });

  it.each([
    ['an unknown type', { type: 'objekt' }],
    ['a non-object properties', { type: 'object', properties: 5 }],
    ['a dangling $ref', { $ref: '#/definitions/missing' }],
    ['an unknown dialect', { $schema: 'http://json-schema.org/draft-03/schema#', type: 'object' }],
  ])('refuses a schema with %s with invalid_schema', (_label, input_schema) => {
    expect(registrationCode(() => createToolRegistry().register(definition({ input_schema })))).toBe(
      'invalid_schema',
    );
  });

  it('refuses a schema that is not a JSON object with invalid_schema', () => {
    const schema = [] as unknown as Record<string, unknown>;
    expect(registrationCode(() => createToolRegistry().register(definition({ input_schema: schema })))).toBe(
      'invalid_schema',
    );
  });

  it('refuses out-of-range metadata with invalid_metadata', () => {
    const metadata = { mutating: false, replay_safe: true, timeout_ms: -5 };
    expect(registrationCode(() => createToolRegistry().register(definition({ metadata })))).toBe(
      'invalid_metadata',
    );
  });

  it.each([
    ['an unknown handler kind', { kind: 'shell', command: 'rm' }],
    ['a non-http url', { kind: 'http', url: 'file:///etc/passwd' }],
    ['a relative url', { kind: 'http', url: '/tools/x' }],
    ['a blank Lambda function name', { kind: 'lambda', function_name: ' ' }],
    ['an MCP handler without client', { kind: 'mcp', client: {}, tool_name: 'x' }],
  ])('refuses %s with invalid_definition', (_label, handler) => {
    const def = definition({ handler: handler as unknown as ToolDefinition['handler'] });
    expect(registrationCode(() => createToolRegistry().register(def))).toBe('invalid_definition');
  });

  it('refuses a second tool with the same name with duplicate_name', () => {
    const registry = createToolRegistry();
    registry.register(definition());
    expect(registrationCode(() => registry.register(definition({ version: '2.0.0' })))).toBe(
      'duplicate_name',
    );
  });

  it('refuses registration after seal with registry_sealed and keeps serving the catalogue', () => {
    const registry = createToolRegistry();
    registry.register(definition());
    registry.seal();
    expect(registry.sealed).toBe(true);
    expect(registrationCode(() => registry.register(definition({ name: 'other' })))).toBe('registry_sealed');
    expect(registry.list().map((tool) => tool.name)).toEqual(['lookup']);
  });

  it('keeps the registered schema immutable and independent of the caller object', () => {
    const registry = createToolRegistry();
    const schema: Record<string, unknown> = { type: 'object', properties: { id: { type: 'integer' } } };
    const descriptor = registry.register(definition({ input_schema: schema }));
    schema.properties = { id: { type: 'string' } };
    expect(registry.get('lookup')?.validateArgs({ id: 3 })).toEqual({ ok: true });
    expect(Object.isFrozen(descriptor.input_schema)).toBe(true);
    expect(() => {
      (descriptor.input_schema as Record<string, unknown>).type = 'string';
    }).toThrow(TypeError);
  });

  it('reads a schema without $schema as draft-07 and one naming 2020-12 as 2020-12', () => {
    const registry = createToolRegistry();
    registry.register(
      definition({
        name: 'tuple07',
        input_schema: { type: 'object', properties: { p: { type: 'array', items: [{ type: 'string' }] } } },
      }),
    );
    registry.register(
      definition({
        name: 'tuple2020',
        input_schema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { p: { type: 'array', prefixItems: [{ type: 'string' }] } },
        },
      }),
    );
    expect(registry.get('tuple07')?.validateArgs({ p: [1] }).ok).toBe(false);
    expect(registry.get('tuple2020')?.validateArgs({ p: [1] }).ok).toBe(false);
    expect(registry.get('tuple2020')?.validateArgs({ p: ['a', 1] }).ok).toBe(true);
  });

  it('checks formats and reports schema wording without the offending value', () => {
    const registry = createToolRegistry();
    registry.register(
      definition({
        input_schema: { type: 'object', properties: { day: { type: 'string', format: 'date' } } },
      }),
    );
    const result = registry.get('lookup')?.validateArgs({ day: 'SECRET-NOT-A-DATE' });
    expect(result?.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain('SECRET-NOT-A-DATE');
    expect(result).toMatchObject({ errors: [{ path: '/day', keyword: 'format' }] });
  });

  it('lets two tools use the same schema $id', () => {
    const registry = createToolRegistry();
    const input_schema = { $id: 'https://example.com/args', type: 'object' };
    registry.register(definition({ name: 'a', input_schema }));
    expect(() => registry.register(definition({ name: 'b', input_schema }))).not.toThrow();
  });

  it('lists descriptors only: no handler, URL, header or function name reaches discovery', () => {
    const registry = createToolRegistry();
    registry.register(
      definition({
        name: 'remote',
        handler: {
          kind: 'http',
          url: 'https://internal.example/SECRET-PATH',
          headers: { authorization: 'Bearer SECRET-TOKEN' },
        },
      }),
    );
    registry.register(
      definition({ name: 'fn', handler: { kind: 'lambda', function_name: 'SECRET-FUNCTION' } }),
    );
    registry.register(definition({ name: 'local' }));

    const listed = registry.list();

    expect(listed.map((tool) => tool.name)).toEqual(['fn', 'local', 'remote']);
    for (const tool of listed) {
      expect(Object.keys(tool).sort()).toEqual([
        'description',
        'input_schema',
        'metadata',
        'name',
        'version',
      ]);
      expect(ToolDescriptor.safeParse(tool).success).toBe(true);
    }
    const text = JSON.stringify(listed);
    for (const secret of ['SECRET-PATH', 'SECRET-TOKEN', 'SECRET-FUNCTION', 'handler', 'module']) {
      expect(text).not.toContain(secret);
    }
  });
});
