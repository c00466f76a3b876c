/**
 * Who may use a workspace (lib/core/workspaces.ts), as a table: own workspaces are matched
 * exactly, case variants of `user:` are nobody's, grants name users, groups and agents, admins
 * may use all but others' own, `owned` refuses an ungranted workspace and `open` does not.
 */
import { describe, expect, it } from 'vitest';
import type { Principal, WorkspaceGrant } from '../../lib/contracts/index.ts';
import { mayUseWorkspace, workspaceKind } from '../../lib/core/workspaces.ts';

const alice: Principal = { kind: 'user', id: 'alice', groups: ['staff'] };
const agentForAlice: Principal = { kind: 'agent', id: 'triage', on_behalf_of: 'alice' };
const loneAgent: Principal = { kind: 'agent', id: 'triage' };
const ops: Principal = { kind: 'system', id: 'ops' };
const grant: WorkspaceGrant = { workspace: 'team', users: ['bob'], groups: ['staff'], agents: ['triage'] };

const may = (
  ws: string,
  p: Principal,
  opts: { admin?: boolean; grant?: WorkspaceGrant | null; mode?: 'owned' | 'open' } = {},
) =>
  mayUseWorkspace(ws, opts.grant ?? null, { principal: p, admin: opts.admin ?? false }, opts.mode ?? 'owned');

describe('who may use a workspace', () => {
  it("tells own, nobody's and grantable names apart by the exact prefix", () => {
    expect(workspaceKind('user:alice')).toBe('own');
    for (const ws of ['User:alice', 'USER:alice', 'uSER:x', 'USER:'])
      expect(workspaceKind(ws)).toBe('reserved');
    for (const ws of ['users:alice', 'alice', 'Alice2', 'user', 'xuser:alice'])
      expect(workspaceKind(ws)).toBe('grantable');
  });

  it('gives user:{id} to that user and its agents only, matched case-sensitively, never to an admin', () => {
    expect(may('user:alice', alice)).toBe(true);
    expect(may('user:alice', agentForAlice)).toBe(true);
    expect(may('user:Alice', alice)).toBe(false);
    expect(may('user:alice2', alice)).toBe(false);
    expect(may('user:bob', alice, { admin: true, mode: 'open' })).toBe(false);
    expect(may('user:alice', loneAgent)).toBe(false);
    expect(may('user:bob', ops)).toBe(true);
  });

  it('refuses case variants of user: to everyone but system callers, whatever the mode', () => {
    for (const ws of ['User:alice', 'USER:alice']) {
      expect(may(ws, alice, { mode: 'open' })).toBe(false);
      expect(may(ws, alice, { admin: true })).toBe(false);
      expect(may(ws, ops)).toBe(true);
    }
  });

  it('admits by a grant its users, groups and agents acting for nobody; owned refuses an ungranted workspace, open does not', () => {
    expect(may('team', { kind: 'user', id: 'bob' }, { grant })).toBe(true);
    expect(may('team', alice, { grant })).toBe(true);
    expect(may('team', agentForAlice, { grant })).toBe(false);
    expect(may('team', loneAgent, { grant })).toBe(true);
    expect(may('team', { kind: 'user', id: 'carol' }, { grant, mode: 'open' })).toBe(false);
    expect(may('Alice2', alice)).toBe(false);
    expect(may('Alice2', alice, { mode: 'open' })).toBe(true);
    expect(may('Alice2', alice, { admin: true })).toBe(true);
  });
});
