/**
 * Principals: whom a run acts as, and the key that scopes what belongs to a principal.
 * Seed: agent-runs, "Subject, principal and admission".
 */
import type { Principal } from '../contracts/index.ts';

/** The key a principal's indexes (listings, create keys) are scoped by: `{kind}:{id}`. */
export function principalKeyOf(p: Principal): string {
  return `${p.kind}:${p.id}`;
}
