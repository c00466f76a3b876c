/**
 * Admission's registry part: the registry versions a new run pins (the current tool
 * catalogue, policy and agents), and the check that an `as_agent` run may exist at all: the
 * agent is registered, and may act for the user (its `acts_for` names the user's id or one of
 * the user's groups, as the verified token named them). An agent acting for nobody is only for
 * system callers. Refused: EngineError agent_not_allowed (403), before anything is written or
 * any model is called; the same answer (message and details) whether the agent is not
 * registered or may not act for the user, except to a system caller (who may read the registry).
 * docs/architecture.md, "The seams of a step" (the policy and tool-catalogue versions are chosen at
 * admission); docs/contracts/run-lifecycle.md, "Subject, principal and admission".
 */
import { AgentEntry, type Principal, type RunPins } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';

/**
 * A document version no publication ever has (agents and workspace grants are versioned 1, 2,
 * ...): what a refusal reads for a name the registry does not hold, so that a name it holds and
 * one it does not cost the same reads.
 */
export const UNPUBLISHED_VERSION = '0';

/** Whether `agent` may act for the user `principal` names (id or groups). */
function mayActFor(agent: AgentEntry, principal: Principal): boolean {
  const user = principal.on_behalf_of;
  if (user === undefined) return false;
  if (agent.acts_for.users.includes(user)) return true;
  return (principal.groups ?? []).some((g) => agent.acts_for.groups.includes(g));
}

/**
 * The pins of a run `caller` creates as `principal`. With `asAgent` (the request chose the
 * agent), throws EngineError agent_not_allowed when the agent is not registered or may not act
 * for this user. A caller authenticated as an agent is who it is; its tool calls still have only
 * the rights its registration gives (none when it is not registered: the agent gate).
 */
export async function admitRegistries(
  deps: EngineDeps,
  principal: Principal,
  caller: Caller,
  asAgent: boolean,
): Promise<RunPins> {
  const reg = deps.registries;
  const [catalogue, policy, agents] = await Promise.all([
    reg.head('tools'),
    reg.head('policy'),
    reg.head('agents'),
  ]);
  if (asAgent && principal.kind === 'agent') {
    // Only a caller who may read the agents registry (a system caller) learns why: anyone else
    // gets one answer for an agent that is not registered and one that may not act for it.
    const seesRegistry = caller.principal.kind === 'system';
    const refuse = (why: string) =>
      new EngineError(
        'agent_not_allowed',
        `as_agent ${principal.id}: ${seesRegistry ? why : 'not registered, or may not act for this user'}`,
        { as_agent: principal.id },
      );
    const version = (await reg.snapshot('agents', agents))?.entries[principal.id];
    // An unregistered agent is read too (a version never published): both answers cost the
    // same registry reads, so neither the reads nor their time tell them apart.
    const entry = await reg.entry('agents', principal.id, version ?? UNPUBLISHED_VERSION);
    const agent = entry === null ? null : AgentEntry.safeParse(entry.body);
    if (agent === null || !agent.success) throw refuse('the agent is not registered');
    const forNobody = principal.on_behalf_of === undefined && caller.principal.kind === 'system';
    if (!forNobody && !mayActFor(agent.data, principal)) throw refuse('the agent may not act for this user');
  }
  return { catalogue, policy, agents };
}
