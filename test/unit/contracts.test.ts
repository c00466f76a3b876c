import { describe, expect, it } from 'vitest';
import { Control, Effect, ReducerEvent, RunRecord, TurnOutcome } from '../../lib/contracts/index.ts';

describe('contracts', () => {
  it('defaults call_tool interruptible to true', () => {
    const effect = Effect.parse({
      effect_id: '1:0',
      kind: 'call_tool',
      tool: '/t',
      args: {},
      mutating: false,
      replay_safe: true,
    });
    expect(effect.kind === 'call_tool' && effect.interruptible).toBe(true);
  });

  it('rejects an unknown effect kind and an unknown event kind', () => {
    expect(Effect.safeParse({ effect_id: '1:0', kind: 'launch_rocket' }).success).toBe(false);
    expect(ReducerEvent.safeParse({ seq: 1, kind: 'mystery', data: {} }).success).toBe(false);
  });

  it('refuses unknown fields in a control, as in a create request (a typo is never silently dropped)', () => {
    expect(Control.safeParse({ control_id: 'c1', command: 'stop', future_field: 1 }).success).toBe(false);
    expect(Control.safeParse({ control_id: 'c1', command: 'resume', budget_incrase: {} }).success).toBe(
      false,
    );
    expect(Control.parse({ control_id: 'c1', command: 'stop' })).toEqual({
      control_id: 'c1',
      command: 'stop',
    });
  });

  it('applies the three conditional rules of turn-outcome v1', () => {
    const base = {
      schema: 'agent.external-runtime.turn-outcome.v1',
      'outcome/ref': 'o',
      'turn/ref': 't',
      'binding/ref': 'b',
      'agent/id': 'a',
      'budget/reserved': {},
      'budget/charged': {},
      'usage/fidelity': 'estimated',
      'selected/at': '2026-01-01T00:00:00Z',
      'selected/by': 'x',
    };
    const completed = { ...base, status: 'completed', 'reason/code': 'completed', retryability: 'terminal' };
    expect(TurnOutcome.safeParse(completed).success).toBe(false);
    expect(TurnOutcome.safeParse({ ...completed, 'product/ref': 'p', 'product/digest': 'd' }).success).toBe(
      true,
    );
    const failed = { ...base, status: 'failed', 'reason/code': 'session-lost', retryability: 'retryable' };
    expect(TurnOutcome.safeParse(failed).success).toBe(true);
    expect(TurnOutcome.safeParse({ ...failed, 'product/ref': 'p' }).success).toBe(false);
    const unknown = { ...base, status: 'unknown', 'reason/code': 'unknown', retryability: 'retryable' };
    expect(TurnOutcome.safeParse(unknown).success).toBe(false);
    expect(TurnOutcome.safeParse({ ...unknown, retryability: 'reconciliation-required' }).success).toBe(true);
  });

  it('cannot represent a waiting run without an open request or a terminal run with a lease', () => {
    const base = {
      run_id: 'r1',
      version: 1,
      created_at: 0,
      updated_at: 0,
      principal: { kind: 'user', id: 'u1' },
      subject: { workspace: 'w', path: '/p' },
      reducer: null,
      budgets: {},
      on_exceeded: 'pause',
      usage: {},
      counters: {},
      epoch: 1,
      last_seq: 1,
      reduced_seq: 1,
      inbox: [],
      turn: 0,
      state_rev: 0,
      projection: null,
      unanswered_calls: [],
      queued_steers: [],
      wake_at: null,
    };
    expect(
      RunRecord.safeParse({ ...base, status: 'queued', lease: null, operation: null, open_requests: [] })
        .success,
    ).toBe(true);
    expect(
      RunRecord.safeParse({ ...base, status: 'waiting', lease: null, operation: null, open_requests: [] })
        .success,
    ).toBe(false);
    expect(
      RunRecord.safeParse({
        ...base,
        status: 'stopped',
        lease: { owner: 'w', expires_at: 1 },
        operation: null,
        open_requests: [],
        terminal_reason: 'stopped',
        finished_at: 1,
      }).success,
    ).toBe(false);
  });
});
