/**
 * The AI SDK adapter's pure parts: the journal read from a run's events (what a restart
 * replays), the model turn's recorded form and back, and where steers enter the prompt.
 */
import { describe, expect, it } from 'vitest';
import { approvalSubject } from '../../lib/ai-sdk/approval.ts';
import { DurableAgentError } from '../../lib/ai-sdk/errors.ts';
import { journalOf } from '../../lib/ai-sdk/journal.ts';
import { generateResultOf, modelTurnReport, SteerInsertions } from '../../lib/ai-sdk/model-turn.ts';
import { OperationRunner, type OperationSpec } from '../../lib/ai-sdk/operation-runner.ts';
import { createClient } from '../../lib/client/index.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';

const op = (n: number) => `run_1/op/${n}`;
let seq = 0;
const event = (kind: string, data: Record<string, unknown>, operation_id?: string): RunEvent => ({
  seq: ++seq,
  kind: kind as RunEvent['kind'],
  at: seq,
  data,
  ...(operation_id !== undefined ? { operation_id } : {}),
});
const turn = (text: string | null) => ({
  message: { text },
  tool_calls: [],
  finish_reason: 'stop',
  usage: { input_tokens: 3, output_tokens: 1 },
});

describe('journalOf', () => {
  it('lists operations in op order with their results, one entry for an operation begun again', () => {
    const events = [
      event('run_started', { input: 'x' }),
      event('operation_started', { kind: 'model_turn', attempt: 1 }, op(1)),
      event('model_turn_completed', turn('hi'), op(1)),
      event('operation_started', { kind: 'tool_call', attempt: 1, tool: 'lookup' }, op(2)),
      event('lease_taken_over', {}),
      event('operation_started', { kind: 'tool_call', attempt: 2, tool: 'lookup' }, op(2)),
      event(
        'tool_result',
        { tool: 'lookup', envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: 7 } },
        op(2),
      ),
      event('operation_started', { kind: 'tool_call', attempt: 1, tool: 'refund' }, op(3)),
      event(
        'operation_failed',
        { error_class: 'lease_lost', retryable: false, outcome_unknown: true, message: 'x' },
        op(3),
      ),
      event('operation_started', { kind: 'model_turn', attempt: 1 }, op(4)),
    ];
    const journal = journalOf(events.reverse());
    expect(journal.operations.map((o) => [o.opId, o.kind, o.tool, o.result?.kind ?? null])).toEqual([
      [op(1), 'model_turn', undefined, 'model_turn_completed'],
      [op(2), 'tool_call', 'lookup', 'tool_result'],
      [op(3), 'tool_call', 'refund', 'operation_failed'],
      [op(4), 'model_turn', undefined, null],
    ]);
    expect(journal.operations[2]?.result).toMatchObject({ data: { outcome_unknown: true } });
  });

  it('gives each operation the steers consumed before it, and keeps those consumed after the last', () => {
    const journal = journalOf([
      event('steer_consumed', { steer_id: 's1', input: 'first' }),
      event('operation_started', { kind: 'model_turn', attempt: 1 }, op(1)),
      event('model_turn_completed', turn(null), op(1)),
      event('steer_consumed', { steer_id: 's2', input: { note: 'second' } }),
    ]);
    expect(journal.operations[0]?.steersBefore).toEqual(['first']);
    expect(journal.steersAfter).toEqual([{ note: 'second' }]);
  });

  it('refuses a malformed result event, naming its seq', () => {
    const bad = [
      event('operation_started', { kind: 'model_turn', attempt: 1 }, op(1)),
      event('model_turn_completed', { message: 'not an object' }, op(1)),
    ];
    expect(() => journalOf(bad)).toThrow(`event ${bad[1]?.seq} (model_turn_completed) is malformed`);
  });
});

const toolResult = (tool: string, payload: unknown) => ({
  tool,
  envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded', payload },
});
const toolStarted = (n: number, tool: string, callId?: string) =>
  event(
    'operation_started',
    { kind: 'tool_call', attempt: 1, tool, ...(callId !== undefined ? { call_id: callId } : {}) },
    op(n),
  );
const toolSpec = (tool: string, callId: string): OperationSpec => ({
  kind: 'tool_call',
  tool,
  begin: { kind: 'tool_call', request: { tool, args: {}, mutating: true, call_id: callId } },
});
/** A runner over `events` with no live session: it can only replay (its client is never called). */
const replayer = (events: RunEvent[]) =>
  new OperationRunner(createClient({ baseUrl: 'http://127.0.0.1:9' }), 'run_1', journalOf(events), null);
const never = async () => {
  throw new Error('a replay ran live work');
};
const payloadOf = async (runner: OperationRunner, spec: OperationSpec) => {
  const performed = await runner.perform(spec, never);
  return performed.result.kind === 'tool_result' ? performed.result.data.envelope.payload : null;
};

describe('replay matching by call id', () => {
  it('answers each tool call from the operation recorded with its call id, in whatever order the agent asks', async () => {
    const runner = replayer([
      toolStarted(1, 'lookup', 'call_a'),
      event('tool_result', toolResult('lookup', 'A'), op(1)),
      toolStarted(2, 'lookup', 'call_b'),
      event('tool_result', toolResult('lookup', 'B'), op(2)),
    ]);
    expect(await payloadOf(runner, toolSpec('lookup', 'call_b'))).toBe('B');
    expect(await payloadOf(runner, toolSpec('lookup', 'call_a'))).toBe('A');
    expect(runner.replayed).toEqual({ model_turns: 0, tool_calls: 2 });
  });

  it('falls back to position for operations recorded without a call id', async () => {
    const runner = replayer([
      toolStarted(1, 'lookup'),
      event('tool_result', toolResult('lookup', 'first'), op(1)),
      toolStarted(2, 'lookup'),
      event('tool_result', toolResult('lookup', 'second'), op(2)),
    ]);
    expect(await payloadOf(runner, toolSpec('lookup', 'call_y'))).toBe('first');
    expect(await payloadOf(runner, toolSpec('lookup', 'call_x'))).toBe('second');
  });

  it('refuses a call whose id the run never recorded where another call was recorded: replay_mismatch', async () => {
    const runner = replayer([
      toolStarted(1, 'lookup', 'call_a'),
      event('tool_result', toolResult('lookup', 1), op(1)),
    ]);
    const failure = await runner.perform(toolSpec('lookup', 'call_z'), never).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(DurableAgentError);
    expect(failure).toMatchObject({ code: 'replay_mismatch', details: { op_id: op(1) } });
  });
});

describe('the approvals a tool call waited for', () => {
  it('reads each approval of a tool call with its call id and decision; an unanswered one stays open', async () => {
    const subject = await approvalSubject('refund', { order: 42 }, 'call_r');
    const journal = journalOf([
      event('request_opened', { kind: 'approval', request_id: 'run_1/req/1', subject }),
      event('request_resolved', {
        request_id: 'run_1/req/1',
        kind: 'approval',
        decision: 'rejected',
        reason: 'no',
      }),
      event('request_opened', { kind: 'input', request_id: 'run_1/req/2', question: 'why?' }),
      event('request_opened', {
        kind: 'approval',
        request_id: 'run_1/req/3',
        subject: await approvalSubject('refund', { order: 43 }, 'call_s'),
      }),
    ]);
    expect(journal.approvals).toEqual([
      {
        requestId: 'run_1/req/1',
        tool: 'refund',
        callId: 'call_r',
        decision: { decision: 'rejected', reason: 'no' },
      },
      { requestId: 'run_1/req/3', tool: 'refund', callId: 'call_s', decision: null },
    ]);
  });

  it('replays a recorded decision without asking again, matched by call id', async () => {
    const subject = (callId: string) => approvalSubject('refund', {}, callId);
    const runner = replayer([
      event('request_opened', { kind: 'approval', request_id: 'run_1/req/1', subject: await subject('c1') }),
      event('request_resolved', { request_id: 'run_1/req/1', kind: 'approval', decision: 'approved' }),
      event('request_opened', { kind: 'approval', request_id: 'run_1/req/2', subject: await subject('c2') }),
      event('request_closed', { request_id: 'run_1/req/2', reason: 'expired' }),
    ]);
    const ask = async (callId: string) =>
      runner.approval({ tool: 'refund', callId, subject: await subject(callId) });
    expect(await ask('c2')).toEqual({ decision: 'closed', reason: 'expired' });
    expect(await ask('c1')).toEqual({ decision: 'approved', reason: undefined });
    // A third approval the run never opened cannot be asked for once the run ended.
    expect(await ask('c3').catch((err: unknown) => err)).toMatchObject({ code: 'run_terminal' });
  });

  it('does not ask to approve a call the run recorded without an approval: it replays as it ran', async () => {
    const runner = replayer([
      toolStarted(1, 'refund', 'c1'),
      event('tool_result', toolResult('refund', 'ok'), op(1)),
    ]);
    const subject = await approvalSubject('refund', {}, 'c1');
    expect(await runner.approval({ tool: 'refund', callId: 'c1', subject })).toEqual({
      decision: 'approved',
      reason: undefined,
    });
    expect(await payloadOf(runner, toolSpec('refund', 'c1'))).toBe('ok');
  });

  it('binds the subject digest to the tool, its args and the call id', async () => {
    const a = await approvalSubject('refund', { amount: 1, order: 42 }, 'c1');
    expect(a).toMatchObject({
      kind: 'tool_call',
      digest_alg: 'sha256:rfc8785',
      summary: 'refund {"amount":1,"order":42}',
    });
    expect((await approvalSubject('refund', { order: 42, amount: 1 }, 'c1')).digest).toBe(a.digest);
    expect((await approvalSubject('refund', { amount: 2, order: 42 }, 'c1')).digest).not.toBe(a.digest);
    expect((await approvalSubject('refund', { amount: 1, order: 42 }, 'c2')).digest).not.toBe(a.digest);
    expect(a.digest).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the recorded form of a model turn', () => {
  it('keeps text, client tool calls, finish reason and tokens, and rebuilds the same generate result', () => {
    const report = modelTurnReport({
      content: [
        { type: 'text', text: 'Let me ' },
        { type: 'text', text: 'check.' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"id": "42"}' },
        { type: 'tool-call', toolCallId: 'c2', toolName: 'echo', input: '"plain"' },
        { type: 'tool-call', toolCallId: 'c3', toolName: 'search', input: '{}', providerExecuted: true },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_use' },
      usage: {
        inputTokens: { total: 12, noCache: 12, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      },
      warnings: [],
    });
    expect(report).toMatchObject({
      message: { text: 'Let me check.' },
      tool_calls: [
        { call_id: 'c1', name: 'lookup', args: { id: '42' } },
        { call_id: 'c2', name: 'echo', args: { ai_sdk_input_json: '"plain"' } },
      ],
      finish_reason: 'tool-calls',
      usage: { input_tokens: 12, output_tokens: 0 },
    });
    const replayed = generateResultOf({ ...report, message: { text: report.message.text ?? null } });
    expect(replayed.content).toEqual([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"id":"42"}' },
      { type: 'tool-call', toolCallId: 'c2', toolName: 'echo', input: '"plain"' },
    ]);
    expect(replayed.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool-calls' });
    expect(replayed.usage.inputTokens.total).toBe(12);
  });

  it('maps a finish reason the AI SDK does not know to other', () => {
    expect(generateResultOf({ ...turn('x'), finish_reason: 'end_turn' }).finishReason).toEqual({
      unified: 'other',
      raw: 'end_turn',
    });
  });
});

describe('SteerInsertions', () => {
  const user = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] });
  it('puts a turn’s steers after its prompt and keeps them there in every later prompt', () => {
    const steers = new SteerInsertions();
    const first = [user('task')];
    expect(steers.apply(first, ['steer A'])).toEqual([user('task'), user('steer A')]);
    const later = [
      user('task'),
      { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'ok' }] },
    ];
    expect(steers.apply(later, [])).toEqual([user('task'), user('steer A'), later[1]]);
  });
});
