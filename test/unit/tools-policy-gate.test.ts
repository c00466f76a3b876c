import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Principal, ToolDescriptor } from '../../lib/contracts/index.ts';
import {
  approvalDigest,
  createPolicyGate,
  createToolRegistry,
  type GateFacts,
  type ToolMetadataInput,
} from '../../lib/tools/index.ts';

const user: Principal = { kind: 'user', id: 'u-1' };
const agent: Principal = { kind: 'agent', id: 'a-1', on_behalf_of: 'u-1' };

function descriptor(name: string, metadata: Partial<ToolMetadataInput> = {}): ToolDescriptor {
  return createToolRegistry().register({
    name,
    version: '1.2.0',
    input_schema: { type: 'object' },
    handler: { kind: 'module', fn: async () => null },
    metadata: { mutating: false, replay_safe: true, ...metadata },
  });
}

function facts(tool: ToolDescriptor | undefined, overrides: Partial<GateFacts> = {}): GateFacts {
  return {
    principal: user,
    tool_name: tool?.name ?? 'missing',
    tool,
    mutating: false,
    args: { id: 1 },
    ...overrides,
  };
}

describe('policy gate', () => {
  it('allows a registered tool whose approval policy is never', () => {
    expect(createPolicyGate().decide(facts(descriptor('read')))).toEqual({ decision: 'allow' });
  });

  it('denies an unregistered tool with tool_not_registered', () => {
    expect(createPolicyGate().decide(facts(undefined))).toEqual({
      decision: 'deny',
      code: 'tool_not_registered',
    });
  });

  it('denies a call whose principal is malformed with principal_invalid', () => {
    const principal = { kind: 'root', id: '' } as unknown as Principal;
    expect(createPolicyGate().decide(facts(descriptor('read'), { principal }))).toEqual({
      decision: 'deny',
      code: 'principal_invalid',
    });
  });

  it('requires approval for approval always, binding the digest of tool, version and args', () => {
    const tool = descriptor('pay', { approval: 'always', risk: 'high', mutating: true });
    const decision = createPolicyGate().decide(facts(tool, { mutating: true, args: { amount: 5 } }));
    expect(decision).toEqual({
      decision: 'require_approval',
      digest: approvalDigest('pay', '1.2.0', { amount: 5 }),
      summary: 'Call pay 1.2.0 (mutating, risk high)',
      tool_version: '1.2.0',
    });
  });

  it('requires approval for when_mutating only when the call is mutating', () => {
    const gate = createPolicyGate();
    const tool = descriptor('edit', { approval: 'when_mutating' });
    expect(gate.decide(facts(tool, { mutating: false })).decision).toBe('allow');
    expect(gate.decide(facts(tool, { mutating: true })).decision).toBe('require_approval');
  });

  it('denies by tool name with tool_denied_by_policy or the rule code', () => {
    const gate = createPolicyGate([
      { effect: 'deny', tools: ['drop_table'] },
      { effect: 'deny', tools: ['wire_money'], code: 'payments_frozen' },
    ]);
    expect(gate.decide(facts(descriptor('drop_table')))).toEqual({
      decision: 'deny',
      code: 'tool_denied_by_policy',
    });
    expect(gate.decide(facts(descriptor('wire_money')))).toEqual({
      decision: 'deny',
      code: 'payments_frozen',
    });
    expect(gate.decide(facts(descriptor('read'))).decision).toBe('allow');
  });

  it('denies high-risk tools to agent principals but not to users', () => {
    const gate = createPolicyGate([{ effect: 'deny', risk: ['high'], principal_kinds: ['agent'] }]);
    const risky = descriptor('deploy', { risk: 'high' });
    expect(gate.decide(facts(risky, { principal: agent })).decision).toBe('deny');
    expect(gate.decide(facts(risky, { principal: user })).decision).toBe('allow');
    expect(gate.decide(facts(descriptor('read', { risk: 'medium' }), { principal: agent })).decision).toBe(
      'allow',
    );
  });

  it('lets a deny rule win over an approval policy', () => {
    const gate = createPolicyGate([{ effect: 'deny', tools: ['pay'] }]);
    expect(gate.decide(facts(descriptor('pay', { approval: 'always' }))).decision).toBe('deny');
  });

  it('requires approval from a require_approval rule', () => {
    const gate = createPolicyGate([
      { effect: 'require_approval', principal_kinds: ['agent'], mutating: true },
    ]);
    const tool = descriptor('edit');
    expect(gate.decide(facts(tool, { principal: agent, mutating: true })).decision).toBe('require_approval');
    expect(gate.decide(facts(tool, { principal: agent, mutating: false })).decision).toBe('allow');
  });

  it('refuses a malformed rule when the gate is built', () => {
    expect(() => createPolicyGate([{ effect: 'maybe' } as never])).toThrow();
  });

  it('never lets args change the decision, only the digest', () => {
    const gate = createPolicyGate([{ effect: 'deny', risk: ['high'] }]);
    const tools = [
      descriptor('a'),
      descriptor('b', { approval: 'always' }),
      descriptor('c', { risk: 'high' }),
    ];
    fc.assert(
      fc.property(fc.constantFrom(...tools), fc.dictionary(fc.string(), fc.jsonValue()), (tool, args) => {
        expect(gate.decide(facts(tool, { args })).decision).toBe(
          gate.decide(facts(tool, { args: {} })).decision,
        );
      }),
    );
  });
});

describe('policy gate: rules as data', () => {
  it('allows under a default deny only what an allow or require_approval rule matches, with its reason', () => {
    const gate = createPolicyGate(
      [
        { effect: 'allow', tools: ['read'], code: 'reads_ok' },
        { effect: 'require_approval', tools: ['pay'], code: 'pay_review' },
      ],
      { default_effect: 'deny' },
    );
    expect(gate.decide(facts(descriptor('read')))).toEqual({ decision: 'allow', reason: 'reads_ok' });
    expect(gate.decide(facts(descriptor('pay')))).toMatchObject({
      decision: 'require_approval',
      reason: 'pay_review',
      // The approval a person sees says which rule asked for it.
      summary: expect.stringContaining('policy rule pay_review'),
    });
    expect(gate.decide(facts(descriptor('other')))).toEqual({
      decision: 'deny',
      code: 'tool_not_allowed_by_policy',
    });
  });

  it('matches the user groups of the principal and the deployment environment', () => {
    const rules = [
      { effect: 'deny' as const, groups: ['contractors'], code: 'no_contractors' },
      {
        effect: 'deny' as const,
        environments: ['prod'],
        risk: ['high' as const],
        code: 'no_high_risk_in_prod',
      },
    ];
    const prod = createPolicyGate(rules, { environment: 'prod' });
    const dev = createPolicyGate(rules, { environment: 'dev' });
    const contractor: Principal = { kind: 'user', id: 'c-1', groups: ['contractors'] };
    expect(prod.decide(facts(descriptor('read'), { principal: contractor }))).toEqual({
      decision: 'deny',
      code: 'no_contractors',
    });
    expect(prod.decide(facts(descriptor('read'))).decision).toBe('allow');
    const risky = descriptor('deploy', { risk: 'high' });
    expect(prod.decide(facts(risky))).toEqual({ decision: 'deny', code: 'no_high_risk_in_prod' });
    expect(dev.decide(facts(risky)).decision).toBe('allow');
  });

  it('answers transform_to_safer_action with the safer call, after deny rules and before approvals', () => {
    const gate = createPolicyGate([
      { effect: 'require_approval', tools: ['delete'] },
      {
        effect: 'transform_to_safer_action',
        tools: ['delete'],
        safer: { tool: 'archive', args: { keep: true } },
      },
      { effect: 'deny', tools: ['delete'], principal_kinds: ['agent'] },
    ]);
    expect(gate.decide(facts(descriptor('delete')))).toEqual({
      decision: 'deny',
      code: 'safer_action_required',
      safer: { tool: 'archive', args: { keep: true } },
    });
    expect(gate.decide(facts(descriptor('delete'), { principal: agent }))).toEqual({
      decision: 'deny',
      code: 'tool_denied_by_policy',
    });
  });
});

describe('approval digest', () => {
  it('is the sha256 hex of the canonical JSON of {tool, version, args}', () => {
    const expected = createHash('sha256')
      .update('{"args":{"a":1,"b":[true,null]},"tool":"t","version":"1.0.0"}')
      .digest('hex');
    expect(approvalDigest('t', '1.0.0', { b: [true, null], a: 1 })).toBe(expected);
  });

  it('does not depend on key order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (args) => {
        const reversed = Object.fromEntries(Object.entries(args).reverse());
        expect(approvalDigest('t', '1.0.0', reversed)).toBe(approvalDigest('t', '1.0.0', args));
      }),
    );
  });

  it('leaves __raisin_context out and binds tool, version and args', () => {
    const base = approvalDigest('t', '1.0.0', { a: 1 });
    expect(approvalDigest('t', '1.0.0', { a: 1, __raisin_context: { run_id: 'r', operation_id: 'o' } })).toBe(
      base,
    );
    expect(approvalDigest('t', '1.0.1', { a: 1 })).not.toBe(base);
    expect(approvalDigest('u', '1.0.0', { a: 1 })).not.toBe(base);
    expect(approvalDigest('t', '1.0.0', { a: 2 })).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });
});
