/**
 * The default agent reducer (lib/reducers/agent-loop.js), event by event. Every answer goes
 * through RunDriver, which checks it with core's validateReducerResponse (the 13 rules), that
 * the same request gives the same answer, and that re-delivering the event changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { REDUCER_CONTRACT } from '../../lib/contracts/index.ts';
import { canonicalByteLength } from '../../lib/core/canonical.ts';
import { type AgentLoopContext, type AgentLoopState, reduce } from '../../lib/reducers/index.ts';
import { RunDriver } from './agent-reducer-harness.ts';

const SCHEMA = { type: 'object', properties: { id: { type: 'string' } } };

const TOOLS: NonNullable<AgentLoopContext['tools']> = [
  { name: 'lookup', description: 'Read a record.', kind: 'function', schema: SCHEMA, mutating: false },
  { name: 'update', kind: 'function', schema: SCHEMA },
  {
    name: 'pay',
    kind: 'domain',
    schema: SCHEMA,
    mutating: true,
    replay_safe: true,
    function_path: '/lib/shop/pay',
    timeout_ms: 5000,
    interruptible: false,
  },
  { name: 'handoff', kind: 'function', schema: SCHEMA, mutating: false, ends_run: 'blocked' },
];

const call = (call_id: string, name: string, args: Record<string, unknown> = { id: call_id }) => ({
  call_id,
  name,
  args,
});

function started(context: AgentLoopContext = {}, objective?: string): RunDriver {
  const driver = new RunDriver();
  driver.start(
    'Hello, I need help with order 7.',
    { instructions: 'Be brief.', tools: TOOLS, ...context },
    objective,
  );
  return driver;
}

const stateOf = (driver: RunDriver) => driver.state as AgentLoopState;
const statusOf = (driver: RunDriver, key: string) =>
  driver.responses.at(-1)?.projection?.items.find((item) => item.key === key)?.status;

describe('run_started', () => {
  it('asks for a model turn with the context instructions, the offered tools and the transcript cutoff', () => {
    const driver = new RunDriver();
    const response = driver.start('hi', { instructions: 'Be brief.', tools: TOOLS }, 'help the customer');

    expect(response.state_rev).toBe(1);
    expect(response.effects).toEqual([
      {
        effect_id: '1:0',
        kind: 'request_model_turn',
        instructions: 'Be brief.',
        tools_offered: [
          { name: 'lookup', kind: 'function', description: 'Read a record.', schema: SCHEMA },
          { name: 'update', kind: 'function', schema: SCHEMA },
          { name: 'pay', kind: 'domain', function_path: '/lib/shop/pay', schema: SCHEMA },
          { name: 'handoff', kind: 'function', schema: SCHEMA },
        ],
        tool_results: [],
        context: {
          transcript: { from_seq: 1, to_seq: 1 },
          mode: 'conversation',
          objective: 'help the customer',
        },
      },
    ]);
    expect(stateOf(driver)).toMatchObject({
      last_event_seq: 1,
      phase: 'model',
      awaiting: '1:0',
      cutoff_seq: 1,
    });
    expect(response.projection).toEqual({
      items: [{ key: 'respond', title: 'Reply to the user', status: 'in_progress' }],
      summary: 'Thinking',
    });
  });

  it('runs with defaults when the run has no context: no instructions, no tools, conversation mode', () => {
    const driver = new RunDriver();
    const response = driver.start('hi');
    const turn = driver.expectPending('request_model_turn');

    expect(turn.tools_offered).toEqual([]);
    expect(turn.instructions).toBeUndefined();
    expect(stateOf(driver)).toMatchObject({ mode: 'conversation', loop_limit: 3, max_retries: 2 });
    expect(response.diagnostics).toEqual([]);
  });

  it('falls back to defaults with a diagnostic for a bad loop_limit, a nameless tool and a duplicate tool', () => {
    const driver = new RunDriver();
    const response = driver.deliver('run_started', {
      input: 'hi',
      context: {
        loop_limit: 1,
        tools: [{ schema: {} }, { name: 'a', schema: {} }, { name: 'a', schema: {} }],
      },
    });

    expect(stateOf(driver).loop_limit).toBe(3);
    expect(stateOf(driver).tools.map((t) => t.name)).toEqual(['a']);
    expect(response.diagnostics.map((d) => d.code)).toEqual([
      'context_invalid',
      'tool_invalid',
      'tool_duplicate',
    ]);
  });

  it('fails the run with context_too_large when instructions and tools exceed 160 KiB', () => {
    const driver = new RunDriver();
    const response = driver.start('hi', { instructions: 'x'.repeat(170 * 1024) });

    expect(response.effects).toEqual([expect.objectContaining({ kind: 'fail', code: 'context_too_large' })]);
    expect(canonicalByteLength(response.state)).toBeLessThan(4096);
  });

  it('refuses a first event that is not run_started, and a request that does not accept its contract', () => {
    const driver = new RunDriver();
    const request = {
      contract: REDUCER_CONTRACT,
      accept: [REDUCER_CONTRACT],
      run: {
        run_id: 'r',
        status: 'running',
        turn: 0,
        last_seq: 1,
        usage: {},
        budgets: {},
        open_requests: [],
        unanswered_calls: [],
      },
      state: null,
      state_rev: 0,
      event: { seq: 1, kind: 'stopped', data: { reason: 'x' } },
    };

    expect(reduce(request).refused?.code).toBe('state_missing');
    expect(reduce({ ...request, accept: ['raisin.agent-run.reducer/2'] }).refused?.code).toBe(
      'contract_mismatch',
    );
    expect(driver.seq).toBe(0);
  });
});

describe('tool calls of a model turn', () => {
  it('calls the tools one at a time in order, then asks for a model turn answering every call', () => {
    const driver = started();
    driver.modelTurn('Let me check.', [call('c1', 'lookup'), call('c2', 'update', { id: '7', qty: 2 })]);

    const first = driver.expectPending('call_tool');
    expect(first).toEqual({
      effect_id: '2:0',
      kind: 'call_tool',
      tool: 'lookup',
      args: { id: 'c1' },
      mutating: false,
      replay_safe: true,
      for_call_id: 'c1',
    });
    expect(statusOf(driver, 'call:c1')).toBe('in_progress');
    expect(statusOf(driver, 'call:c2')).toBe('pending');
    expect(statusOf(driver, 'respond')).toBe('pending');

    driver.toolResult({ order: 7 });
    const second = driver.expectPending('call_tool');
    expect(second).toMatchObject({
      effect_id: '3:0',
      tool: 'update',
      args: { id: '7', qty: 2 },
      for_call_id: 'c2',
    });
    // A tool entry without flags is treated as mutating and not replay-safe.
    expect(second).toMatchObject({ mutating: true, replay_safe: false });

    driver.toolResult('Error: out of stock', 'failed');
    const turn = driver.expectPending('request_model_turn');
    expect(turn.tool_results).toEqual([
      { call_id: 'c1', name: 'lookup', status: 'succeeded', seq: 3 },
      { call_id: 'c2', name: 'update', status: 'failed', seq: 4 },
    ]);
    expect(turn.context).toMatchObject({ transcript: { from_seq: 1, to_seq: 4 } });
    expect(statusOf(driver, 'call:c1')).toBe('completed');
    expect(statusOf(driver, 'call:c2')).toBe('failed');
    expect(driver.responses.at(-1)?.projection?.summary).toBe('Thinking (2 of 2 tool calls done)');
  });

  it('calls a tool by its function_path with its timeout and interruptible flag, and keeps replay_safe as declared', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'pay', { amount: 5 })]);

    expect(driver.expectPending('call_tool')).toEqual({
      effect_id: '2:0',
      kind: 'call_tool',
      tool: '/lib/shop/pay',
      args: { amount: 5 },
      mutating: true,
      replay_safe: true,
      interruptible: false,
      timeout_ms: 5000,
      for_call_id: 'c1',
    });
  });

  it('drops a model-supplied __raisin_context from the args', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup', { id: '1', __raisin_context: { run_id: 'other' } })]);

    expect(driver.expectPending('call_tool').args).toEqual({ id: '1' });
  });

  it('answers a call to an unknown tool itself and moves on without calling it', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'teleport'), call('c2', 'lookup')]);

    expect(driver.expectPending('call_tool').for_call_id).toBe('c2');
    driver.toolResult('ok');
    const turn = driver.expectPending('request_model_turn');
    expect(turn.tool_results?.[0]).toEqual({
      call_id: 'c1',
      name: 'teleport',
      status: 'error',
      content: 'Error: there is no tool named "teleport". Use one of the tools offered.',
    });
  });

  it('asks for the next model turn at once when no call of the turn can run', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'teleport')]);

    expect(driver.expectPending('request_model_turn').tool_results).toEqual([
      expect.objectContaining({ call_id: 'c1', status: 'error' }),
    ]);
  });

  it('drops a repeated call_id within one turn with a diagnostic', () => {
    const driver = started();
    const response = driver.modelTurn(null, [call('c1', 'lookup'), call('c1', 'update')]);

    expect(response.diagnostics.map((d) => d.code)).toEqual(['tool_call_duplicate']);
    driver.toolResult('ok');
    expect(driver.expectPending('request_model_turn').tool_results?.map((r) => r.call_id)).toEqual(['c1']);
  });

  it('keeps waiting on a result that is waiting, and takes the result delivered later', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    const pending = driver.expectPending('call_tool');
    const parked = driver.toolResult(null, 'waiting', { resume_key: 'child:r2' });

    expect(parked.effects).toEqual([]);
    expect(statusOf(driver, 'call:c1')).toBe('waiting');
    driver.deliver(
      'tool_result',
      {
        call_id: 'c1',
        tool: 'lookup',
        envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: 'done' },
      },
      { effect_id: pending.effect_id },
    );
    expect(driver.expectPending('request_model_turn').tool_results).toEqual([
      { call_id: 'c1', name: 'lookup', status: 'succeeded', seq: 4 },
    ]);
  });

  it('ends the run with complete{ends_run} when a hand-off tool succeeds', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'handoff'), call('c2', 'lookup')]);
    const response = driver.toolResult('Transfer successful');

    expect(response.effects).toEqual([
      {
        effect_id: '3:0',
        kind: 'complete',
        outcome: 'blocked',
        summary: 'Ended by handoff: Transfer successful',
      },
    ]);
    expect(statusOf(driver, 'respond')).toBe('blocked');
    expect(driver.status).toBe('completed');
  });
});

describe('replies without tool calls', () => {
  it('asks the user with the assistant text in a conversation, and asks the model again with the answer', () => {
    const driver = started();
    const asked = driver.modelTurn('Which order do you mean?');

    expect(asked.effects).toEqual([
      { effect_id: '2:0', kind: 'ask_user', question: 'Which order do you mean?' },
    ]);
    expect(statusOf(driver, 'respond')).toBe('waiting');
    expect(driver.status).toBe('waiting');

    driver.answer('Order 7.');
    const turn = driver.expectPending('request_model_turn');
    expect(turn.context).toMatchObject({ transcript: { from_seq: 1, to_seq: 3 } });
    expect(turn.tool_results).toEqual([]);
  });

  it('completes a task with the text as summary (partial when the reply was cut at its length limit)', () => {
    const done = started({ mode: 'task' }, 'summarise order 7');
    expect(done.modelTurn('Order 7 shipped.').effects).toEqual([
      { effect_id: '2:0', kind: 'complete', outcome: 'succeeded', summary: 'Order 7 shipped.' },
    ]);

    const cut = started({ mode: 'task' });
    const turn = cut.expectPending('request_model_turn');
    const response = cut.deliver(
      'model_turn_completed',
      {
        message: { text: 'Order 7 ship' },
        tool_calls: [],
        finish_reason: 'length',
        usage: { input_tokens: 1, output_tokens: 1 },
      },
      { effect_id: turn.effect_id },
    );
    expect(response.effects[0]).toMatchObject({ kind: 'complete', outcome: 'partial' });
  });

  it('asks the model again after an empty reply, and fails with empty_model_reply when retries run out', () => {
    const driver = started({ max_retries: 1 });
    driver.modelTurn('   ');
    expect(driver.expectPending('request_model_turn').effect_id).toBe('2:0');

    const response = driver.modelTurn(null);
    expect(response.effects).toEqual([expect.objectContaining({ kind: 'fail', code: 'empty_model_reply' })]);
    expect(driver.status).toBe('failed');
  });
});

describe('idempotency and stray events', () => {
  it('returns the same state, the same state_rev and no effects for a re-delivered event', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    const request = driver.lastRequest;
    if (request === null) throw new Error('no request');
    const redelivered = { ...request, state: driver.state, state_rev: driver.stateRev };

    const response = reduce(redelivered);
    expect(response.state_rev).toBe(driver.stateRev);
    expect(response.effects).toEqual([]);
    expect(response.state).toEqual(driver.state);
    // An older event (seq below last_event_seq) is ignored the same way.
    const older = reduce({ ...redelivered, event: { ...request.event, seq: 1 } });
    expect(older.state_rev).toBe(driver.stateRev);
    expect(older.effects).toEqual([]);
  });

  it('ignores a tool_result for another effect with a diagnostic, keeping state and state_rev', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    const before = driver.stateRev;
    const response = driver.deliver(
      'tool_result',
      {
        call_id: 'c1',
        tool: 'lookup',
        envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: 'x' },
      },
      { effect_id: '1:0' },
    );

    expect(response.state_rev).toBe(before);
    expect(response.effects).toEqual([]);
    expect(response.diagnostics).toEqual([
      expect.objectContaining({ code: 'unexpected_effect', severity: 'warning', seq: 3 }),
    ]);
    // The awaited result still goes through afterwards.
    driver.toolResult('ok');
    expect(driver.expectPending('request_model_turn').tool_results).toEqual([
      { call_id: 'c1', name: 'lookup', status: 'succeeded', seq: 4 },
    ]);
  });

  it('ignores an event kind outside the contract, even one named like an Object method', () => {
    const driver = started();
    const request = driver.lastRequest;
    if (request === null) throw new Error('no request');
    const response = reduce({
      ...request,
      state: driver.state,
      state_rev: driver.stateRev,
      event: { seq: 2, kind: 'toString', data: {} },
    });

    expect(response.state_rev).toBe(driver.stateRev);
    expect(response.effects).toEqual([]);
    expect(response.diagnostics[0]?.code).toBe('unknown_event_kind');
  });

  it('ignores a model_turn_completed for another effect with a diagnostic', () => {
    const driver = started();
    const response = driver.deliver(
      'model_turn_completed',
      {
        message: { text: 'late' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 0, output_tokens: 0 },
      },
      { effect_id: '0:0' },
    );

    expect(response.state_rev).toBe(1);
    expect(response.effects).toEqual([]);
    expect(response.diagnostics[0]?.code).toBe('unexpected_effect');
    expect(stateOf(driver).awaiting).toBe('1:0');
  });
});

describe('failed operations', () => {
  it('re-issues a retryable tool call with the same call and args, then answers it with the error once retries run out', () => {
    const driver = started({ max_retries: 2 });
    driver.modelTurn(null, [call('c1', 'update')]);
    driver.fail('transient', true, false);
    const retry1 = driver.expectPending('call_tool');
    expect(retry1).toMatchObject({ effect_id: '3:0', for_call_id: 'c1', args: { id: 'c1' } });
    driver.fail('transient', true, false);
    expect(driver.expectPending('call_tool').effect_id).toBe('4:0');
    driver.fail('transient', true, false, 'still down');

    const turn = driver.expectPending('request_model_turn');
    expect(turn.tool_results).toEqual([
      { call_id: 'c1', name: 'update', status: 'error', content: 'Error (transient): still down' },
    ]);
    expect(stateOf(driver).counters).toMatchObject({ tool_calls: 1, retries: 2 });
  });

  it('never repeats a mutating call whose outcome is unknown: the model is told to re-read', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'update'), call('c2', 'lookup')]);
    driver.fail('abandoned', false, true, 'lease expired');

    const next = driver.expectPending('call_tool');
    expect(next.for_call_id).toBe('c2');
    driver.toolResult('ok');
    const result = driver.expectPending('request_model_turn').tool_results?.[0];
    expect(result).toMatchObject({ call_id: 'c1', status: 'outcome_unknown' });
    expect(result?.content).toContain('Re-read the affected data');
    expect(statusOf(driver, 'call:c1')).toBe('failed');
  });

  it('repeats a read-only call whose outcome is unknown', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    driver.fail('abandoned', false, true);

    expect(driver.expectPending('call_tool')).toMatchObject({ effect_id: '3:0', for_call_id: 'c1' });
  });

  it('answers a non-retryable failure with the error and continues the loop', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    driver.fail('permission_denied', false, false, 'no access');

    expect(driver.expectPending('request_model_turn').tool_results).toEqual([
      { call_id: 'c1', name: 'lookup', status: 'error', content: 'Error (permission_denied): no access' },
    ]);
  });

  it('does not retry at all with max_retries 0', () => {
    const driver = started({ max_retries: 0 });
    driver.modelTurn(null, [call('c1', 'lookup')]);
    driver.fail('transient', true, false);

    expect(driver.pending?.kind).toBe('request_model_turn');
  });

  it('re-requests a failed model turn while retries are left, then fails the run with model_turn_failed', () => {
    const driver = started({ max_retries: 1 });
    driver.modelTurn(null, [call('c1', 'lookup')]);
    driver.toolResult('ok');
    driver.fail('rate_limited', true, false);
    const again = driver.expectPending('request_model_turn');
    expect(again.tool_results?.map((r) => r.call_id)).toEqual(['c1']);

    const response = driver.fail('rate_limited', true, false, 'slow down');
    expect(response.effects).toEqual([
      { effect_id: '5:0', kind: 'fail', code: 'model_turn_failed', message: 'rate_limited: slow down' },
    ]);
    expect(statusOf(driver, 'respond')).toBe('failed');
  });
});

describe('loop detection', () => {
  it('asks the user instead of making the same call a third time in a row, in a conversation', () => {
    const driver = started();
    driver.modelTurn(null, [call('a1', 'lookup', { id: '7' })]);
    driver.toolResult('nothing');
    driver.modelTurn(null, [call('a2', 'lookup', { id: '7' })]);
    driver.toolResult('nothing');
    const response = driver.modelTurn(null, [call('a3', 'lookup', { id: '7' }), call('a4', 'update')]);

    expect(response.effects).toHaveLength(1);
    const ask = driver.expectPending('ask_user');
    expect(ask.question).toContain('same call to lookup (same arguments) was requested 3 times in a row');
    expect(statusOf(driver, 'call:a3')).toBe('blocked');
    expect(statusOf(driver, 'call:a4')).toBe('blocked');

    driver.answer('Try order 8 instead.');
    const turn = driver.expectPending('request_model_turn');
    expect(turn.tool_results?.map((r) => [r.call_id, r.status])).toEqual([
      ['a3', 'not_executed'],
      ['a4', 'not_executed'],
    ]);
    // The answer reset the streak: the same call may run again.
    driver.modelTurn(null, [call('a5', 'lookup', { id: '7' })]);
    expect(driver.expectPending('call_tool').for_call_id).toBe('a5');
  });

  it('compares canonical args: key order does not make a call different', () => {
    const driver = started({ loop_limit: 2 });
    driver.modelTurn(null, [call('a1', 'lookup', { id: '7', deep: { x: 1, y: 2 } })]);
    driver.toolResult('nothing');
    driver.modelTurn(null, [call('a2', 'lookup', { deep: { y: 2, x: 1 }, id: '7' })]);

    expect(driver.pending?.kind).toBe('ask_user');
  });

  it('records a capability gap and completes blocked in a task', () => {
    const driver = started({ mode: 'task', loop_limit: 2 }, 'find order 7');
    driver.modelTurn(null, [call('a1', 'lookup', { id: '7' })]);
    driver.toolResult('nothing');
    const response = driver.modelTurn(null, [call('a2', 'lookup', { id: '7' })]);

    expect(response.effects.map((e) => e.kind)).toEqual(['capability_gap', 'complete']);
    expect(response.effects[0]).toMatchObject({
      gap: { requested_outcome: 'find order 7', proposed: { layer: 'instructions' } },
    });
    expect(response.effects[1]).toMatchObject({ outcome: 'blocked' });
    expect(stateOf(driver).counters.loops).toBe(1);
  });
});

describe('steers (user_input)', () => {
  it('withdraws the open question and asks the model again when the user writes instead of answering', () => {
    const driver = started();
    driver.modelTurn('Which order?');
    const open = driver.openRequests.map((r) => r.request_id);
    const response = driver.steer('Never mind, cancel everything.');

    expect(open).toHaveLength(1);
    expect(response.effects.map((e) => e.kind)).toEqual(['withdraw_request', 'request_model_turn']);
    expect(response.effects[0]).toMatchObject({ request_id: open[0] });
    expect(driver.openRequests).toEqual([]);
    expect(driver.expectPending('request_model_turn').context).toMatchObject({ transcript: { to_seq: 3 } });

    // The close of the withdrawn request arrives later and changes nothing, without a diagnostic.
    const closed = driver.deliver(
      'request_closed',
      { request_id: open[0], reason: 'withdrawn' },
      { effect_id: '2:0' },
    );
    expect(closed.state_rev).toBe(3);
    expect(closed.diagnostics).toEqual([]);
  });

  it('withdraws a pending approval, answers the calls not run and asks the model again', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'update'), call('c2', 'lookup')]);
    const gated = driver.expectPending('call_tool');
    // Core's policy gate opened an approval for the call (the run waits).
    driver.openRequests = [{ request_id: 'req-a', kind: 'approval', effect_id: gated.effect_id }];
    driver.status = 'waiting';
    const response = driver.steer('Stop, do not update anything.');

    expect(response.effects.map((e) => e.kind)).toEqual(['withdraw_request', 'request_model_turn']);
    expect(
      driver.expectPending('request_model_turn').tool_results?.map((r) => [r.call_id, r.status]),
    ).toEqual([
      ['c1', 'not_executed'],
      ['c2', 'not_executed'],
    ]);
  });

  it('records a steer during a tool call without effects; the next model turn includes it', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    const response = driver.steer('Also check order 8.');

    expect(response.effects).toEqual([]);
    expect(response.state_rev).toBe(3);
    driver.toolResult('ok');
    expect(driver.expectPending('request_model_turn').context).toMatchObject({ transcript: { to_seq: 4 } });
  });

  it('asks its awaited model turn again, cut at the steer, when a steer arrives before that turn', () => {
    const driver = started();
    const before = driver.expectPending('request_model_turn');
    const response = driver.steer('Actually, order 8.');

    expect(response.effects.map((e) => e.kind)).toEqual(['request_model_turn']);
    const again = driver.expectPending('request_model_turn');
    expect(again.effect_id).not.toBe(before.effect_id);
    expect(again.context).toMatchObject({ transcript: { to_seq: 2 } });
  });
});

describe('approvals and closed requests', () => {
  it('answers a call whose approval was rejected with a refusal and moves on', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'update'), call('c2', 'lookup')]);
    const gated = driver.expectPending('call_tool');
    driver.deliver(
      'request_resolved',
      { request_id: 'req-a', kind: 'approval', decision: 'rejected', reason: 'too expensive' },
      { effect_id: gated.effect_id },
    );

    expect(driver.expectPending('call_tool').for_call_id).toBe('c2');
    driver.toolResult('ok');
    const refused = driver.expectPending('request_model_turn').tool_results?.[0];
    expect(refused).toMatchObject({ call_id: 'c1', status: 'refused' });
    expect(refused?.content).toContain('did not approve this call (too expensive)');
  });

  it('changes nothing when the approval is granted (core runs the call)', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'update')]);
    const gated = driver.expectPending('call_tool');
    const response = driver.deliver(
      'request_resolved',
      { request_id: 'req-a', kind: 'approval', decision: 'approved' },
      { effect_id: gated.effect_id },
    );

    expect(response.state_rev).toBe(2);
    expect(response.effects).toEqual([]);
    driver.toolResult('updated');
    expect(driver.pending?.kind).toBe('request_model_turn');
  });

  it('completes blocked when the question to the user expires', () => {
    const driver = started();
    driver.modelTurn('Anything else?');
    const ask = driver.expectPending('ask_user');
    const response = driver.deliver(
      'request_closed',
      { request_id: driver.requestFor(ask.effect_id).request_id, reason: 'expired' },
      { effect_id: ask.effect_id },
    );

    expect(response.effects).toEqual([
      {
        effect_id: '3:0',
        kind: 'complete',
        outcome: 'blocked',
        summary: 'The user did not answer before the question expired.',
      },
    ]);
  });

  it('treats an expired approval as a refusal of the call', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'update')]);
    const gated = driver.expectPending('call_tool');
    driver.deliver(
      'request_closed',
      { request_id: 'req-a', reason: 'expired' },
      { effect_id: gated.effect_id },
    );

    expect(driver.expectPending('request_model_turn').tool_results?.[0]).toMatchObject({ status: 'refused' });
  });
});

describe('budgets, cancellation, resume and stop', () => {
  it('records a budget pause without effects and takes the kept operation result after resume', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    const kept = driver.expectPending('call_tool');
    const paused = driver.deliver('budget_exceeded', { which: 'max_operations', limit: 2, used: 2 });

    expect(paused.effects).toEqual([]);
    expect(paused.state_rev).toBe(3);
    expect(statusOf(driver, 'call:c1')).toBe('paused');
    expect(paused.projection?.summary).toBe('Paused: budget max_operations exceeded (used 2 of 2)');

    const resumed = driver.deliver('resumed', { from_checkpoint_no: null });
    expect(resumed.effects).toEqual([]);
    expect(statusOf(driver, 'call:c1')).toBe('in_progress');
    driver.toolResult('ok');
    expect(driver.expectPending('request_model_turn').tool_results?.[0]).toMatchObject({
      call_id: 'c1',
      seq: 5,
    });
    expect(kept.effect_id).toBe('2:0');
  });

  it('re-issues a cancelled operation at once while the run is running, else on resume', () => {
    const running = started();
    running.modelTurn(null, [call('c1', 'lookup')]);
    running.deliver('operation_cancelled', { acknowledged: true }, { effect_id: '2:0' });
    expect(running.expectPending('call_tool')).toMatchObject({ effect_id: '3:0', for_call_id: 'c1' });

    const paused = started();
    paused.status = 'paused';
    const response = paused.deliver('operation_cancelled', { acknowledged: true }, { effect_id: '1:0' });
    expect(response.effects).toEqual([]);
    paused.status = 'running';
    paused.deliver('resumed', { from_checkpoint_no: 1 });
    expect(paused.expectPending('request_model_turn').effect_id).toBe('3:0');
  });

  it('stops without effects and ignores everything afterwards', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    const stopped = driver.deliver('stopped', { reason: 'user' });

    expect(stopped.effects).toEqual([]);
    expect(stateOf(driver).phase).toBe('stopped');
    expect(statusOf(driver, 'call:c1')).toBe('stopped');
    expect(statusOf(driver, 'respond')).toBe('stopped');
    const late = driver.deliver('operation_cancelled', { acknowledged: true }, { effect_id: '2:0' });
    expect(late.state_rev).toBe(stopped.state_rev);
    expect(late.effects).toEqual([]);
  });

  it('ignores events while the run is cancelling', () => {
    const driver = started();
    driver.modelTurn(null, [call('c1', 'lookup')]);
    driver.status = 'cancelling';
    const response = driver.toolResult('ok');

    expect(response.effects).toEqual([]);
    expect(response.diagnostics[0]?.code).toBe('run_not_running');
  });
});

describe('state size on long conversations', () => {
  it('keeps the state the same size after 500 turns with tool calls: the transcript stays in the log', () => {
    const driver = started();
    const sizes: number[] = [];
    for (let turn = 0; turn < 500; turn++) {
      driver.modelTurn(`Looking at item ${turn}.`, [
        call(`c${turn}`, 'lookup', { id: `item-${turn}`, note: 'x'.repeat(200) }),
      ]);
      driver.toolResult({ item: turn, text: 'y'.repeat(2000) });
      driver.modelTurn(`Item ${turn} is fine. Anything else? ${'z'.repeat(1000)}`);
      driver.answer(`Next one please, number ${turn + 1}.`);
      sizes.push(canonicalByteLength(driver.state));
    }

    expect(driver.seq).toBe(1 + 500 * 4);
    expect(stateOf(driver).counters).toMatchObject({ model_turns: 1000, tool_calls: 500 });
    const first = sizes[0] ?? 0;
    const last = sizes.at(-1) ?? 0;
    // Only counters and seq numbers grow (a few digits), never messages or outputs.
    expect(last - first).toBeLessThan(64);
    expect(driver.maxStateBytes).toBeLessThan(4 * 1024);
  });
});
