/**
 * What the published tool policy does with a call of each tool, for `agent-runs tools`: the
 * rules are applied in the policy gate's order (lib/tools/policy-gate.ts createPolicyGate: deny,
 * then transform_to_safer_action, then require_approval or allow, then the default effect).
 * Only the conditions a tool fixes (its name, its risk) are decided here; a rule that also names
 * callers (principal kinds or ids, groups, environments, mutating) is counted as "for some
 * callers", since whether it matches depends on who calls and how.
 */
import type { PolicyRule, ToolDescriptor } from '../../lib/contracts/index.ts';

/** The part of a policy document this reads (lib/contracts/registry.ts PolicyDocument). */
export interface PolicyView {
  rules: readonly PolicyRule[];
  default_effect?: 'allow' | 'deny';
}

const CALLER_CONDITIONS = ['principal_kinds', 'principal_ids', 'groups', 'environments', 'mutating'] as const;

function forTool(rule: PolicyRule, tool: ToolDescriptor): boolean {
  return (
    (rule.tools === undefined || rule.tools.includes(tool.name)) &&
    (rule.risk === undefined || rule.risk.includes(tool.metadata.risk))
  );
}

const forEveryCaller = (rule: PolicyRule): boolean => CALLER_CONDITIONS.every((k) => rule[k] === undefined);

/**
 * The policy's effect on a call of `tool` in words: `deny`, `safer call: NAME`, `approval
 * required`, `allow` (`allow (default)` when no rule matched and the default effect applies,
 * `deny (default)` likewise), then `; other rules for some callers` when a rule that names
 * callers could decide a call otherwise.
 */
export function policyEffect(tool: ToolDescriptor, policy: PolicyView): string {
  const rules = policy.rules.filter((r) => forTool(r, tool));
  const every = rules.filter(forEveryCaller);
  const has = (effect: PolicyRule['effect']) => every.some((r) => r.effect === effect);
  const safer = every.find((r) => r.effect === 'transform_to_safer_action');
  const base = has('deny')
    ? 'deny'
    : safer?.safer !== undefined
      ? `safer call: ${safer.safer.tool}`
      : has('require_approval')
        ? 'approval required'
        : has('allow')
          ? 'allow'
          : `${policy.default_effect ?? 'allow'} (default)`;
  const some = rules.filter((r) => !forEveryCaller(r));
  return some.length === 0 ? base : `${base}; ${some.length} rule(s) for some callers`;
}
