/**
 * Admission's workspace part: a create (or fork) in a workspace that is not granted to the
 * caller is refused with 403 workspace_not_granted before any run of it is looked up, so the
 * answer is the same whether the subject has a live run or not. The rule is core's
 * (lib/core/workspaces.ts); this reads the grant from the `workspaces` registry.
 */
import { OWN_WORKSPACE_PREFIX, type Principal, WorkspaceGrant } from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import { mayUseWorkspace } from '../core/workspaces.ts';
import type { EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';

/** The grant published for `workspace`, or null. */
async function grantOf(deps: EngineDeps, workspace: string): Promise<WorkspaceGrant | null> {
  const reg = deps.registries;
  const version = (await reg.snapshot('workspaces', await reg.head('workspaces')))?.entries[workspace];
  const entry = version === undefined ? null : await reg.entry('workspaces', workspace, version);
  const parsed = entry === null ? null : WorkspaceGrant.safeParse(entry.body);
  return parsed?.success === true ? parsed.data : null;
}

/**
 * Throws EngineError workspace_not_granted (403, naming only the workspace the caller gave)
 * unless `principal`, created by `caller`, may use `workspace`. System callers are not checked.
 */
export async function admitWorkspace(
  deps: EngineDeps,
  principal: Principal,
  caller: Caller,
  workspace: string,
): Promise<void> {
  if (caller.principal.kind === 'system') return;
  const mode = deps.admission.workspaces ?? 'open';
  const own = workspace.startsWith(OWN_WORKSPACE_PREFIX);
  const grant = own ? null : await grantOf(deps, workspace);
  if (mayUseWorkspace(workspace, grant, principal, mode)) return;
  throw new EngineError('workspace_not_granted', `the workspace ${workspace} is not granted to the caller`, {
    workspace,
  });
}
