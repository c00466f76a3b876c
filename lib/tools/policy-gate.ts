/**
 * The policy gate: decides allow | deny{code} | require_approval{digest, summary, tool_version}
 * before any handler runs, from stable facts only (principal kind and id, tool name, version,
 * risk, mutating, approval policy). Args never influence the decision; they only enter the
 * approval digest. Seed: tool-invocation-contract, "Policy and authorization";
 * deterministic-seams, "The policy gate"; agent-run-contracts, "Writing a deterministic reducer"
 * (digests over canonical JSON).
 */
import { z } from 'zod';
import { Principal, type ToolDescriptor, ToolRisk } from '../contracts/index.ts';
import type { PolicyDecision } from '../engine/ports.ts';
import { sha256OfCanonical } from './digest.ts';
import { isPlainObject } from './json.ts';

/** Stable deny codes produced by the gate itself (rules may bring their own). */
export const GATE_DENY_CODES = {
  toolNotRegistered: 'tool_not_registered',
  deniedByPolicy: 'tool_denied_by_policy',
  principalInvalid: 'principal_invalid',
  argsNotJson: 'args_not_json',
} as const;

/**
 * One policy rule. It matches when every condition given holds (an absent condition matches
 * anything). Deny rules are checked first and the first match wins; then a require_approval
 * rule or the tool's approval policy asks for approval.
 */
export const PolicyRule = z.object({
  effect: z.enum(['deny', 'require_approval']),
  /** Stable deny code; default tool_denied_by_policy. */
  code: z
    .string()
    .regex(/^[a-z0-9_.:-]{1,64}$/)
    .optional(),
  tools: z.array(z.string()).optional(),
  risk: z.array(ToolRisk).optional(),
  principal_kinds: z.array(Principal.shape.kind).optional(),
  principal_ids: z.array(z.string()).optional(),
  mutating: z.boolean().optional(),
});
export type PolicyRule = z.input<typeof PolicyRule>;

/** What the gate sees of one call. */
export interface GateFacts {
  principal: Principal;
  /** The tool name the call asked for. */
  tool_name: string;
  /** The registered tool, or undefined when none has that name. */
  tool: ToolDescriptor | undefined;
  /** The call is mutating if the effect or the tool's metadata says so. */
  mutating: boolean;
  /** The call's args (only for the approval digest; `__raisin_context` is left out). */
  args: Record<string, unknown>;
}

export interface PolicyGate {
  /** Pure: same facts, same decision. Never throws. */
  decide(facts: GateFacts): PolicyDecision;
}

/**
 * sha256 hex of the canonical JSON (RFC 8785) of `{tool, version, args}` where args lack
 * `__raisin_context`: independent of key order. Throws TypeError when args hold a value JSON
 * cannot represent.
 */
export function approvalDigest(tool: string, version: string, args: Record<string, unknown>): string {
  const { __raisin_context: _context, ...plainArgs } = args;
  return sha256OfCanonical({ tool, version, args: plainArgs });
}

/**
 * Builds a gate from rules (checked with zod; throws ZodError for a malformed rule). Order:
 * invalid principal → deny principal_invalid; unknown tool → deny tool_not_registered; first
 * matching deny rule → deny; approval policy `always`, `when_mutating` on a mutating call, or a
 * matching require_approval rule → require_approval; otherwise allow.
 */
export function createPolicyGate(rules: readonly PolicyRule[] = []): PolicyGate {
  const parsed = rules.map((rule) => PolicyRule.parse(rule));
  const matches = (rule: (typeof parsed)[number], facts: GateFacts, tool: ToolDescriptor): boolean =>
    (rule.tools === undefined || rule.tools.includes(tool.name)) &&
    (rule.risk === undefined || rule.risk.includes(tool.metadata.risk)) &&
    (rule.principal_kinds === undefined || rule.principal_kinds.includes(facts.principal.kind)) &&
    (rule.principal_ids === undefined || rule.principal_ids.includes(facts.principal.id)) &&
    (rule.mutating === undefined || rule.mutating === facts.mutating);

  return {
    decide(facts) {
      if (!Principal.safeParse(facts.principal).success) {
        return { decision: 'deny', code: GATE_DENY_CODES.principalInvalid };
      }
      const { tool } = facts;
      if (tool === undefined) return { decision: 'deny', code: GATE_DENY_CODES.toolNotRegistered };
      const deny = parsed.find((rule) => rule.effect === 'deny' && matches(rule, facts, tool));
      if (deny !== undefined) return { decision: 'deny', code: deny.code ?? GATE_DENY_CODES.deniedByPolicy };
      const { approval } = tool.metadata;
      const needsApproval =
        approval === 'always' ||
        (approval === 'when_mutating' && facts.mutating) ||
        parsed.some((rule) => rule.effect === 'require_approval' && matches(rule, facts, tool));
      if (!needsApproval) return { decision: 'allow' };
      let digest: string;
      try {
        digest = approvalDigest(tool.name, tool.version, isPlainObject(facts.args) ? facts.args : {});
      } catch {
        return { decision: 'deny', code: GATE_DENY_CODES.argsNotJson };
      }
      const traits = [facts.mutating ? 'mutating' : 'read-only', `risk ${tool.metadata.risk}`].join(', ');
      return {
        decision: 'require_approval',
        digest,
        summary: `Call ${tool.name} ${tool.version} (${traits})`,
        tool_version: tool.version,
      };
    },
  };
}
