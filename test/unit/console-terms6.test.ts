/**
 * The console's and CLI's sixth round of words: the scripted model's note only for an id that
 * looks like an operation's, a plan item's one id, the approval card in plain words, a request's
 * headline by what it asks, a reducer answer with no new steps, a client's hold running out,
 * and `runs get` continuing a text's further lines.
 */
import { describe, expect, it } from 'vitest';
import { formatRequest, formatWaiting } from '../../bin/commands/format.ts';
import { eventWords as cliEventWords } from '../../bin/commands/event-words.ts';
import { callOperations } from '../../console/src/model/call-ops.ts';
import {
  callIdTermHint,
  EVENT_TERM_HINTS,
  GATE_HINTS,
  SCRIPTED_CALL_ID_NOTE,
} from '../../console/src/model/event-terms.ts';
import { describeEvent, EVENT_KIND_HINTS, eventHeadline } from '../../console/src/model/events.ts';
import { needsYouText, statusNoteText } from '../../console/src/model/list-words.ts';
import { digestHint } from '../../console/src/model/request-words.ts';
import { USAGE_HINTS } from '../../console/src/model/run-words.ts';
import {
  MODEL_CALL_ID_HINT,
  modelCallIdHint,
  planItemDetail,
  planSummaryText,
  REDUCER_HINT,
} from '../../console/src/model/words.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const event = (kind: string, data: Record<string, unknown>, extra: Partial<RunEvent> = {}) =>
  ({ seq: 9, kind, at: T0, data, ...extra }) as RunEvent;

describe("the scripted model's note on a call id", () => {
  it('is said only when the id looks like an operation id', () => {
    expect(callIdTermHint('call-1')).toBe(EVENT_TERM_HINTS.call_id);
    expect(callIdTermHint('call-1')).not.toContain('scripted');
    expect(callIdTermHint('scripted-run_1/op/3')).toBe(
      `${EVENT_TERM_HINTS.call_id} ${SCRIPTED_CALL_ID_NOTE}`,
    );
    expect(modelCallIdHint('call-1')).not.toContain('scripted');
    expect(modelCallIdHint('scripted-run_1/op/3')).toBe(MODEL_CALL_ID_HINT);
  });
});

describe("a plan item's one id", () => {
  const detail = { call_id: 'scripted-run_f618d6aa11/op/1', tool: 'wait_for_callback', attempts: 1 };

  it("names the tool once, leads with the call's own operation and folds the model's id", () => {
    const ops = new Map([['scripted-run_f618d6aa11/op/1', 'run_f618d6aa11/op/2']]);
    expect(planItemDetail('Call wait_for_callback', detail, (id) => ops.get(id))).toEqual({
      text: 'operation run_f618d6…/op/2 · 1 attempt',
      modelCallId: 'scripted-run_f618d6aa11/op/1',
    });
    // Without a known operation the model's id is still folded, never the row's id.
    expect(planItemDetail('Call wait_for_callback', detail)).toEqual({
      text: '1 attempt',
      modelCallId: 'scripted-run_f618d6aa11/op/1',
    });
    expect(planItemDetail('Write the report', { note: 'half done' })).toEqual({ text: 'note half done' });
  });

  it("finds a call's operation in the events and the record", () => {
    const ops = callOperations(
      [
        event('tool_result', { call_id: 'c1', tool: 'echo' }, { operation_id: 'run_1/op/2' }),
        event('operation_cancelled', { acknowledged: true, call_id: 'c2' }, { operation_id: 'run_1/op/4' }),
        event('request_opened', { kind: 'result', call_id: 'c3', op_id: 'run_1/op/6' }),
        event('operation_started', { kind: 'tool_call', tool: 'echo' }, { operation_id: 'run_1/op/8' }),
      ],
      { open_requests: [], operation: null },
    );
    expect([...ops]).toEqual([
      ['c1', 'run_1/op/2'],
      ['c2', 'run_1/op/4'],
      ['c3', 'run_1/op/6'],
    ]);
  });

  it('says finished, not done, of the tool calls, and usage says a made call counts', () => {
    expect(planSummaryText('Running tools (0 of 1 tool calls done)')).toBe(
      'Running tools (0 of 1 tool calls finished)',
    );
    expect(planSummaryText('Thinking; plan 1 of 2 done')).toBe('Thinking; plan 1 of 2 done');
    expect(USAGE_HINTS.toolCalls).toMatch(/^A tool call counts once it was made, its result in or not/);
  });
});

describe('the approval card', () => {
  it('names the fold that is there, and says in plain words what a changed call does', () => {
    const hint = digestHint('tool_call');
    expect(hint).toContain('"The call: tool, version and arguments"');
    expect(hint).toContain('if the call changed meanwhile, the approval is refused');
    expect(hint).not.toMatch(/rfc8785|digest_mismatch|Changes/);
    expect(GATE_HINTS.effect_id).toMatch(/^effect_id: the id the reducer gave the step/);
    expect(GATE_HINTS.request_id).toContain('approve and reject');
  });
});

describe("a timeline row's headline", () => {
  it('asks a person only for an approval or a question; a result waits for an outside system', () => {
    expect(eventHeadline(event('request_opened', { kind: 'approval' }))).toBe('Asked a person to approve');
    expect(eventHeadline(event('request_opened', { kind: 'input' }))).toBe('Asked a person a question');
    const result = event('request_opened', { kind: 'result', tool: 'wait_for_callback', resume_key: 'k' });
    expect(eventHeadline(result)).toBe('Waiting for an outside result');
    expect(describeEvent(result)).toBe('for the tool wait_for_callback (delivery key k)');
  });

  it('reads a reducer answer with no new steps, and says when the run had ended', () => {
    const none = event('reducer_answered', { event_seq: 8, state_rev: 2, effects: [] });
    expect(eventHeadline(none)).toBe('The reducer answered');
    expect(describeEvent(none)).toBe(
      'it read event #8 and asks for nothing new: what it asked for earlier still stands',
    );
    expect(describeEvent(none, false, true)).toBe('it read event #8 and asks for nothing: the run had ended');
    expect(cliEventWords(none)).toBe('answered event #8 with no new steps');
    expect(EVENT_KIND_HINTS.reducer_answered.startsWith(REDUCER_HINT)).toBe(true);
    expect(REDUCER_HINT).toBe('The reducer: the code that decides each next step of the run.');
  });

  it("says a client's hold ran out and the runtime let go, never that it took the run back", () => {
    const swept = event('lease_taken_over', { previous_owner: 'abandon-1', previous_epoch: 1 });
    expect(eventHeadline(swept)).toBe("The client's hold ran out");
    expect(describeEvent(swept)).toMatch(/^the runtime let go of the run \(held by abandon-1/);
    const worker = event('lease_taken_over', { previous_owner: 'w1@1700/step', previous_epoch: 2 });
    expect(eventHeadline(worker)).toBe('Taken over by the runtime');
    expect(`${describeEvent(swept)} ${describeEvent(worker)}`).not.toMatch(/back|sweeper/);
  });

  it('leads a lost operation with the words, its code after', () => {
    const lost = event('operation_failed', {
      error_class: 'lease_expired',
      retryable: false,
      outcome_unknown: true,
      message: 'lost',
    });
    expect(describeEvent(lost)).toMatch(
      /^the worker or client running this operation was lost;.*\(lease_expired\)$/,
    );
  });
});

describe('the runs list', () => {
  it('says a client-driven run waits for its client by its status, not under Needs you', () => {
    const idle = consoleRecord({ status: 'queued' });
    expect(statusNoteText(idle)).toBe('waits for its client');
    expect(needsYouText(idle.open_requests)).toBe('');
  });
});

describe('runs get continues a text over lines', () => {
  it('prints a newline in a waiting reason as an indented line, other controls escaped', () => {
    expect(formatWaiting([{ text: 'asks: {"a":1}\nDone.\u001b', commands: [] }])).toEqual([
      '  asks: {"a":1}',
      '    Done.\\u001b',
    ]);
    // The watch view's one-line request keeps escaping.
    expect(
      formatRequest({
        kind: 'input',
        request_id: 'run_1/req/1',
        effect_id: '1:0',
        question: 'a\nb',
        opened_at: 0,
        expires_at: null,
      }),
    ).toBe('question run_1/req/1: a\\u000ab');
  });
});
