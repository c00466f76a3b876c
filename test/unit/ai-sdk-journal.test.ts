/**
 * The AI SDK adapter's pure parts: the journal read from a run's events (what a restart
 * replays), the model turn's recorded form and back, and where steers enter the prompt.
 * Issue 28, point 2.
 */
import { describe, expect, it } from 'vitest';
import { journalOf } from '../../lib/ai-sdk/journal.ts';
import { generateResultOf, modelTurnReport, SteerInsertions } from '../../lib/ai-sdk/model-turn.ts';
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
