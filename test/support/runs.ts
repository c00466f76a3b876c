/** Test builders for run records and reducer effects (pure, no I/O). */
import type { Effect, RunRecord } from '../../lib/contracts/index.ts';
import { type CreateRunParams, createRun } from '../../lib/core/run-machine.ts';

export function newRun(overrides: Partial<CreateRunParams> = {}, now = 1_000): RunRecord {
  return createRun(
    {
      run_id: 'run-1',
      principal: { kind: 'user', id: 'alice' },
      subject: { workspace: 'ai', path: '/chats/c1' },
      reducer: { function_path: '/lib/test/reducer' },
      input: 'hello',
      budgets: {},
      on_exceeded: 'pause',
      ...overrides,
    },
    now,
  ).record;
}

export function toolEffect(
  stateRev: number,
  i = 0,
  extra: Partial<Extract<Effect, { kind: 'call_tool' }>> = {},
): Effect {
  return {
    effect_id: `${stateRev}:${i}`,
    kind: 'call_tool',
    tool: 'lookup',
    args: { id: 1 },
    mutating: false,
    replay_safe: true,
    interruptible: true,
    ...extra,
  };
}

export function modelEffect(stateRev: number, i = 0): Effect {
  return { effect_id: `${stateRev}:${i}`, kind: 'request_model_turn', tools_offered: [] };
}
