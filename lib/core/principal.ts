/**
 * Principals: whom a run acts as, and the key that scopes what belongs to a principal.
 * Seed: agent-runs, "Subject, principal and admission".
 */
import type { Principal } from '../contracts/index.ts';

/** The key a principal's indexes (listings, create keys) are scoped by: `{kind}:{id}`. */
export function principalKeyOf(p: Principal): string {
  return `${p.kind}:${p.id}`;
}

/** The principal a create acts as, or why the caller may not create it. */
export type PrincipalDecision =
  | { ok: true; principal: Principal }
  | { ok: false; code: 'unauthorized'; message: string };

/**
 * The principal a create acts as: the caller; with as_agent, the agent acting for the caller;
 * with on_behalf_of (system callers only), the user named. Seed: "Subject, principal and admission".
 */
export function principalFor(caller: Principal, asAgent?: string, onBehalfOf?: string): PrincipalDecision {
  if (onBehalfOf !== undefined && caller.kind !== 'system') {
    return { ok: false, code: 'unauthorized', message: 'on_behalf_of is for system callers only' };
  }
  const user = onBehalfOf ?? (caller.kind === 'user' ? caller.id : caller.on_behalf_of);
  if (asAgent !== undefined) {
    return {
      ok: true,
      principal: { kind: 'agent', id: asAgent, ...(user !== undefined ? { on_behalf_of: user } : {}) },
    };
  }
  if (onBehalfOf !== undefined) return { ok: true, principal: { kind: 'user', id: onBehalfOf } };
  return { ok: true, principal: caller };
}
