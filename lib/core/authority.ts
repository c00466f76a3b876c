/**
 * Who may see and act on a run, decided in one place for every read and write. A run is
 * visible to its principal, the user it acts for, system callers, and whoever presents its
 * control capability; to anyone else it does not exist (the same answer as an unknown id).
 * A presented capability that does not match is refused, never ignored, but only to a caller
 * who may see the run: to anyone else the run still does not exist.
 * docs/contracts/run-lifecycle.md, "Controls" (authorization), "Subject, principal and admission";
 * docs/guides/who-may-do-what.md.
 */
import type { Principal, RunRecord } from '../contracts/index.ts';
import { sha256Hex } from './canonical.ts';

/**
 * A caller of the runtime: a principal, plus the capability secret it presented, if any, and
 * whether it has admin rights (it manages the registries; for runs it only widens the
 * workspaces it may create in, lib/core/workspaces.ts: it sees no one else's runs).
 */
export interface Caller {
  principal: Principal;
  capability?: string;
  admin?: boolean;
}

/** The stored form of a control capability secret: sha256 hex, never the secret itself. */
export function capabilityHash(secret: string): string {
  return sha256Hex(`agent-runs/capability/v1:${secret}`);
}

/** Why a caller reaches a run. */
export type AccessVia = 'principal' | 'acts_for' | 'system' | 'capability';

/**
 * Whether `caller` reaches `record`, and how; or the refusal a caller gets: `run_not_found`
 * (the run does not exist for this caller: the answer for an unknown id too) or
 * `capability_invalid` (a caller who may see the run presented a capability that does not match).
 */
export type Access =
  | { ok: true; via: AccessVia }
  | { ok: false; code: 'run_not_found' | 'capability_invalid' };

/** How `caller` reaches `record` without a capability, or null. */
function standingAccess(record: RunRecord, caller: Caller): AccessVia | null {
  const p = caller.principal;
  if (p.kind === 'system') return 'system';
  const owner = record.principal;
  if (p.kind === owner.kind && p.id === owner.id && (p.on_behalf_of ?? null) === (owner.on_behalf_of ?? null))
    return 'principal';
  if (p.kind === 'user' && owner.on_behalf_of !== undefined && owner.on_behalf_of === p.id) return 'acts_for';
  return null;
}

/** Decides `caller`'s access to `record` (null: no such run). Pure; never throws. */
export function accessOf(record: RunRecord | null, caller: Caller): Access {
  if (record === null) return { ok: false, code: 'run_not_found' };
  const standing = standingAccess(record, caller);
  if (caller.capability !== undefined) {
    const matches =
      record.capability_hash !== undefined && capabilityHash(caller.capability) === record.capability_hash;
    if (matches) return { ok: true, via: standing ?? 'capability' };
    return standing === null
      ? { ok: false, code: 'run_not_found' }
      : { ok: false, code: 'capability_invalid' };
  }
  return standing === null ? { ok: false, code: 'run_not_found' } : { ok: true, via: standing };
}

/** Whether `caller` may see `record` by who it is alone (no capability): for listings. */
export function mayList(record: RunRecord, caller: Caller): boolean {
  return standingAccess(record, caller) !== null;
}
