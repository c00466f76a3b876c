/**
 * The pure rules of delegation: the delegation budgets, the child plan, the hand-back envelope,
 * and the parent's transitions when a delegate call waits and its child ends.
 * docs/contracts/run-lifecycle.md ("Budgets": max_children, max_live_children, max_depth; the
 * sweeper's duties).
 */
import { describe, expect, it } from 'vitest';
import { childResumeKey, DELEGATE_TOOL, type RunRecord } from '../../lib/contracts/index.ts';
import { checkBudgets } from '../../lib/core/budgets.ts';
import { controlDigest } from '../../lib/core/controls.ts';
import {
  childContextOf,
  childStartedEnvelope,
  delegationFailedEnvelope,
  handBackEnvelope,
  planChildRun,
  treeBoundOf,
} from '../../lib/core/delegation.ts';
import {
  acquireLease,
  applyReducerAnswer,
  childEnded,
  decideControl,
  type Fence,
  failRun,
  finishOperation,
  pauseRun,
  releaseLease,
  settleOwed,
  startOperation,
  type TransitionResult,
} from '../../lib/core/run-machine.ts';
import { newRun, toolEffect } from '../support/runs.ts';

function ok(result: TransitionResult): RunRecord {
  if (!result.ok) throw new Error(`expected ok, got ${result.code}: ${result.message}`);
  return result.record;
}

function must<T>(value: T | null | undefined): T {
  if (value === null || value === undefined) throw new Error('expected a value');
  return value;
}
const opOf = (record: RunRecord) => must(record.operation);

const delegateEffect = (rev: number, args: Record<string, unknown> = {}) =>
  toolEffect(rev, 0, { tool: DELEGATE_TOOL, args });

/** A parent whose reducer asked for a delegation, leased by w1; `overrides` shape the run. */
function delegating(overrides: Parameters<typeof newRun>[0] = {}) {
  const leased = ok(acquireLease(newRun(overrides), 'w1', 2_000));
  const answered = ok(
    applyReducerAnswer(
      leased,
      { event_seq: 1, state_rev: 1, effects: [delegateEffect(1)], projection: null, diagnostics: [] },
      2_000,
    ),
  );
  return { record: answered, fence: { owner: 'w1', epoch: leased.epoch } as Fence };
}

/** The parent after its delegate call started child `childId` and it released its lease: waiting. */
function waitingOn(childId: string) {
  const { record, fence } = delegating();
  const started = ok(startOperation(record, 2_001));
  const parked = ok(
    finishOperation(
      started,
      fence,
      { kind: 'tool_result', envelope: childStartedEnvelope('run-1/op/1', childId) },
      2_002,
    ),
  );
  return ok(releaseLease(parked, fence, 2_003));
}

describe('delegation budgets', () => {
  it('counts a delegation when it starts, and refuses one past max_children', () => {
    const { record } = delegating({ budgets: { max_children: 1 } });
    const started = ok(startOperation(record, 2_001));
    expect(started.counters.children).toBe(1);
    const exceeded = checkBudgets({ ...started, operation: null } as RunRecord, opOf(record), 2_002);
    expect(exceeded).toEqual({ which: 'max_children', limit: 1, used: 1 });
  });

  it('refuses a delegation while max_live_children children are live', () => {
    const { record } = delegating({ budgets: { max_live_children: 2 } });
    const busy = { ...record, live_children: ['a', 'b'] } as RunRecord;
    expect(checkBudgets(busy, opOf(record), 2_001)).toEqual({
      which: 'max_live_children',
      limit: 2,
      used: 2,
    });
    expect(checkBudgets({ ...busy, live_children: ['a'] } as RunRecord, opOf(record), 2_001)).toBeNull();
  });

  it('refuses a delegation from a run at max_depth, and leaves other tools alone', () => {
    const { record } = delegating({ budgets: { max_depth: 2 }, depth: 2 });
    expect(checkBudgets(record, opOf(record), 2_001)).toEqual({ which: 'max_depth', limit: 2, used: 2 });
    const tool = { ...opOf(record), effect: toolEffect(1) };
    expect(checkBudgets(record, tool, 2_001)).toBeNull();
  });

  it('lets a delegation dispatched again after a takeover past max_children (its child may exist already)', () => {
    const { record } = delegating({ budgets: { max_children: 1 } });
    const counted = { ...record, counters: { ...record.counters, children: 1 } } as RunRecord;
    expect(checkBudgets(counted, { ...opOf(record), attempt: 2 }, 2_001)).toBeNull();
  });
});

describe('tree bounds', () => {
  const withChildren = (record: RunRecord, children: number) =>
    ({ ...record, counters: { ...record.counters, children } }) as RunRecord;

  it('allows 16 children per run and depth 4 by default, refusing the next with a stable code', () => {
    const { record } = delegating();
    // counters.children counts the delegation in flight: 16 means 15 started before it.
    expect(treeBoundOf(withChildren(record, 16), {})).toBeNull();
    expect(treeBoundOf(withChildren(record, 17), {})).toMatchObject({ code: 'child_limit_reached', max: 16 });
    expect(treeBoundOf({ ...withChildren(record, 1), depth: 3 } as RunRecord, {})).toBeNull();
    expect(treeBoundOf({ ...withChildren(record, 1), depth: 4 } as RunRecord, {})).toMatchObject({
      code: 'tree_depth_exceeded',
      max: 4,
    });
  });

  it('takes the bounds the deployment sets, whatever the run’s budgets say', () => {
    const { record } = delegating({ budgets: { max_children: 100, max_depth: 10 } });
    const bounds = { max_children_per_run: 2, max_tree_depth: 1 };
    expect(treeBoundOf(withChildren(record, 2), bounds)).toBeNull();
    expect(treeBoundOf(withChildren(record, 3), bounds)?.code).toBe('child_limit_reached');
    expect(treeBoundOf({ ...withChildren(record, 1), depth: 1 } as RunRecord, bounds)?.code).toBe(
      'tree_depth_exceeded',
    );
  });

  it('takes back the count of a refused delegation, and keeps that of one that failed otherwise', () => {
    for (const [code, children] of [
      ['quota_exceeded', 0],
      ['child_limit_reached', 0],
      ['tree_depth_exceeded', 0],
      ['reducer_not_found', 0],
      ['delegate_args_invalid', 0],
      // Not a refusal before anything was written: the create key names another run.
      ['create_key_taken', 1],
    ] as const) {
      const { record, fence } = delegating();
      const started = ok(startOperation(record, 2_001));
      expect(started.counters.children).toBe(1);
      const envelope = delegationFailedEnvelope('run-1/op/1', 'permission_denied', code, 'refused');
      const done = ok(finishOperation(started, fence, { kind: 'tool_result', envelope }, 2_002));
      expect(done.counters.children, code).toBe(children);
      expect(done.counters.consecutive_op_failures, code).toBe(1);
      expect(done.live_children).toEqual([]);
    }
  });
});

describe('resuming a child run', () => {
  it('refuses to raise a child’s inherited max_depth, and allows other increases', () => {
    const child = newRun({ parent_run_id: 'p', depth: 1, budgets: { max_depth: 1 } });
    const paused = ok(pauseRun(child, 'budget_exceeded:max_depth', 2_000));
    const raise = { control_id: 'r1', command: 'resume' as const, budget_increase: { max_depth: 1 } };
    expect(decideControl(paused, raise, controlDigest(raise), null, 2_001)).toMatchObject({
      kind: 'rejected',
      reason: 'max_depth_inherited',
    });
    const more = { control_id: 'r2', command: 'resume' as const, budget_increase: { max_turns: 5 } };
    expect(decideControl(paused, more, controlDigest(more), null, 2_001)).toMatchObject({
      kind: 'applied',
    });
  });

  it('refuses to raise a tree limit the child holds reserved of its parent', () => {
    const child = newRun({
      parent_run_id: 'p',
      depth: 1,
      budgets: { max_turns: 2 },
      reserved: { max_turns: 2 },
    });
    const paused = ok(pauseRun(child, 'child_budget_exceeded:max_turns', 2_000));
    const raise = { control_id: 'r1', command: 'resume' as const, budget_increase: { max_turns: 5 } };
    expect(decideControl(paused, raise, controlDigest(raise), null, 2_001)).toMatchObject({
      kind: 'rejected',
      reason: 'tree_budget_reserved',
    });
  });
});

describe('the child plan and the hand-back', () => {
  it('defaults the child to the parent’s reducer under the parent’s subject, and caps max_depth', () => {
    const base = newRun({ budgets: { max_depth: 3 }, depth: 1, executor_config: { model: 'm' } });
    // The parent's second delegation (its begin commit counted it), at operation 4.
    const parent = { ...base, counters: { ...base.counters, children: 2 } };
    const plan = planChildRun(parent, 'run-1/op/4', { budgets: { max_depth: 9, max_turns: 5 } }, 0);
    expect(plan).toMatchObject({
      subject: { workspace: 'ai', path: '/chats/c1/children/2' },
      reducer: { function_path: '/lib/test/reducer' },
      budgets: { max_depth: 3, max_turns: 5 },
      executor_config: { model: 'm' },
      parent_run_id: 'run-1',
      depth: 2,
      create_key: 'delegate:run-1/op/4',
    });
  });

  it('maps a child’s end to the envelope status: partial succeeds, blocked blocks, stopped fails', () => {
    const ended = (status: string, extra: Record<string, unknown>) =>
      ({
        ...newRun(),
        status,
        lease: null,
        operation: null,
        open_requests: [],
        queued_steers: [],
        terminal_reason: 'r',
        finished_at: 5,
        owed: ['handback'],
        ...extra,
      }) as unknown as RunRecord;
    expect(handBackEnvelope(ended('completed', { outcome: 'partial' }))?.status).toBe('succeeded');
    expect(handBackEnvelope(ended('completed', { outcome: 'blocked' }))?.status).toBe('blocked');
    const stopped = handBackEnvelope(ended('stopped', {}));
    expect(stopped?.status).toBe('failed');
    expect(stopped?.diagnostics[0]?.code).toBe('child_stopped');
    expect(stopped?.payload).toMatchObject({
      child_run_id: 'run-1',
      status: 'stopped',
      terminal_reason: 'r',
    });
    expect(handBackEnvelope(newRun())).toBeNull();
  });
});

describe('the parent’s side of a hand-back', () => {
  it('parks the parent on child:{id} with the child live, then delivers the hand-back once', () => {
    const parent = waitingOn('kid');
    expect(parent.status).toBe('waiting');
    expect(parent.live_children).toEqual(['kid']);
    expect(parent.open_requests[0]).toMatchObject({ kind: 'result', resume_key: childResumeKey('kid') });

    const child = ok(
      failRun({ ...newRun({ parent_run_id: 'run-1' }), run_id: 'kid' } as RunRecord, 'x', 3_000),
    );
    const envelope = must(handBackEnvelope(child));
    const result = childEnded(parent, 'kid', envelope, 3_001);
    const next = ok(result);
    expect(next.live_children).toEqual([]);
    expect(next.status).toBe('queued');
    const toolResult = result.ok ? result.events.find((e) => e.kind === 'tool_result') : undefined;
    expect(toolResult?.operation_id).toBe('run-1/op/1');
    expect(must(toolResult).data.envelope).toMatchObject({ operation_id: 'run-1/op/1' });
    expect(childEnded(next, 'kid', envelope, 3_002)).toMatchObject({ ok: false, code: 'nothing_to_do' });
  });

  it('owes the hand-back when a child ends and the stop of children when a delegating parent ends', () => {
    const child = ok(failRun(newRun({ parent_run_id: 'p' }), 'x', 3_000));
    expect('owed' in child && child.owed).toEqual(['handback']);
    const parent = ok(failRun(waitingOn('kid'), 'x', 3_000));
    expect('owed' in parent && parent.owed).toEqual(['stop_children']);
    const settled = ok(settleOwed(parent, 'stop_children', 3_001));
    expect('owed' in settled && settled.owed).toEqual([]);
    expect(settled.live_children).toEqual([]);
    expect(settleOwed(settled, 'stop_children', 3_002)).toMatchObject({ ok: false, code: 'nothing_to_do' });
  });
});

describe('the context a child inherits', () => {
  it('makes the child a task and downgrades the checks that would wait for a person', () => {
    const parent = {
      tools: [],
      instructions: 'x',
      mode: 'conversation',
      plan: 'approve',
      verify_completion: 'ask_user',
    };
    expect(childContextOf(parent)).toEqual({
      tools: [],
      instructions: 'x',
      mode: 'task',
      plan: 'track',
      verify_completion: 'partial',
    });
    expect(parent.plan).toBe('approve');
  });

  it('keeps checks that end on their own, and a context that is not an object', () => {
    expect(childContextOf({ plan: 'track', verify_completion: 'partial' })).toEqual({
      plan: 'track',
      verify_completion: 'partial',
      mode: 'task',
    });
    expect(childContextOf('just text')).toBe('just text');
  });
});
