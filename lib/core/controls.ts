/**
 * Control rules that need no record transition: the command digest used for idempotency and
 * who may send a control. Seed: agent-runs, "Controls" (acknowledgements, authorization).
 */
import type { Control, Principal, RunRecord } from '../contracts/index.ts';
import { digestOf, sha256Hex } from './canonical.ts';

/**
 * The digest of a control's command (everything but control_id), over canonical JSON.
 * Same control_id + same digest → duplicate; same id + another digest → control_id_reused.
 */
export function controlDigest(control: Control): string {
  const { control_id: _id, ...command } = control;
  return digestOf(command);
}

/** A caller of the control API: a principal, plus the capability secret it presented, if any. */
export interface Caller {
  principal: Principal;
  capability?: string;
}

/** The stored form of a control capability secret: sha256 hex, never the secret itself. */
export function capabilityHash(secret: string): string {
  return sha256Hex(`agent-runs/capability/v1:${secret}`);
}

/**
 * Whether `caller` may control `record`: the run's principal, the user the run acts for, a
 * system caller, or anyone presenting the run's control capability. Everything else is
 * unauthorized. Seed: "Controls", last paragraph.
 */
export function isAuthorized(record: RunRecord, caller: Caller): boolean {
  const p = caller.principal;
  if (p.kind === 'system') return true;
  const owner = record.principal;
  if (p.kind === owner.kind && p.id === owner.id) return true;
  if (p.kind === 'user' && owner.on_behalf_of !== undefined && owner.on_behalf_of === p.id) return true;
  if (caller.capability !== undefined && record.capability_hash !== undefined) {
    return capabilityHash(caller.capability) === record.capability_hash;
  }
  return false;
}
