/**
 * Admission's workspace part: a create (or fork) in a workspace that is not granted to the
 * caller is refused with 403 workspace_not_granted before any run of it is looked up, so the
 * answer is the same whether the subject has a live run or not. The rule is core's
 * (lib/core/workspaces.ts); this reads the grant from the `workspaces` registry.
 */
import { type Principal, WorkspaceGrant } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { DEFAULT_WORKSPACE_MODE, mayUseWorkspace, workspaceKind } from '../core/workspaces.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';
import { UNPUBLISHED_VERSION } from './registry-admission.ts';

/** The grant published for `workspace`, or null. */
async function grantOf(deps: EngineDeps, workspace: string): Promise<WorkspaceGrant | null> {
  const reg = deps.registries;
  const version = (await reg.snapshot('workspaces', await reg.head('workspaces')))?.entries[workspace];
  // A workspace nobody was granted is read too (a version never published): a granted and an
  // ungranted name cost the same registry reads.
  const entry = await reg.entry('workspaces', workspace, version ?? UNPUBLISHED_VERSION);
  const parsed = entry === null ? null : WorkspaceGrant.safeParse(entry.body);
  return parsed?.success === true ? parsed.data : null;
}

/**
 * Throws EngineError workspace_not_granted (403, naming only the workspace the caller gave)
 * unless `principal`, created by `caller`, may use `workspace` (lib/core/workspaces.ts; the mode
 * is the deployment's AGENT_RUNS_WORKSPACES, `owned` when unset). System callers are not checked.
 */
export async function admitWorkspace(
  deps: EngineDeps,
  principal: Principal,
  caller: Caller,
  workspace: string,
): Promise<void> {
  if (caller.principal.kind === 'system') return;
  const mode = deps.admission.workspaces ?? DEFAULT_WORKSPACE_MODE;
  const admin = caller.admin === true;
  // Own and reserved names have no grant; an admin needs none: only a grant-deciding case reads.
  const needsGrant = workspaceKind(workspace) === 'grantable' && !admin;
  const grant = needsGrant ? await grantOf(deps, workspace) : null;
  if (mayUseWorkspace(workspace, grant, { principal, admin }, mode)) return;
  throw new EngineError('workspace_not_granted', `the workspace ${workspace} is not granted to the caller`, {
    workspace,
  });
}
