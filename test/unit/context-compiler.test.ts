import { describe, expect, it } from 'vitest';
import { RunEvent } from '../../lib/contracts/index.ts';
import {
  CONTEXT_EVENT_INVALID,
  ContextCompileError,
  compileContext,
  storedManifest,
  syntheticResultContent,
  toolResultContent,
} from '../../lib/core/context-compiler.ts';
import { eventsFromRecording } from '../../lib/models/recorded.ts';
import { loadTrajectories, toRecordedConversation } from '../../lib/models/tau-bench.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

type Ev = RunEvent;
let nextSeq = 0;
function ev(kind: Ev['kind'], data: Record<string, unknown>, extra: Partial<Ev> = {}): Ev {
  nextSeq++;
  return { seq: nextSeq, kind, at: 0, data, ...extra };
}
function reset(): void {
  nextSeq = 0;
}
function envelope(fields: Record<string, unknown>): Record<string, unknown> {
  return { envelope: 'raisin.tool-result/1', status: 'succeeded', ...fields };
}
const usage = { input_tokens: 1, output_tokens: 1 };

describe('compileContext', () => {
  it('turns the relevant events into system, user, assistant and tool messages in seq order', () => {
    reset();
    const events = [
      ev('run_started', { input: 'Book me a flight' }),
      ev('operation_started', { kind: 'model_turn' }),
      ev('model_turn_completed', {
        message: { text: 'Looking it up' },
        tool_calls: [{ call_id: 'c1', name: 'search', args: { from: 'JFK' } }],
        finish_reason: 'tool_calls',
        usage,
      }),
      ev('tool_result', {
        call_id: 'c1',
        tool: '/lib/air/search',
        envelope: envelope({ payload: 'HAT001' }),
      }),
      ev('model_turn_completed', {
        message: { text: 'Which seat?' },
        tool_calls: [],
        finish_reason: 'stop',
        usage,
      }),
      ev('request_opened', { request_id: 'r/1', kind: 'input' }),
      ev('request_resolved', { request_id: 'r/1', kind: 'input', value: { text: 'Aisle' } }),
      ev('steer_queued', { steer_id: 's/1' }),
      ev('steer_consumed', { steer_id: 's/1', input: 'And no insurance' }),
      ev('reducer_answered', {}),
    ];

    const { messages, manifest } = compileContext(events, { instructions: 'You are an airline agent.' });

    expect(messages).toEqual([
      { role: 'system', content: 'You are an airline agent.' },
      { role: 'user', content: 'Book me a flight' },
      {
        role: 'assistant',
        content: 'Looking it up',
        tool_calls: [{ call_id: 'c1', name: 'search', args: { from: 'JFK' } }],
      },
      { role: 'tool', call_id: 'c1', name: 'search', content: 'HAT001' },
      { role: 'assistant', content: 'Which seat?', tool_calls: [] },
      { role: 'user', content: 'Aisle' },
      { role: 'user', content: 'And no insurance' },
    ]);
    expect(manifest).toEqual({
      from_seq: 1,
      to_seq: 10,
      included: [
        { seq: 1, kind: 'run_started', role: 'user' },
        { seq: 3, kind: 'model_turn_completed', role: 'assistant' },
        { seq: 4, kind: 'tool_result', role: 'tool' },
        { seq: 5, kind: 'model_turn_completed', role: 'assistant' },
        { seq: 7, kind: 'request_resolved', role: 'user' },
        { seq: 9, kind: 'steer_consumed', role: 'user' },
      ],
      excluded: [],
    });
  });

  it('lists in the manifest what could have been a message and was cut, with why', () => {
    reset();
    const events = [
      ev('run_started', { input: null }),
      ev('model_turn_completed', {
        message: { text: null },
        tool_calls: [{ call_id: 'c1', name: 'search', args: {} }],
        finish_reason: 'tool_calls',
        usage,
      }),
      ev('operation_failed', {
        call_id: 'c1',
        message: 'timeout',
        error_class: 'timeout',
        retryable: true,
        outcome_unknown: false,
      }),
      ev('tool_result', { call_id: 'c1', tool: 'search', envelope: envelope({ payload: 'ok' }) }),
      ev('tool_result', {
        tool: '/lib/raisin/agent-runs/delegate',
        envelope: envelope({ status: 'waiting', resume_key: 'child:r' }),
      }),
      ev('tool_result', { tool: 'audit', envelope: envelope({ payload: 'logged' }) }),
      ev('request_resolved', { request_id: 'r/1', kind: 'approval', decision: 'approved' }),
    ];

    const { manifest } = compileContext(events);

    expect(manifest.included.map((i) => i.seq)).toEqual([2, 4]);
    expect(manifest.excluded).toEqual([
      { seq: 1, kind: 'run_started', reason: 'no_text' },
      { seq: 3, kind: 'operation_failed', reason: 'superseded' },
      { seq: 5, kind: 'tool_result', reason: 'waiting' },
      { seq: 6, kind: 'tool_result', reason: 'reducer_call' },
      { seq: 7, kind: 'request_resolved', reason: 'not_an_answer' },
    ]);
  });

  it('reads events in seq order whatever order they are given in, once per seq', () => {
    reset();
    const a = ev('run_started', { input: 'first' });
    const b = ev('steer_consumed', { steer_id: 's', input: 'second' });
    const { messages } = compileContext([b, a, b]);
    expect(messages.map((m) => m.role === 'user' && m.content)).toEqual(['first', 'second']);
  });

  it('renders user inputs: string verbatim, {text} as its text, other JSON canonically, null as nothing', () => {
    reset();
    const events = [
      ev('run_started', { input: { text: 'hello', lang: 'en' } }),
      ev('steer_consumed', { steer_id: 's', input: { b: 2, a: [1, 'x'] } }),
      ev('request_resolved', { request_id: 'r', kind: 'input', value: 42 }),
      ev('request_resolved', { request_id: 'r2', kind: 'input' }),
      ev('steer_consumed', { steer_id: 's2', input: null }),
    ];
    const { messages, manifest } = compileContext(events);
    expect(messages).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'user', content: '{"a":[1,"x"],"b":2}' },
      { role: 'user', content: '42' },
    ]);
    expect(manifest.included.map((i) => i.seq)).toEqual([1, 2, 3]);
  });

  it('skips approvals, waiting results, results without call id and failures without call id', () => {
    reset();
    const events = [
      ev('run_started', { input: 'go' }),
      ev('request_resolved', {
        request_id: 'r',
        kind: 'approval',
        decision: 'approved',
        subject_digest: 'd',
      }),
      ev('tool_result', {
        call_id: 'c1',
        tool: 't',
        envelope: envelope({ status: 'waiting', resume_key: 'k' }),
      }),
      ev('tool_result', { tool: 't', envelope: envelope({ payload: 'reducer-only call' }) }),
      ev('operation_failed', {
        error_class: 'timeout',
        retryable: true,
        outcome_unknown: false,
        message: 'model',
      }),
      ev('budget_exceeded', { which: 'tokens', limit: 1, used: 2 }),
    ];
    const { messages, manifest } = compileContext(events);
    expect(messages).toEqual([{ role: 'user', content: 'go' }]);
    expect(manifest.included).toEqual([{ seq: 1, kind: 'run_started', role: 'user' }]);
    expect(manifest.to_seq).toBe(6);
  });

  it('answers a tool call whose operation failed with "Error: <message>"', () => {
    reset();
    const events = [
      ev('model_turn_completed', {
        message: {},
        tool_calls: [{ call_id: 'c9', name: 'cancel_reservation', args: { id: 'X' } }],
        finish_reason: 'tool_calls',
        usage,
      }),
      ev('operation_failed', {
        call_id: 'c9',
        error_class: 'tool_error',
        retryable: false,
        outcome_unknown: true,
        message: 'lease taken over',
      }),
    ];
    const { messages, manifest } = compileContext(events);
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ call_id: 'c9', name: 'cancel_reservation', args: { id: 'X' } }],
      },
      { role: 'tool', call_id: 'c9', name: 'cancel_reservation', content: 'Error: lease taken over' },
    ]);
    expect(manifest.included[1]).toEqual({ seq: 2, kind: 'operation_failed', role: 'tool' });
  });

  it('shows a retried tool call once, with the success that followed its failed attempts', () => {
    reset();
    const failed = (message: string) =>
      ev('operation_failed', {
        call_id: 'c1',
        tool: '/lib/air/search',
        error_class: 'timeout',
        retryable: true,
        outcome_unknown: false,
        message,
      });
    const events = [
      ev('model_turn_completed', {
        message: {},
        tool_calls: [{ call_id: 'c1', name: 'search', args: {} }],
        finish_reason: 'tool_calls',
        usage,
      }),
      failed('attempt 1 timed out'),
      failed('attempt 2 timed out'),
      ev('tool_result', {
        call_id: 'c1',
        tool: '/lib/air/search',
        envelope: envelope({ payload: 'HAT001' }),
      }),
    ];
    const { messages, manifest } = compileContext(events);
    expect(messages.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', call_id: 'c1', name: 'search', content: 'HAT001' },
    ]);
    expect(manifest.included.map((i) => i.seq)).toEqual([1, 4]);
  });

  it('shows a call that failed on every attempt once, with its last failure', () => {
    reset();
    const failed = (message: string) =>
      ev('operation_failed', {
        call_id: 'c1',
        error_class: 'timeout',
        retryable: true,
        outcome_unknown: false,
        message,
      });
    const turn = (text: string | null, calls: { call_id: string; name: string; args: object }[]) =>
      ev('model_turn_completed', { message: { text }, tool_calls: calls, finish_reason: 'stop', usage });
    const events = [
      turn(null, [{ call_id: 'c1', name: 'search', args: {} }]),
      failed('first'),
      failed('last'),
      turn('Sorry', []),
      // A later turn reusing the id: its failure belongs to that turn, not to the first one.
      turn(null, [{ call_id: 'c1', name: 'search', args: {} }]),
      failed('again'),
    ];
    const tools = compileContext(events).messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual(['Error: last', 'Error: again']);
  });

  it("answers a call refused at approval with the reducer's own text, before the next user message", () => {
    reset();
    const events = [
      ev('run_started', { input: 'Cancel my booking and check seats' }),
      ev('model_turn_completed', {
        message: { text: null },
        tool_calls: [
          { call_id: 'c1', name: 'cancel_reservation', args: { id: 'X' } },
          { call_id: 'c2', name: 'get_seats', args: {} },
        ],
        finish_reason: 'tool_calls',
        usage,
      }),
      ev('request_opened', { request_id: 'r/1', kind: 'approval' }),
      ev('request_resolved', {
        request_id: 'r/1',
        kind: 'approval',
        decision: 'rejected',
        subject_digest: 'd',
      }),
      ev('tool_result', { call_id: 'c2', tool: '/lib/air/seats', envelope: envelope({ payload: '12A' }) }),
      ev('steer_consumed', { steer_id: 's', input: 'never mind' }),
    ];
    const refusal =
      'Not executed: the user did not approve this call. Do not repeat it unless the user asks for it.';
    const answers = [{ call_id: 'c1', name: 'cancel_reservation', content: refusal }];
    const { messages, manifest } = compileContext(events, { answers });
    expect(messages).toEqual([
      { role: 'user', content: 'Cancel my booking and check seats' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { call_id: 'c1', name: 'cancel_reservation', args: { id: 'X' } },
          { call_id: 'c2', name: 'get_seats', args: {} },
        ],
      },
      { role: 'tool', call_id: 'c2', name: 'get_seats', content: '12A' },
      { role: 'tool', call_id: 'c1', name: 'cancel_reservation', content: refusal },
      { role: 'user', content: 'never mind' },
    ]);
    // Answers are not events: the manifest lists the log only.
    expect(manifest.included.map((i) => i.seq)).toEqual([1, 2, 5, 6]);
    // Without the answer the call gets the runtime's synthetic result, never none.
    const unanswered = compileContext(events);
    expect(unanswered.messages.filter((m) => m.role === 'tool').map((m) => [m.call_id, m.content])).toEqual([
      ['c2', '12A'],
      ['c1', syntheticResultContent('no_result')],
    ]);
    expect(unanswered.manifest.synthesized).toEqual([{ call_id: 'c1', reason: 'no_result' }]);
  });

  it('places an answer after the latest turn that issued its call id, and never twice for one call', () => {
    reset();
    const turn = (name: string) =>
      ev('model_turn_completed', {
        message: { text: null },
        tool_calls: [{ call_id: 'dup', name, args: {} }],
        finish_reason: 'tool_calls',
        usage,
      });
    const events = [
      turn('first'),
      ev('tool_result', { call_id: 'dup', tool: '/lib/t', envelope: envelope({ payload: 'ok' }) }),
      turn('second'),
    ];
    const answers = [
      { call_id: 'dup', content: 'Not executed.' },
      { call_id: 'dup', content: 'duplicate' },
      { call_id: 'never-issued', content: 'orphan' },
    ];
    expect(compileContext(events, { answers }).messages.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', call_id: 'dup', name: 'first', content: 'ok' },
      { role: 'tool', call_id: 'dup', name: 'second', content: 'Not executed.' },
    ]);
    // The log's own tool message wins over an answer for the same call.
    const failedCall = [
      turn('cancel'),
      ev('operation_failed', {
        call_id: 'dup',
        error_class: 'tool_error',
        retryable: false,
        outcome_unknown: false,
        message: 'boom',
      }),
    ];
    const tools = compileContext(failedCall, {
      answers: [{ call_id: 'dup', content: 'Error (tool_error): boom' }],
    }).messages.filter((m) => m.role === 'tool');
    expect(tools).toEqual([{ role: 'tool', call_id: 'dup', name: 'cancel', content: 'Error: boom' }]);
  });

  it('names a tool message after the latest call that used its call id, else after data.tool', () => {
    reset();
    const turn = (name: string) =>
      ev('model_turn_completed', {
        message: { text: null },
        tool_calls: [{ call_id: 'dup', name, args: {} }],
        finish_reason: 'tool_calls',
        usage,
      });
    const result = (callId: string) =>
      ev('tool_result', { call_id: callId, tool: '/lib/t', envelope: envelope({ payload: 'ok' }) });
    const events = [turn('first'), result('dup'), turn('second'), result('dup'), result('unknown')];
    const names = compileContext(events).messages.flatMap((m) => (m.role === 'tool' ? [m.name] : []));
    expect(names).toEqual(['first', 'second', '/lib/t']);
  });

  it('windows the log with from_seq and to_seq and reports the window in the manifest', () => {
    reset();
    const events = [
      ev('run_started', { input: 'a' }),
      ev('steer_consumed', { steer_id: 's1', input: 'b' }),
      ev('steer_consumed', { steer_id: 's2', input: 'c' }),
      ev('steer_consumed', { steer_id: 's3', input: 'd' }),
    ];
    const windowed = compileContext(events, { from_seq: 2, to_seq: 3 });
    expect(windowed.messages).toEqual([
      { role: 'user', content: 'b' },
      { role: 'user', content: 'c' },
    ]);
    expect(windowed.manifest).toMatchObject({ from_seq: 2, to_seq: 3 });
    expect(compileContext(events, { from_seq: 9 }).manifest).toEqual({
      from_seq: 9,
      to_seq: 8,
      included: [],
      excluded: [],
    });
  });

  it('fails loudly with context_event_invalid on a relevant event whose data breaks its contract', () => {
    reset();
    const bad = ev('model_turn_completed', {
      message: { text: 'x' },
      tool_calls: [{ call_id: '', name: 'n', args: {} }],
    });
    let caught: unknown;
    try {
      compileContext([bad]);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ContextCompileError);
    expect(caught).toMatchObject({ code: CONTEXT_EVENT_INVALID, seq: 1, kind: 'model_turn_completed' });
  });
});

describe('storedManifest', () => {
  it('keeps the included events as seq ranges, and the window and exclusions as they are', () => {
    const stored = storedManifest({
      from_seq: 1,
      to_seq: 12,
      included: [1, 2, 3, 5, 8, 9].map((seq) => ({ seq, kind: 'user_input', role: 'user' })),
      excluded: [{ seq: 4, kind: 'tool_result', reason: 'waiting' }],
    });
    expect(stored).toEqual({
      from_seq: 1,
      to_seq: 12,
      included: [
        [1, 3],
        [5, 5],
        [8, 9],
      ],
      excluded: [{ seq: 4, kind: 'tool_result', reason: 'waiting' }],
    });
  });

  it('stores a long unbroken window as one range', () => {
    const included = Array.from({ length: 1000 }, (_, i) => ({ seq: i + 1, kind: 'x', role: 'user' }));
    expect(storedManifest({ from_seq: 1, to_seq: 1000, included }).included).toEqual([[1, 1000]]);
  });
});

describe('toolResultContent', () => {
  const base = {
    envelope: 'raisin.tool-result/1' as const,
    reads: [],
    writes: [],
    artifact_refs: [],
    evidence: [],
  };
  const rest = { diagnostics: [], suggested_next_actions: [] };
  const diag = (severity: 'error' | 'warning', message: string) => ({ code: 'x', severity, message });

  it('shows a string payload verbatim, even an empty one or on a failed result', () => {
    expect(toolResultContent({ ...base, ...rest, status: 'succeeded', payload: 'Error: seat taken' })).toBe(
      'Error: seat taken',
    );
    expect(toolResultContent({ ...base, ...rest, status: 'succeeded', payload: '' })).toBe('');
    expect(
      toolResultContent({
        ...base,
        ...rest,
        status: 'failed',
        payload: 'raw',
        diagnostics: [diag('error', 'no')],
      }),
    ).toBe('raw');
  });

  it('shows a failed result without string payload as "Error: " and its first error diagnostic', () => {
    const diagnostics = [diag('warning', 'slow'), diag('error', 'flight HAT030 not available')];
    expect(toolResultContent({ ...base, ...rest, status: 'failed', diagnostics, payload: { a: 1 } })).toBe(
      'Error: flight HAT030 not available',
    );
    expect(
      toolResultContent({ ...base, ...rest, status: 'blocked', diagnostics: [diag('warning', 'w')] }),
    ).toBe('Error: w');
  });

  it('shows a non-string payload as canonical JSON and a bare result as its status', () => {
    expect(
      toolResultContent({ ...base, ...rest, status: 'succeeded', payload: { z: 1, a: [true, null] } }),
    ).toBe('{"a":[true,null],"z":1}');
    expect(toolResultContent({ ...base, ...rest, status: 'succeeded', payload: 299 })).toBe('299');
    expect(toolResultContent({ ...base, ...rest, status: 'retryable', error_class: 'rate_limited' })).toBe(
      'Error: rate_limited',
    );
    expect(toolResultContent({ ...base, ...rest, status: 'failed' })).toBe('Error: failed');
    expect(toolResultContent({ ...base, ...rest, status: 'succeeded' })).toBe('{"status":"succeeded"}');
  });
});

describe('compileContext on the 160 recorded tau-bench airline conversations', () => {
  it('reproduces every recorded conversation, and every prefix before an assistant turn, exactly', async () => {
    const trajectories = await loadTrajectories(`${TAU_BENCH_DIR}/trajectories.json`);
    expect(trajectories).toHaveLength(160);
    let prefixes = 0;
    let errorOutputs = 0;
    for (const traj of trajectories) {
      const recording = toRecordedConversation(traj);
      const opts = { instructions: recording.system ?? undefined };

      const events = eventsFromRecording(recording);
      for (const event of events) expect(RunEvent.safeParse(event).success).toBe(true);
      const full = compileContext(events, opts);
      expect(full.messages).toStrictEqual(recording.messages);
      expect(full.manifest.included).toHaveLength(recording.messages.length - 1);

      recording.messages.forEach((message, i) => {
        if (message.role !== 'assistant') return;
        const prefix = compileContext(eventsFromRecording(recording, { upTo: i }), opts);
        expect(prefix.messages).toStrictEqual(recording.messages.slice(0, i));
        prefixes++;
      });
      errorOutputs += recording.messages.filter(
        (m) => m.role === 'tool' && m.content.startsWith('Error: '),
      ).length;
    }
    // 1955 assistant turns in the data set; 66 tool outputs travel as failed envelopes.
    expect(prefixes).toBe(1955);
    expect(errorOutputs).toBe(66);
  });

  it('pairs every call with a result, labelling one it synthesized with how the call ended', () => {
    reset();
    const call = (id: string) => ({ call_id: id, name: `t_${id}`, args: {} });
    const events = [
      ev('run_started', { input: 'go' }),
      ev('model_turn_completed', {
        message: { text: null },
        tool_calls: ['a', 'b', 'c', 'd', 'e'].map(call),
        finish_reason: 'tool_calls',
        usage,
      }),
      ev('tool_result', { call_id: 'a', tool: 't_a', envelope: envelope({ payload: 'A' }) }),
      ev('operation_started', { kind: 'tool_call', attempt: 1, tool: 't_b' }),
      ev('operation_cancelled', { acknowledged: true, before_dispatch: true, call_id: 'b' }),
      ev('operation_cancelled', { acknowledged: true, call_id: 'c' }),
      ev('request_opened', { request_id: 'r/1', kind: 'result', call_id: 'd', resume_key: 'k' }),
      ev('request_closed', { request_id: 'r/1', reason: 'expired' }),
      ev('stopped', { reason: 'stopped by control' }),
    ];

    const { messages, manifest } = compileContext(events);

    const tools = messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => [m.call_id, m.name, m.content])).toEqual([
      ['a', 't_a', 'A'],
      ['b', 't_b', syntheticResultContent('not_run')],
      ['c', 't_c', syntheticResultContent('cancelled')],
      ['d', 't_d', syntheticResultContent('outcome_unknown')],
      ['e', 't_e', syntheticResultContent('stopped')],
    ]);
    expect(messages.at(-1)).toEqual(tools.at(-1));
    expect(manifest.synthesized?.map((x) => x.reason)).toEqual([
      'not_run',
      'cancelled',
      'outcome_unknown',
      'stopped',
    ]);
    expect(syntheticResultContent('not_run')).toMatch(
      /^Error: no result \(synthesized by the runtime\): .*did not run/,
    );
    // Synthetic results are not events: the manifest's included list is the log's.
    expect(manifest.included.map((i) => i.kind)).toEqual([
      'run_started',
      'model_turn_completed',
      'tool_result',
    ]);
  });

  it('synthesizes nothing when every call has a result, and places a synthetic one before the next user message', () => {
    reset();
    const started = ev('run_started', { input: 'go' });
    const turn = ev('model_turn_completed', {
      message: { text: null },
      tool_calls: [{ call_id: 'x', name: 'lookup', args: {} }],
      finish_reason: 'tool_calls',
      usage,
    });
    const result = ev('tool_result', { call_id: 'x', tool: 'lookup', envelope: envelope({ payload: 'X' }) });
    const steer = ev('steer_consumed', { steer_id: 's1', input: 'stop that' });

    const answered = compileContext([started, turn, result]);
    const steered = compileContext([started, turn, steer]);

    expect(answered.manifest.synthesized).toBeUndefined();
    expect(answered.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(steered.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(steered.manifest.synthesized).toEqual([{ call_id: 'x', reason: 'no_result' }]);
  });
});
