/**
 * Workspaces for tests with several principals: workspaces are owned (AGENT_RUNS_WORKSPACES
 * defaults to `owned`), so a test whose users share subjects publishes a grant of a fresh
 * workspace to them, as an operator would (`POST /admin/workspaces` answers the same publication).
 */
import { randomUUID } from 'node:crypto';
import type { Engine } from '../../lib/engine/engine.ts';

/**
 * Publishes, on `engine`'s registries, a grant of a fresh workspace (`{prefix}-{random}`) to
 * `grantees`, by a system caller, and returns its name.
 */
export async function grantWorkspace(
  engine: Engine,
  grantees: { users?: string[]; groups?: string[]; agents?: string[] },
  prefix = 'shared',
): Promise<string> {
  const workspace = `${prefix}-${randomUUID()}`;
  await engine.publishEntry(
    'workspaces',
    { workspace, ...grantees },
    { kind: 'system', id: 'test-operator' },
  );
  return workspace;
}
