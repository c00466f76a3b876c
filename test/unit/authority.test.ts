/**
 * Who may see and act on a run (lib/core/authority.ts): the principal, the user it acts for,
 * system callers and holders of its capability; to anyone else the run does not exist. A wrong
 * capability is refused to whoever may see the run, and reveals nothing to anyone else.
 * docs/contracts/run-lifecycle.md, "Controls" (authorization).
 */
import { describe, expect, it } from 'vitest';
import type { Principal, RunRecord } from '../../lib/contracts/index.ts';
import { accessOf, type Caller, capabilityHash, mayList } from '../../lib/core/authority.ts';
import { createRun } from '../../lib/core/run-machine.ts';

const SECRET = 'the-capability-secret';

function runAs(principal: Principal): RunRecord {
  return createRun(
    {
      run_id: 'run_1',
      principal,
      subject: { workspace: 'w', path: '/a' },
      reducer: { function_path: '/r' },
      input: null,
      budgets: {},
      on_exceeded: 'pause',
      capability_hash: capabilityHash(SECRET),
    },
    1_000,
  ).record;
}

const alice: Caller = { principal: { kind: 'user', id: 'alice' } };
const bob: Caller = { principal: { kind: 'user', id: 'bob' } };
const system: Caller = { principal: { kind: 'system', id: 'trigger' } };

describe('access to a run', () => {
  const ownRun = runAs({ kind: 'user', id: 'alice' });
  const agentRun = runAs({ kind: 'agent', id: 'functions:/agents/x', on_behalf_of: 'alice' });

  it('lets the principal, the user an agent acts for, and system callers in', () => {
    expect(accessOf(ownRun, alice)).toEqual({ ok: true, via: 'principal' });
    expect(accessOf(agentRun, alice)).toEqual({ ok: true, via: 'acts_for' });
    expect(accessOf(ownRun, system)).toEqual({ ok: true, via: 'system' });
    expect(mayList(agentRun, alice)).toBe(true);
  });

  it('answers anyone else as if the run did not exist, like an unknown id', () => {
    expect(accessOf(ownRun, bob)).toEqual({ ok: false, code: 'run_not_found' });
    expect(accessOf(null, alice)).toEqual({ ok: false, code: 'run_not_found' });
    expect(accessOf(agentRun, { principal: { kind: 'agent', id: 'functions:/agents/x' } })).toEqual({
      ok: false,
      code: 'run_not_found',
    });
    expect(mayList(ownRun, bob)).toBe(false);
  });

  it('lets the holder of the capability in, and never lists a run by its capability', () => {
    expect(accessOf(ownRun, { ...bob, capability: SECRET })).toEqual({ ok: true, via: 'capability' });
    expect(mayList(ownRun, { ...bob, capability: SECRET })).toBe(false);
  });

  it('refuses a wrong capability to whoever may see the run, and reveals nothing to anyone else', () => {
    expect(accessOf(ownRun, { ...alice, capability: 'garbage' })).toEqual({
      ok: false,
      code: 'capability_invalid',
    });
    expect(accessOf(ownRun, { ...bob, capability: 'garbage' })).toEqual({ ok: false, code: 'run_not_found' });
    expect(accessOf(null, { ...alice, capability: 'garbage' })).toEqual({ ok: false, code: 'run_not_found' });
  });
});
