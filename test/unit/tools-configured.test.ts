/** Tools registered from AGENT_RUNS_TOOLS (lib/tools/configured.ts): parsing, and registration through the registry's own checks. */
import { describe, expect, it } from 'vitest';
import { TOOLS_ENV, ToolConfigError, toolsFromEnv } from '../../lib/tools/configured.ts';
import { ToolRegistrationError } from '../../lib/tools/errors.ts';
import { createToolRegistry } from '../../lib/tools/registry.ts';

const lookup = {
  name: 'lookup_order',
  version: '1.2.0',
  description: 'Looks an order up.',
  input_schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  metadata: { mutating: false, replay_safe: true },
  target: { kind: 'http', url: 'https://tools.internal.test/lookup' },
};
const refund = {
  name: 'refund',
  version: '1.0.0',
  input_schema: { type: 'object' },
  metadata: { mutating: true, replay_safe: true, risk: 'high', approval: 'always' },
  target: { kind: 'lambda', function_name: 'arn:aws:lambda:us-east-1:123456789012:function:refund' },
};

describe('tools from AGENT_RUNS_TOOLS', () => {
  it('registers HTTP and Lambda tools with their metadata, and lists descriptors without targets', () => {
    const register = toolsFromEnv({ [TOOLS_ENV]: JSON.stringify([lookup, refund]) });
    const registry = createToolRegistry();
    register?.(registry);
    expect(registry.get('lookup_order')?.handler).toEqual({ kind: 'http', url: lookup.target.url });
    expect(registry.get('refund')?.handler).toEqual({
      kind: 'lambda',
      function_name: refund.target.function_name,
    });
    const listed = registry.list();
    expect(listed.map((t) => t.name)).toEqual(['lookup_order', 'refund']);
    expect(listed[1]?.metadata).toMatchObject({ risk: 'high', approval: 'always', mutating: true });
    expect(JSON.stringify(listed)).not.toContain('tools.internal.test');
  });

  it('registers nothing when the variable is unset or blank', () => {
    expect(toolsFromEnv({})).toBeUndefined();
    expect(toolsFromEnv({ [TOOLS_ENV]: '  ' })).toBeUndefined();
  });

  it.each([
    ['not json', ''],
    [JSON.stringify([{ ...lookup, target: { kind: 'ftp', url: 'ftp://x' } }]), '0.target.kind'],
    [JSON.stringify([{ ...lookup, target: { kind: 'http', url: 'file:///etc/passwd' } }]), '0.target.url'],
    [JSON.stringify([{ ...lookup, secret: 'x' }]), '0'],
  ])('refuses %s naming the field %j', (text, path) => {
    let thrown: unknown;
    try {
      toolsFromEnv({ [TOOLS_ENV]: text });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ToolConfigError);
    expect(thrown).toMatchObject({ code: 'tool_config_invalid', path });
  });

  it('leaves name and version checks to the registry', () => {
    const register = toolsFromEnv({ [TOOLS_ENV]: JSON.stringify([{ ...lookup, version: 'v1' }]) });
    expect(() => register?.(createToolRegistry())).toThrow(ToolRegistrationError);
  });
});
