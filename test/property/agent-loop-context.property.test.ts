/**
 * The agent loop reads its context against the JSON Schema derived from the one zod description
 * (lib/reducers/agent-loop/context-schema.ts), never against rules of its own: what zod accepts
 * it reads exactly as zod parses it, without a diagnostic, and whatever it keeps from a bad
 * context is something zod accepts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AgentLoopConfig, readContext } from '../../lib/reducers/agent-loop/context.ts';
import { AgentLoopContext, type AgentLoopSettings } from '../../lib/reducers/index.ts';

/** Values of every JSON type, valid or not for any field (integers inside the safe range). */
const anyValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -3, max: 40 }),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  fc.constantFrom('', 'task', 'conversation', 'domain', 'function', 'partial', 'blocked', 'succeeded', 'x'),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.oneof(arb, anyValue);

const toolEntry = fc.record(
  {
    name: maybe(fc.constantFrom('lookup', 'update', 'pay')),
    kind: maybe(fc.constantFrom('function', 'domain')),
    schema: maybe(fc.constant({ type: 'object' })),
    mutating: anyValue,
    replay_safe: anyValue,
    description: maybe(fc.string({ maxLength: 8 })),
    function_path: maybe(fc.constantFrom('/lib/shop/pay', '')),
    timeout_ms: maybe(fc.integer({ min: 0, max: 10_000 })),
    interruptible: anyValue,
    ends_run: anyValue,
  },
  { requiredKeys: [] },
);
/** Contexts zod accepts (tool names unique). */
const validContext = fc.record(
  {
    mode: fc.constantFrom('conversation' as const, 'task' as const),
    loop_limit: fc.integer({ min: 2, max: 9 }),
    max_retries: fc.integer({ min: 0, max: 10 }),
    tools: fc.uniqueArray(
      fc.record(
        {
          name: fc.constantFrom('lookup', 'update', 'pay', 'handoff'),
          kind: fc.constantFrom('function' as const, 'domain' as const),
          schema: fc.constant({ type: 'object', properties: {} }),
          mutating: fc.boolean(),
          replay_safe: fc.boolean(),
          description: fc.string({ maxLength: 8 }),
          function_path: fc.constantFrom('/lib/shop/pay', '/lib/shop/lookup'),
          timeout_ms: fc.integer({ min: 1, max: 10_000 }),
          interruptible: fc.boolean(),
          ends_run: fc.constantFrom('succeeded' as const, 'partial' as const, 'blocked' as const),
        },
        { requiredKeys: ['name'] },
      ),
      { selector: (tool) => tool.name, maxLength: 4 },
    ),
    instructions: fc.string({ maxLength: 8 }),
    plan: fc.constantFrom('track' as const, 'approve' as const),
    no_progress_turns: fc.integer({ min: 1, max: 9 }),
    verify_completion: fc.constantFrom('partial' as const, 'ask_user' as const),
    verifier_tool: fc.constantFrom('lookup', 'pay'),
  },
  { requiredKeys: [] },
);

/** Any context: every field of any JSON type. */
const context = fc.record(
  {
    mode: anyValue,
    loop_limit: maybe(fc.integer({ min: 0, max: 6 })),
    max_retries: maybe(fc.integer({ min: -1, max: 14 })),
    tools: maybe(fc.array(maybe(toolEntry), { maxLength: 5 })),
    instructions: maybe(fc.string({ maxLength: 8 })),
    plan: maybe(fc.constantFrom('track', 'approve')),
    no_progress_turns: maybe(fc.integer({ min: -1, max: 4 })),
    verify_completion: maybe(fc.constantFrom('partial', 'ask_user')),
    verifier_tool: maybe(fc.constantFrom('lookup', '')),
  },
  { requiredKeys: [] },
);

function read(raw: unknown): { config: AgentLoopConfig; reported: string[] } {
  const reported: string[] = [];
  const config = readContext(raw, (code) => reported.push(code));
  return { config, reported };
}

/** zod's parse output as the state keeps it: replay_safe resolved, interruptible only when false. */
function asKept(settings: AgentLoopSettings) {
  const tools = (settings.tools ?? []).map((tool) => {
    const { interruptible, ...rest } = tool;
    return {
      ...rest,
      replay_safe: tool.replay_safe ?? !tool.mutating,
      ...(interruptible === false && { interruptible }),
    };
  });
  return { ...settings, tools };
}

describe('reading the agent loop context', () => {
  it('reads a context zod accepts exactly as zod parses it, without a diagnostic', () => {
    fc.assert(
      fc.property(validContext, (raw) => {
        const parsed = AgentLoopContext.parse(raw);
        const { config, reported } = read(raw);
        expect(reported).toEqual([]);
        expect(config).toEqual(asKept(parsed));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps from any context only what zod accepts, and reports each setting it replaced', () => {
    fc.assert(
      fc.property(context, (raw) => {
        const { config, reported } = read(raw);
        expect(AgentLoopContext.safeParse(config).success).toBe(true);
        // A present setting with a default that zod rejects is reported, except a max_retries
        // integer above 10, which counts as 10.
        const replaced = (['mode', 'loop_limit', 'max_retries'] as const).filter((key) => {
          const value = raw[key];
          if (value === undefined || AgentLoopContext.shape[key].safeParse(value).success) return false;
          return !(key === 'max_retries' && Number.isInteger(value) && (value as number) > 10);
        });
        expect(reported.filter((code) => code === 'context_invalid')).toHaveLength(replaced.length);
      }),
      { numRuns: 3000 },
    );
  });

  it('reads a context that is not an object as {}, with one context_invalid', () => {
    fc.assert(
      fc.property(anyValue, (raw) => {
        fc.pre(raw === null || typeof raw !== 'object' || Array.isArray(raw));
        const { config, reported } = read(raw);
        expect(config).toEqual(asKept(AgentLoopContext.parse({})));
        expect(reported).toEqual(raw === null ? [] : ['context_invalid']);
      }),
      { numRuns: 500 },
    );
  });
});
