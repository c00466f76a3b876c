/**
 * The policy gate: decides allow | deny{code, safer?} | require_approval{digest, summary,
 * tool_version} before any handler runs, from stable facts only (principal kind, id and groups,
 * tool name, version, risk, mutating, approval policy, the deployment's environment), with the
 * reason code of the rule that decided. The policy as data (lib/contracts/registry.ts
 * PolicyDocument) and the in-code rules (the default rule set) build the same gate. Args never influence the decision; they only enter the
 * approval digest. docs/contracts/tool-result.md, "Policy and authorization";
 * docs/architecture.md, "The seams of a step" (the policy gate); docs/contracts/reducer.md,
 * "Writing a deterministic reducer" (digests over canonical JSON).
 */
import {
  type PolicyRule as PolicyRuleInput,
  PolicyRule as PolicyRuleSchema,
  Principal,
  type RunScope,
  type Subject,
  type ToolDescriptor,
} from '../contracts/index.ts';
import { scopeDenial } from '../core/scope.ts';
import type { PolicyDecision } from '../engine/ports.ts';
import { sha256OfCanonical } from './digest.ts';
import { isPlainObject } from './json.ts';

/** Stable deny codes produced by the gate itself (rules may bring their own). */
export const GATE_DENY_CODES = {
  toolNotRegistered: 'tool_not_registered',
  deniedByPolicy: 'tool_denied_by_policy',
  notAllowedByPolicy: 'tool_not_allowed_by_policy',
  saferActionRequired: 'safer_action_required',
  principalInvalid: 'principal_invalid',
  argsNotJson: 'args_not_json',
} as const;

/**
 * One policy rule (lib/contracts/registry.ts): it matches when every condition given holds (an
 * absent condition matches anything); see createPolicyGate for the order rules are applied in.
 */
export const PolicyRule = PolicyRuleSchema;
export type PolicyRule = PolicyRuleInput;

/** What applies when no rule matches, and the deployment's environment rules may match on. */
export interface PolicyOptions {
  /** Default allow. */
  default_effect?: 'allow' | 'deny';
  /** The deployment's environment name (AGENT_RUNS_ENVIRONMENT); rules with `environments` match it. */
  environment?: string;
}

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
  /** What the calling run may call and write (a narrowed child run, lib/core/scope.ts). */
  scope?: RunScope;
  /** The calling run's subject: what its mutating calls write. */
  subject?: Subject;
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
 * Builds a gate from rules (checked with zod; throws ZodError for a malformed rule). The order
 * is stable and independent of args: invalid principal → deny principal_invalid; a tool outside
 * the calling run's scope → deny tool_outside_delegation_scope; unknown tool → deny
 * tool_not_registered; a mutating call of a run whose subject its scope does not let it write →
 * deny subject_not_writable; the first matching deny rule → deny with its code (default
 * tool_denied_by_policy); the first matching transform_to_safer_action rule → deny with its code
 * (default safer_action_required) and the safer call; then the call is allowed if a
 * require_approval or allow rule matches or the default effect is allow (otherwise deny
 * tool_not_allowed_by_policy); an allowed call needs approval when the tool's approval policy
 * says `always`, `when_mutating` on a mutating call, or a require_approval rule matched. A
 * decision made by a rule carries the rule's code as its `reason`. Rules match on the
 * principal's kind and id, the groups of the user (`principal.groups`), tool name, risk,
 * mutating and the deployment's environment.
 */
export function createPolicyGate(rules: readonly PolicyRule[] = [], options: PolicyOptions = {}): PolicyGate {
  const parsed = rules.map((rule) => PolicyRuleSchema.parse(rule));
  const defaultEffect = options.default_effect ?? 'allow';
  type Rule = (typeof parsed)[number];
  const matches = (rule: Rule, facts: GateFacts, tool: ToolDescriptor): boolean =>
    (rule.tools === undefined || rule.tools.includes(tool.name)) &&
    (rule.risk === undefined || rule.risk.includes(tool.metadata.risk)) &&
    (rule.principal_kinds === undefined || rule.principal_kinds.includes(facts.principal.kind)) &&
    (rule.principal_ids === undefined || rule.principal_ids.includes(facts.principal.id)) &&
    (rule.groups === undefined || (facts.principal.groups ?? []).some((g) => rule.groups?.includes(g))) &&
    (rule.environments === undefined ||
      (options.environment !== undefined && rule.environments.includes(options.environment))) &&
    (rule.mutating === undefined || rule.mutating === facts.mutating);
  const first = (effect: Rule['effect'], facts: GateFacts, tool: ToolDescriptor) =>
    parsed.find((rule) => rule.effect === effect && matches(rule, facts, tool));

  return {
    decide(facts) {
      if (!Principal.safeParse(facts.principal).success) {
        return { decision: 'deny', code: GATE_DENY_CODES.principalInvalid };
      }
      // A narrowed run's scope before anything else: outside it, whether the tool exists is not told.
      const outside = scopeDenial(facts.scope, facts.tool_name, false, facts.subject);
      if (outside !== null) return { decision: 'deny', code: outside };
      const { tool } = facts;
      if (tool === undefined) return { decision: 'deny', code: GATE_DENY_CODES.toolNotRegistered };
      const unwritable = scopeDenial(facts.scope, facts.tool_name, facts.mutating, facts.subject);
      if (unwritable !== null) return { decision: 'deny', code: unwritable };
      const deny = first('deny', facts, tool);
      if (deny !== undefined) return { decision: 'deny', code: deny.code ?? GATE_DENY_CODES.deniedByPolicy };
      const transform = first('transform_to_safer_action', facts, tool);
      if (transform?.safer !== undefined) {
        return {
          decision: 'deny',
          code: transform.code ?? GATE_DENY_CODES.saferActionRequired,
          safer: transform.safer,
        };
      }
      const approvalRule = first('require_approval', facts, tool);
      const allowRule = first('allow', facts, tool);
      if (approvalRule === undefined && allowRule === undefined && defaultEffect === 'deny') {
        return { decision: 'deny', code: GATE_DENY_CODES.notAllowedByPolicy };
      }
      const { approval } = tool.metadata;
      const needsApproval =
        approval === 'always' ||
        (approval === 'when_mutating' && facts.mutating) ||
        approvalRule !== undefined;
      const reason = (approvalRule ?? allowRule)?.code;
      if (!needsApproval) return reason === undefined ? { decision: 'allow' } : { decision: 'allow', reason };
      let digest: string;
      try {
        digest = approvalDigest(tool.name, tool.version, isPlainObject(facts.args) ? facts.args : {});
      } catch {
        return { decision: 'deny', code: GATE_DENY_CODES.argsNotJson };
      }
      // Why a person is asked, in the summary the approval shows: the rule's code when a rule did.
      const why = approvalRule?.code !== undefined ? `; policy rule ${approvalRule.code}` : '';
      const traits =
        [facts.mutating ? 'mutating' : 'read-only', `risk ${tool.metadata.risk}`].join(', ') + why;
      return {
        decision: 'require_approval',
        digest,
        summary: `Call ${tool.name} ${tool.version} (${traits})`,
        tool_version: tool.version,
        ...(approvalRule?.code !== undefined ? { reason: approvalRule.code } : {}),
      };
    },
  };
}
