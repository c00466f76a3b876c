/** The keys and lines of `agent-runs watch` (bin/commands/watch-model.ts), over synthetic runs. */
import { describe, expect, it } from 'vitest';
import {
  ACK_LINES,
  actionOfKey,
  EVENT_LINES,
  initialState,
  keyHelp,
  requestLines,
  withAck,
  withEvent,
} from '../../bin/commands/watch-model.ts';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { newRun } from '../support/runs.ts';

const T = 1_700_000_000_000;
const approval = {
  kind: 'approval',
  request_id: 'run-1/req/1',
  effect_id: 'e',
  subject: { kind: 'tool_call', digest: 'd1', digest_alg: 'sha256', summary: 'Call charge' },
  opened_at: T,
  expires_at: null,
};
const question = {
  kind: 'input',
  request_id: 'run-1/req/2',
  effect_id: 'f',
  question: 'Which color?',
  opened_at: T,
  expires_at: null,
};
const waiting = {
  ...newRun({}, T),
  status: 'waiting',
  lease: null,
  operation: null,
  open_requests: [approval, question],
} as unknown as RunRecord;

describe('agent-runs watch: keys and lines', () => {
  it('approves or rejects the selected approval with its digest, and answers only a question', () => {
    const state = initialState(waiting, 'ws');
    expect(actionOfKey(state, 'a')).toEqual({
      kind: 'approve',
      request_id: 'run-1/req/1',
      digest: 'd1',
      decision: 'approved',
    });
    expect(actionOfKey(state, 'r')).toMatchObject({ kind: 'approve', decision: 'rejected' });
    expect(actionOfKey(state, 'n')).toEqual({ kind: 'none' });
    const second = { ...state, selected: 1 };
    expect(actionOfKey(state, '2')).toEqual({ kind: 'select', index: 1 });
    expect(actionOfKey(state, '3')).toEqual({ kind: 'none' });
    expect(actionOfKey(second, 'a')).toEqual({ kind: 'none' });
    expect(actionOfKey(second, 'n')).toEqual({
      kind: 'mode',
      mode: { kind: 'text', purpose: 'answer', request_id: 'run-1/req/2' },
    });
    expect(requestLines(second)).toEqual([
      '  1. approval run-1/req/1: Call charge  (digest d1)',
      '> 2. question run-1/req/2: Which color?',
    ]);
    expect(keyHelp(state)).toBe('1-9 select · a approve · r reject · s steer · p pause · x stop · q quit');
  });

  it('offers only the controls that apply to the run’s status, and ignores the others', () => {
    const inStatus = (status: string, extra: Record<string, unknown> = {}) =>
      initialState({ ...waiting, open_requests: [], status, ...extra } as unknown as RunRecord, 'ws');
    const help: Record<string, string> = {};
    for (const status of [
      'queued',
      'running',
      'waiting',
      'paused',
      'cancelling',
      'completed',
      'failed',
      'stopped',
    ]) {
      help[status] = keyHelp(inStatus(status));
    }
    expect(help).toEqual({
      queued: 's steer · p pause · x stop · q quit',
      running: 's steer · p pause · x stop · q quit',
      waiting: 's steer · p pause · x stop · q quit',
      paused: 's steer · u resume · x stop · q quit',
      cancelling: 'q quit',
      completed: 'q quit',
      failed: 'q quit',
      stopped: 'q quit',
    });
    const ended = inStatus('completed');
    for (const key of ['s', 'p', 'u', 'x']) expect(actionOfKey(ended, key)).toEqual({ kind: 'none' });
    expect(actionOfKey(ended, 'q')).toEqual({ kind: 'quit' });
    // A stop confirmed after the run ended sends nothing.
    expect(actionOfKey({ ...ended, mode: { kind: 'confirm_stop' } }, 'y')).toEqual({
      kind: 'mode',
      mode: { kind: 'keys' },
    });
    const paused = inStatus('paused');
    expect(actionOfKey(paused, 'p')).toEqual({ kind: 'none' });
    expect(actionOfKey(paused, 'u')).toEqual({ kind: 'resume' });
    expect(actionOfKey(inStatus('running'), 'u')).toEqual({ kind: 'none' });
    expect(actionOfKey(inStatus('running'), 'p')).toEqual({ kind: 'pause' });
  });

  it('asks before it stops, and keeps anything but y from stopping', () => {
    const state = initialState(waiting, 'poll');
    const confirming = { ...state, mode: { kind: 'confirm_stop' } as const };
    expect(actionOfKey(state, 'x')).toEqual({ kind: 'mode', mode: { kind: 'confirm_stop' } });
    expect(actionOfKey(confirming, 'y')).toEqual({ kind: 'stop' });
    expect(actionOfKey(confirming, 'a')).toEqual({ kind: 'mode', mode: { kind: 'keys' } });
  });

  it('keeps the last events once each, and the last acks', () => {
    let state = initialState(waiting, 'sse');
    const event = (seq: number) => ({ seq, at: T, kind: 'note', data: {} }) as unknown as RunEvent;
    for (let seq = 1; seq <= EVENT_LINES + 3; seq += 1)
      state = withEvent(withEvent(state, event(seq)), event(seq));
    expect(state.events.map((e) => e.seq)).toEqual(Array.from({ length: EVENT_LINES }, (_, i) => i + 4));
    for (let n = 0; n < ACK_LINES + 1; n += 1)
      state = withAck(state, `pause ${n}`, { ack: 'applied', seq: n } as never);
    expect(state.acks).toHaveLength(ACK_LINES);
    expect(state.acks.at(-1)).toBe(`pause ${ACK_LINES}: applied (seq ${ACK_LINES})`);
  });
});
