/**
 * Owned workspaces: who may create runs in a workspace, and so learn whether a subject in it has
 * a live run. A user owns `user:{id}`; any other workspace is granted by an admin (a
 * `workspaces` registry entry naming users, groups and agents). In `owned` mode a workspace
 * nobody was granted is refused; in `open` mode (the migration mode) it stays open to every
 * caller, while granted and `user:` workspaces are still only their grantees'. System callers
 * are the operators and may use every workspace. Pure.
 */
import { OWN_WORKSPACE_PREFIX, type Principal, type WorkspaceGrant } from '../contracts/index.ts';

/** How a deployment treats a workspace nobody was granted: refused (`owned`) or open to all (`open`). */
export type WorkspaceMode = 'owned' | 'open';

/** The user a principal's workspace rights are those of: the user itself, or the user an agent acts for. */
function userOf(p: Principal): string | undefined {
  return p.kind === 'user' ? p.id : p.on_behalf_of;
}

/** The workspace `p`'s user owns (`user:{id}`), or null for an agent acting for nobody and system callers. */
export function ownWorkspaceOf(p: Principal): string | null {
  const user = p.kind === 'system' ? undefined : userOf(p);
  return user === undefined ? null : `${OWN_WORKSPACE_PREFIX}${user}`;
}

/** Whether the grant of a workspace (null: none published) lets `p` use it. */
function granted(grant: WorkspaceGrant, p: Principal): boolean {
  const user = userOf(p);
  if (user === undefined) return p.kind === 'agent' && grant.agents.includes(p.id);
  if (grant.users.includes(user)) return true;
  return (p.groups ?? []).some((g) => grant.groups.includes(g));
}

/**
 * Whether `p` may create runs in `workspace`, given its grant (null: none) and the deployment's
 * mode. A `user:{id}` workspace is only its user's (and the agents acting for that user).
 */
export function mayUseWorkspace(
  workspace: string,
  grant: WorkspaceGrant | null,
  p: Principal,
  mode: WorkspaceMode,
): boolean {
  if (p.kind === 'system') return true;
  if (workspace.startsWith(OWN_WORKSPACE_PREFIX)) return ownWorkspaceOf(p) === workspace;
  if (grant !== null) return granted(grant, p);
  return mode === 'open';
}
