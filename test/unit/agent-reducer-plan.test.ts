/**
 * Plan approval and progress accounting of the default agent reducer (context.plan,
 * context.no_progress_turns): the plan tools, the approval whose digest covers the plan, the
 * gate on other tools, the plan in the projection, and the no-progress guard. Driven through
 * RunDriver (core's validation rules, determinism and re-delivery checked on every answer).
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../lib/core/canonical.ts';
import { planDigest } from '../../lib/reducers/agent-loop/plan.ts';
import { sha256Hex as reducerSha256 } from '../../lib/reducers/agent-loop/sha256.ts';
import type { AgentLoopContext, AgentLoopState } from '../../lib/reducers/index.ts';
import { RunDriver } from './agent-reducer-harness.ts';

const SCHEMA = { type: 'object', properties: {} };
const TOOLS: NonNullable<AgentLoopContext['tools']> = [
  { name: 'lookup', schema: SCHEMA, mutating: false },
  { name: 'update', schema: SCHEMA, mutating: true, replay_safe: true },
];
const ITEMS = [
  { key: 'read', title: 'Read the order' },
  { key: 'fix', title: 'Fix the address' },
];

function started(context: AgentLoopContext): RunDriver {
  const driver = new RunDriver();
  driver.start('Fix the address of order 7.', { mode: 'task', tools: TOOLS, ...context }, 'fix order 7');
  return driver;
}

const propose = (driver: RunDriver, id: string, items: unknown = ITEMS) =>
  driver.modelTurn(null, [{ call_id: id, name: 'propose_plan', args: { items } }]);

/** Resolves the pending request_approval with `decision`, quoting `digest`. */
function decide(driver: RunDriver, decision: 'approved' | 'rejected', digest?: string) {
  const pending = driver.expectPending('request_approval');
  const open = driver.requestFor(pending.effect_id);
  return driver.deliver(
    'request_resolved',
    {
      request_id: open.request_id,
      kind: 'approval',
      decision,
      subject_digest: digest ?? pending.subject.digest,
    },
    { effect_id: pending.effect_id },
  );
}

const lastTurnResults = (driver: RunDriver) => driver.expectPending('request_model_turn').tool_results;
const stateOf = (driver: RunDriver) => driver.state as AgentLoopState;

describe('the plan tools', () => {
  it('are not offered unless context.plan is set, and the state keeps no plan then', () => {
    const driver = started({});
    const offered = driver.expectPending('request_model_turn').tools_offered.map((t) => t.name);
    expect(offered).toEqual(['lookup', 'update']);
    expect(stateOf(driver).plan_mode).toBeUndefined();
  });

  it('are offered as domain tools in track mode, and propose_plan records the plan without an approval', () => {
    const driver = started({ plan: 'track' });
    const offered = driver.expectPending('request_model_turn').tools_offered;
    expect(offered.map((t) => [t.name, t.kind])).toEqual([
      ['lookup', 'function'],
      ['update', 'function'],
      ['propose_plan', 'domain'],
      ['update_plan', 'domain'],
    ]);
    const answered = propose(driver, 'p1');
    expect(answered.effects).toMatchObject([{ kind: 'request_model_turn' }]);
    expect(lastTurnResults(driver)).toEqual([
      {
        call_id: 'p1',
        name: 'propose_plan',
        status: 'succeeded',
        content: expect.stringContaining('Plan recorded (2 items)'),
      },
    ]);
    expect(answered.projection?.items.slice(0, 2)).toEqual([
      { key: 'plan:read', title: 'Read the order', status: 'pending' },
      { key: 'plan:fix', title: 'Fix the address', status: 'pending' },
    ]);
    expect(answered.projection?.summary).toBe('Thinking (1 of 1 tool calls done); plan 0 of 2 done');
  });

  it('shows item statuses reported with update_plan in the projection', () => {
    const driver = started({ plan: 'track' });
    propose(driver, 'p1');
    const updated = driver.modelTurn(null, [
      { call_id: 'u1', name: 'update_plan', args: { key: 'read', status: 'completed', note: 'found it' } },
      { call_id: 'u2', name: 'update_plan', args: { key: 'fix', status: 'in_progress' } },
      { call_id: 'u3', name: 'update_plan', args: { key: 'nope', status: 'completed' } },
    ]);
    expect(updated.projection?.items.slice(0, 2)).toEqual([
      { key: 'plan:read', title: 'Read the order', status: 'completed', detail: { note: 'found it' } },
      { key: 'plan:fix', title: 'Fix the address', status: 'in_progress' },
    ]);
    expect(updated.projection?.summary).toContain('plan 1 of 2 done');
    expect(lastTurnResults(driver)?.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'error']);
  });

  it('answers a malformed plan with an error the model sees', () => {
    const driver = started({ plan: 'track' });
    propose(driver, 'p1', [
      { key: 'a', title: 'A' },
      { key: 'a', title: 'again' },
    ]);
    expect(lastTurnResults(driver)).toEqual([
      { call_id: 'p1', name: 'propose_plan', status: 'error', content: 'Error: items[1] repeats the key a.' },
    ]);
    expect(stateOf(driver).plan).toBeUndefined();
  });
});

describe('plan approval', () => {
  it('computes the plan digest as core does: sha256 over the canonical JSON of the plan', () => {
    expect(planDigest(ITEMS)).toBe(sha256Hex(canonicalJson({ kind: 'plan', items: ITEMS })));
    for (const text of ['', 'abc', 'é€😀', 'x'.repeat(55), 'y'.repeat(64), 'z'.repeat(1000)]) {
      expect(reducerSha256(text)).toBe(sha256Hex(text));
    }
  });

  it('asks for an approval whose subject digest covers the plan, and proceeds only once it is approved', () => {
    const driver = started({ plan: 'approve' });
    const asked = propose(driver, 'p1');
    const approval = driver.expectPending('request_approval');
    expect(asked.effects).toEqual([approval]);
    expect(approval.subject).toEqual({
      kind: 'plan',
      digest: planDigest(ITEMS),
      digest_alg: 'sha256:rfc8785',
      summary: 'Approve the plan: 1. Read the order; 2. Fix the address',
      changes: { items: ITEMS, approved_digest: null },
    });
    expect(asked.projection?.items[0]).toMatchObject({ key: 'plan:read', status: 'waiting' });

    const approved = decide(driver, 'approved');
    expect(approved.effects).toMatchObject([{ kind: 'request_model_turn' }]);
    expect(lastTurnResults(driver)).toEqual([
      {
        call_id: 'p1',
        name: 'propose_plan',
        status: 'succeeded',
        content: expect.stringContaining('approved'),
      },
    ]);
    const ran = driver.modelTurn(null, [{ call_id: 'c1', name: 'lookup', args: {} }]);
    expect(ran.effects).toMatchObject([{ kind: 'call_tool', tool: 'lookup', for_call_id: 'c1' }]);
  });

  it('refuses every other tool call until a plan is approved', () => {
    const driver = started({ plan: 'approve' });
    const refused = driver.modelTurn(null, [{ call_id: 'c1', name: 'update', args: {} }]);
    expect(refused.effects).toMatchObject([{ kind: 'request_model_turn' }]);
    expect(lastTurnResults(driver)).toEqual([
      {
        call_id: 'c1',
        name: 'update',
        status: 'refused',
        content: expect.stringContaining('needs an approved plan'),
      },
    ]);

    propose(driver, 'p1');
    decide(driver, 'rejected');
    expect(lastTurnResults(driver)).toMatchObject([{ call_id: 'p1', status: 'refused' }]);
    driver.modelTurn(null, [{ call_id: 'c2', name: 'update', args: {} }]);
    expect(lastTurnResults(driver)).toMatchObject([{ call_id: 'c2', status: 'refused' }]);
  });

  it('does not take an approval that quotes another digest', () => {
    const driver = started({ plan: 'approve' });
    propose(driver, 'p1');
    const answered = decide(driver, 'approved', 'f'.repeat(64));
    expect(answered.diagnostics).toMatchObject([{ code: 'approval_digest_mismatch' }]);
    expect(lastTurnResults(driver)).toMatchObject([{ call_id: 'p1', status: 'refused' }]);
    expect(stateOf(driver).plan?.approved_digest).toBeNull();
  });

  it('needs a new approval for a changed plan, but not for the approved plan proposed again', () => {
    const driver = started({ plan: 'approve' });
    propose(driver, 'p1');
    decide(driver, 'approved');

    const changed = [...ITEMS, { key: 'notify', title: 'Tell the customer' }];
    propose(driver, 'p2', changed);
    const second = driver.expectPending('request_approval');
    expect(second.subject.digest).toBe(planDigest(changed));
    expect(second.subject.changes).toEqual({ items: changed, approved_digest: planDigest(ITEMS) });
    // Until the change is approved, other tools wait; the approved plan again needs no approval.
    decide(driver, 'rejected');
    driver.modelTurn(null, [{ call_id: 'c1', name: 'lookup', args: {} }]);
    expect(lastTurnResults(driver)).toMatchObject([{ call_id: 'c1', status: 'refused' }]);
    const again = propose(driver, 'p3', ITEMS);
    expect(again.effects).toMatchObject([{ kind: 'request_model_turn' }]);
    expect(lastTurnResults(driver)).toMatchObject([{ call_id: 'p3', status: 'succeeded' }]);
  });

  it('keeps the status of unchanged items when the plan changes', () => {
    const driver = started({ plan: 'track' });
    propose(driver, 'p1');
    driver.modelTurn(null, [
      { call_id: 'u1', name: 'update_plan', args: { key: 'read', status: 'completed' } },
    ]);
    const changed = propose(driver, 'p2', [ITEMS[0], { key: 'fix', title: 'Fix both addresses' }]);
    expect(changed.projection?.items.slice(0, 2).map((i) => i.status)).toEqual(['completed', 'pending']);
  });

  it('answers the plan call not_executed when the user steers during its approval', () => {
    const driver = started({ plan: 'approve' });
    propose(driver, 'p1');
    const approval = driver.expectPending('request_approval');
    const open = driver.requestFor(approval.effect_id);
    const steered = driver.steer('make it shorter');
    expect(steered.effects).toMatchObject([
      { kind: 'withdraw_request', request_id: open.request_id },
      { kind: 'request_model_turn' },
    ]);
    expect(lastTurnResults(driver)).toMatchObject([{ call_id: 'p1', status: 'not_executed' }]);
  });
});

describe('the no-progress guard', () => {
  it('ends the run blocked with a capability gap after N turns without a new tool result', () => {
    const driver = started({ no_progress_turns: 2 });
    const lookup = (id: string) => driver.modelTurn(null, [{ call_id: id, name: 'lookup', args: { n: id } }]);
    lookup('c1');
    driver.toolResult({ order: 7 });
    lookup('c2');
    driver.toolResult({ order: 7 }); // the same answer again: not new
    lookup('c3');
    driver.toolResult('error', 'failed', { error_class: 'tool_error' });
    const ended = lookup('c4');
    expect(ended.effects).toMatchObject([
      {
        kind: 'capability_gap',
        gap: {
          requested_outcome: 'fix order 7',
          inspected: { idle_turns: 2, model_turns: 4, tool_calls: 3 },
          why_insufficient: expect.stringContaining('2 model turn(s) in a row brought no new tool result'),
        },
      },
      { kind: 'complete', outcome: 'blocked', summary: expect.stringContaining('(the limit is 2)') },
    ]);
    expect(ended.projection?.items[0]).toMatchObject({ key: 'call:c4', status: 'blocked' });
    expect(driver.status).toBe('completed');
  });

  it('counts a plan item done and an answer from the user as progress', () => {
    const driver = started({ no_progress_turns: 1, plan: 'track', mode: 'conversation' });
    // The first turn follows the start; a second one right after it would be idle but for the
    // plan item it completed.
    driver.modelTurn(null, [
      { call_id: 'p1', name: 'propose_plan', args: { items: ITEMS } },
      { call_id: 'u1', name: 'update_plan', args: { key: 'read', status: 'completed' } },
    ]);
    const asked = driver.modelTurn('Which address?');
    expect(asked.effects).toMatchObject([{ kind: 'ask_user' }]);
    driver.answer('Main St 1');
    const afterAnswer = driver.modelTurn(null, [{ call_id: 'c1', name: 'lookup', args: {} }]);
    expect(afterAnswer.effects).toMatchObject([{ kind: 'call_tool', tool: 'lookup' }]);
  });

  it('never ends the run when no_progress_turns is not set', () => {
    const driver = started({});
    for (let i = 0; i < 6; i++) {
      const turn = driver.modelTurn(null, [{ call_id: `c${i}`, name: 'lookup', args: { i } }]);
      expect(turn.effects).toMatchObject([{ kind: 'call_tool' }]);
      driver.toolResult('same');
    }
    expect(stateOf(driver).progress).toBeUndefined();
  });
});
