/**
 * The gate of agent runs: an agent's call is allowed only if both the agent and the user it
 * acts for are allowed it. The agent's own rights are its registered tool list (AgentEntry
 * `tools`, `*` for every tool) plus the policy as applied to the agent principal; the user's are
 * the policy as applied to that user (with the groups recorded at admission). A deny from either
 * side denies (the agent's first); otherwise an approval either side needs is required;
 * otherwise the call is allowed. An agent acting for nobody has the agent's rights alone: no
 * path ever falls back to system rights. Non-agent principals go to the policy unchanged.
 * docs/contracts/run-lifecycle.md, "Subject, principal and admission" ("the agent's rights narrowed
 * to what the user may do"); docs/contracts/tool-result.md, "Tool calls" ("never falls back to
 * system rights").
 */
import type { AgentEntry } from '../contracts/index.ts';
import type { PolicyDecision } from '../engine/ports.ts';
import type { GateFacts, PolicyGate } from './policy-gate.ts';

/** Deny codes of the agent half. */
export const AGENT_DENY_CODES = {
  agentNotRegistered: 'agent_not_registered',
  agentToolNotAllowed: 'agent_tool_not_allowed',
} as const;

/** The gate of `policy` narrowed, for agent principals, by the registered `agents` (by agent id). */
export function agentAwareGate(policy: PolicyGate, agents: ReadonlyMap<string, AgentEntry>): PolicyGate {
  return {
    decide(facts: GateFacts): PolicyDecision {
      const p = facts.principal;
      if (p.kind !== 'agent') return policy.decide(facts);
      const agent = agents.get(p.id);
      if (agent === undefined) return { decision: 'deny', code: AGENT_DENY_CODES.agentNotRegistered };
      if (facts.tool !== undefined && !agent.tools.includes('*') && !agent.tools.includes(facts.tool.name)) {
        return { decision: 'deny', code: AGENT_DENY_CODES.agentToolNotAllowed };
      }
      const decisions = [policy.decide({ ...facts, principal: { kind: 'agent', id: p.id } })];
      if (p.on_behalf_of !== undefined) {
        const user = { kind: 'user' as const, id: p.on_behalf_of, ...(p.groups ? { groups: p.groups } : {}) };
        decisions.push(policy.decide({ ...facts, principal: user }));
      }
      return (
        decisions.find((d) => d.decision === 'deny') ??
        decisions.find((d) => d.decision === 'require_approval') ??
        decisions[0] ?? { decision: 'deny', code: AGENT_DENY_CODES.agentNotRegistered }
      );
    },
  };
}
