/**
 * The reason codes the runtime detects itself in a turn outcome a client reports
 * (docs/contracts/turn-outcome.md): binding-mismatch, event-stale, event-unauthorized,
 * usage-malformed, usage-overflow and usage-missing, each naming its field; and what an accepted
 * outcome becomes. Pure: core's turnOutcomeResult over a parsed document.
 */
import { describe, expect, it } from 'vitest';
import { type Operation, TurnOutcome } from '../../lib/contracts/index.ts';
import { turnOutcomeResult } from '../../lib/core/turn-outcome.ts';
import { newRun } from '../support/runs.ts';

const run = newRun({ reducer: null });
const op: Operation = {
  op_id: 'run-1/op/1',
  kind: 'model_turn',
  effect_id: '0:0',
  effect: { effect_id: '0:0', kind: 'request_model_turn', tools_offered: [] },
  replay_safe: true,
  interruptible: true,
  attempt: 1,
  started_at: 1_500,
};

function outcome(fields: Record<string, unknown> = {}): TurnOutcome {
  return TurnOutcome.parse({
    schema: 'agent.external-runtime.turn-outcome.v1',
    'outcome/ref': 'out-1',
    'turn/ref': op.op_id,
    'binding/ref': run.run_id,
    'agent/id': 'agents/external',
    status: 'completed',
    'reason/code': 'completed',
    retryability: 'terminal',
    'product/ref': 'p1',
    'product/digest': 'sha256:1',
    'budget/reserved': {},
    'budget/charged': { input_tokens: 10, output_tokens: 5 },
    'usage/fidelity': 'authoritative',
    'selected/at': '2026-12-01T00:00:00Z',
    'selected/by': 'test',
    ...fields,
  });
}

describe('turn outcome reason codes the runtime detects', () => {
  it('refuses an outcome bound to another run as binding-mismatch', () => {
    expect(turnOutcomeResult(run, op, outcome({ 'binding/ref': 'run-2' }))).toMatchObject({
      ok: false,
      reason_code: 'binding-mismatch',
      field: 'binding/ref',
    });
  });

  it('refuses an outcome for another turn than the operation in flight as event-stale', () => {
    expect(turnOutcomeResult(run, op, outcome({ 'turn/ref': 'run-1/op/0' }))).toMatchObject({
      ok: false,
      reason_code: 'event-stale',
      field: 'turn/ref',
    });
  });

  it('refuses an outcome naming another agent than the one the run acts as as event-unauthorized', () => {
    const agentRun = newRun({ reducer: null, principal: { kind: 'agent', id: 'agents/mine' } });
    expect(turnOutcomeResult(agentRun, op, outcome({ 'agent/id': 'agents/other' }))).toMatchObject({
      ok: false,
      reason_code: 'event-unauthorized',
      field: 'agent/id',
    });
    expect(turnOutcomeResult(agentRun, op, outcome({ 'agent/id': 'agents/mine' })).ok).toBe(true);
  });

  it('refuses charged tokens that are not whole numbers as usage-malformed, and past 2^53 as usage-overflow', () => {
    expect(turnOutcomeResult(run, op, outcome({ 'budget/charged': { input_tokens: -1 } }))).toMatchObject({
      ok: false,
      reason_code: 'usage-malformed',
      field: 'budget/charged.input_tokens',
    });
    expect(turnOutcomeResult(run, op, outcome({ 'budget/charged': { output_tokens: '5' } }))).toMatchObject({
      ok: false,
      reason_code: 'usage-malformed',
      field: 'budget/charged.output_tokens',
    });
    expect(
      turnOutcomeResult(run, op, outcome({ 'budget/charged': { input_tokens: 2 ** 53 } })),
    ).toMatchObject({ ok: false, reason_code: 'usage-overflow', field: 'budget/charged.input_tokens' });
  });

  it('refuses a completed turn that charges nothing as usage-missing, unless its usage/fidelity is unavailable', () => {
    expect(turnOutcomeResult(run, op, outcome({ 'budget/charged': {} }))).toMatchObject({
      ok: false,
      reason_code: 'usage-missing',
      field: 'budget/charged',
    });
    const unavailable = turnOutcomeResult(
      run,
      op,
      outcome({ 'budget/charged': {}, 'usage/fidelity': 'unavailable' }),
    );
    expect(unavailable).toMatchObject({ ok: true, usage: { input_tokens: 0, output_tokens: 0 } });
  });

  it('turns an accepted completed model turn into model_turn_completed charging budget/charged', () => {
    expect(turnOutcomeResult(run, op, outcome())).toMatchObject({
      ok: true,
      usage: { input_tokens: 10, output_tokens: 5 },
      result: { kind: 'model_turn_completed', usage: { input_tokens: 10, output_tokens: 5 } },
    });
  });
});
