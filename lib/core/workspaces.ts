/**
 * Owned workspaces: who may create runs in a workspace, and so learn whether a subject in it has
 * a live run. A user owns `user:{id}` (matched exactly, case included); any other workspace is
 * granted by an admin (a `workspaces` registry entry naming users, groups and agents). A
 * workspace spelled like an own workspace in another case (`User:alice`, `USER:alice`) is
 * nobody's: no grant may name it and only system callers may use it, so a case variant is never
 * a way into someone's own workspace. Admins (who may grant any workspace to themselves) may use
 * every workspace but other users' own. In `owned` mode (the default) a workspace nobody was
 * granted is refused; in `open` mode (a migration opt-in) it stays open to every caller, while
 * granted and own workspaces are still only their grantees'. System callers are the operators
 * and may use every workspace. Pure. See docs/guides/who-may-do-what.md.
 */
import { OWN_WORKSPACE_PREFIX, type Principal, type WorkspaceGrant } from '../contracts/index.ts';

/** How a deployment treats a workspace nobody was granted: refused (`owned`, the default) or open to all (`open`). */
export type WorkspaceMode = 'owned' | 'open';

/** The mode a deployment that does not say has. */
export const DEFAULT_WORKSPACE_MODE: WorkspaceMode = 'owned';

/** The user a principal's workspace rights are those of: the user itself, or the user an agent acts for. */
function userOf(p: Principal): string | undefined {
  return p.kind === 'user' ? p.id : p.on_behalf_of;
}

/** The workspace `p`'s user owns (`user:{id}`), or null for an agent acting for nobody and system callers. */
export function ownWorkspaceOf(p: Principal): string | null {
  const user = p.kind === 'system' ? undefined : userOf(p);
  return user === undefined ? null : `${OWN_WORKSPACE_PREFIX}${user}`;
}

/**
 * What kind of name `workspace` is: a user's own (`user:` exactly), a case variant of one
 * (`User:`, `USER:`, ...: nobody's), or an ordinary workspace an admin may grant.
 */
export function workspaceKind(workspace: string): 'own' | 'reserved' | 'grantable' {
  if (workspace.startsWith(OWN_WORKSPACE_PREFIX)) return 'own';
  const head = workspace.slice(0, OWN_WORKSPACE_PREFIX.length);
  return head.toLowerCase() === OWN_WORKSPACE_PREFIX ? 'reserved' : 'grantable';
}

/** Whether the grant of a workspace (null: none published) lets `p` use it. */
function granted(grant: WorkspaceGrant, p: Principal): boolean {
  const user = userOf(p);
  if (user === undefined) return p.kind === 'agent' && grant.agents.includes(p.id);
  if (grant.users.includes(user)) return true;
  return (p.groups ?? []).some((g) => grant.groups.includes(g));
}

/** Who asks: the run's principal, and whether the caller creating it is an admin. */
export interface WorkspaceUser {
  principal: Principal;
  admin: boolean;
}

/**
 * Whether `who` may create runs in `workspace`, given its grant (null: none) and the deployment's
 * mode. A `user:{id}` workspace is only its user's (and the agents acting for that user).
 */
export function mayUseWorkspace(
  workspace: string,
  grant: WorkspaceGrant | null,
  who: WorkspaceUser,
  mode: WorkspaceMode,
): boolean {
  const p = who.principal;
  if (p.kind === 'system') return true;
  const kind = workspaceKind(workspace);
  if (kind === 'own') return ownWorkspaceOf(p) === workspace;
  if (kind === 'reserved') return false;
  if (who.admin) return true;
  if (grant !== null) return granted(grant, p);
  return mode === 'open';
}
