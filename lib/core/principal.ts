/**
 * Principals: whom a run acts as, and the key that scopes what belongs to a principal.
 * docs/contracts/run-lifecycle.md, "Subject, principal and admission".
 */
import type { Principal } from '../contracts/index.ts';

/**
 * The key a principal's indexes (listings, create keys, quotas) are scoped by: `{kind}:{id}`, and
 * `{kind}:{id}>{user}` for an agent acting for a user, so that an agent's create keys are never
 * shared across the users it acts for.
 */
export function principalKeyOf(p: Principal): string {
  return p.on_behalf_of === undefined ? `${p.kind}:${p.id}` : `${p.kind}:${p.id}>${p.on_behalf_of}`;
}

/**
 * The key a principal's admission quotas are counted under: the user an agent acts for, else the
 * principal itself. Every agent acting for alice counts against alice's quota, so naming a new
 * agent never buys a fresh quota.
 */
export function quotaKeyOf(p: Principal): string {
  return p.on_behalf_of === undefined ? principalKeyOf(p) : `user:${p.on_behalf_of}`;
}

/**
 * The key namespace of the create keys the runtime claims for itself (a delegation's child):
 * no client principal key can take this form, so a client create can never claim one.
 */
export function runtimeKeyOf(p: Principal): string {
  return `runtime/delegation:${principalKeyOf(p)}`;
}

/** The principal a create acts as, or why the caller may not create it. */
export type PrincipalDecision =
  | { ok: true; principal: Principal }
  | { ok: false; code: 'unauthorized'; message: string };

/**
 * The principal a create acts as: the caller; with as_agent, the agent acting for the caller;
 * with on_behalf_of (system callers only), the user named. An agent acting for the caller carries
 * the caller's groups (what policy rules and the agent's `acts_for` match on).
 * docs/contracts/run-lifecycle.md, "Subject, principal and admission".
 */
export function principalFor(caller: Principal, asAgent?: string, onBehalfOf?: string): PrincipalDecision {
  if (onBehalfOf !== undefined && caller.kind !== 'system') {
    return { ok: false, code: 'unauthorized', message: 'on_behalf_of is for system callers only' };
  }
  const user = onBehalfOf ?? (caller.kind === 'user' ? caller.id : caller.on_behalf_of);
  // The groups of the user acted for, when the caller is that user (its verified token named them).
  const groups = onBehalfOf === undefined && caller.groups !== undefined ? { groups: caller.groups } : {};
  if (asAgent !== undefined) {
    return {
      ok: true,
      principal: {
        kind: 'agent',
        id: asAgent,
        ...(user !== undefined ? { on_behalf_of: user } : {}),
        ...groups,
      },
    };
  }
  if (onBehalfOf !== undefined) return { ok: true, principal: { kind: 'user', id: onBehalfOf } };
  return { ok: true, principal: caller };
}
