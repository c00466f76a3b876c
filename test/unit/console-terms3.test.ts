/**
 * The console's third round of words: what the usage counts count, who paused or stopped a run,
 * what a takeover's epoch and a lost operation mean, a stopped run's plan and its quiet reducer
 * answers, short ids, the parked result's card, the approval's why, and the past view's hints.
 */
import { describe, expect, it } from 'vitest';
import { budgetBars, MODEL_CALLS_HINT, pauseText } from '../../console/src/model/budgets.ts';
import { describeEvent, EVENT_KIND_HINTS, isQuietEvent } from '../../console/src/model/events.ts';
import {
  approvalKindText,
  approvalWhy,
  digestHint,
  RESULT_WORDS,
} from '../../console/src/model/request-words.ts';
import { PAST_STATE_HINT, PAST_STATUS_HINT, requestLine } from '../../console/src/model/time-travel.ts';
import { planStatusText, reasonText, shortId } from '../../console/src/model/words.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const RUN = 'run_3f2a9c0d11223344556677889900aabb';

const event = (kind: RunEvent['kind'], data: Record<string, unknown>): RunEvent =>
  ({ seq: 9, kind, at: T0, data }) as RunEvent;

const record = (patch: Record<string, unknown> = {}) =>
  consoleRecord({ run_id: RUN, subject: { workspace: 'ws', path: '/t' }, turn: 0, ...patch });

describe('usage counts', () => {
  it('says operations count when they end, and a lost model turn counts a call', () => {
    const bars = budgetBars(record(), T0);
    const ops = bars.find((b) => b.limit === 'max_operations');
    expect(ops?.label).toBe('operations ended');
    expect(ops?.hint).toContain('One still in flight is counted when it ends;');
    expect(ops?.hint).not.toContain('started');
    expect(bars.find((b) => b.limit === 'max_model_calls')?.hint).toBe(MODEL_CALLS_HINT);
    expect(MODEL_CALLS_HINT).toContain('includes a call a lost worker or client may have made');
    // One word for model turns everywhere.
    expect(bars.find((b) => b.limit === 'max_turns')?.label).toBe('model turns');
  });
});

describe('who paused or stopped a run', () => {
  it('reads the default control reasons as a person', () => {
    expect(reasonText('paused by control')).toBe('paused by a person (a pause control)');
    expect(reasonText('stopped by control')).toBe('stopped by a person (a stop control)');
    expect(reasonText('user_asked')).toBe('user asked');
    const paused = record({
      status: 'paused',
      pause_reason: 'paused by control',
      paused_from: 'queued',
      paused_at: T0,
    });
    expect(pauseText(paused)).toBe('paused by a person (a pause control)');
    expect(describeEvent(event('paused', { reason: 'paused by control' }))).toBe(
      'paused by a person (a pause control)',
    );
    expect(describeEvent(event('stopped', { reason: 'stopped by control' }))).toBe(
      'stopped by a person (a stop control)',
    );
  });

  it('says after a stop that the reducer is told and answers nothing, dimmed', () => {
    expect(describeEvent(event('request_closed', { request_id: `${RUN}/req/1`, reason: 'stopped' }))).toBe(
      'run_3f2a9c…/req/1 closed: the run was stopped',
    );
    const nothing = event('reducer_answered', { event_seq: 8, state_rev: 2, effects: [] });
    expect(describeEvent(nothing)).toBe(
      'it read event #8 and asks for nothing new: what it asked for earlier still stands',
    );
    expect(isQuietEvent(nothing)).toBe(true);
    expect(isQuietEvent(event('reducer_answered', { event_seq: 8, effects: [{ kind: 'call_tool' }] }))).toBe(
      false,
    );
    expect(EVENT_KIND_HINTS.stopped).toContain('the reducer is told of the stop');
  });

  it("says a stopped or paused run's plan stopped there", () => {
    expect(planStatusText('stopped')).toBe(
      'The run was stopped, so the plan stopped here: items still pending will not run.',
    );
    expect(planStatusText('paused')).toContain('it goes on when the run is resumed');
    expect(planStatusText('running')).toBeNull();
    expect(planStatusText('completed')).toBeNull();
  });
});

describe('a takeover and a lost operation', () => {
  it('explains the epoch, and names the worker or client for a lost operation', () => {
    expect(describeEvent(event('lease_taken_over', { previous_owner: 'my-loop', previous_epoch: 1 }))).toBe(
      'the runtime let go of the run (held by my-loop, hold number 1: the epoch, each new holder gets the next number)',
    );
    const lost = describeEvent(
      event('operation_failed', {
        error_class: 'lease_expired',
        retryable: false,
        outcome_unknown: true,
        message: 'the worker running this operation was lost; its outcome is unknown',
      }),
    );
    expect(lost).toBe(
      'the worker or client running this operation was lost; its outcome is unknown. ' +
        'If it may have written something, check whether the write applied before you retry. (lease_expired)',
    );
    const other = describeEvent(
      event('operation_failed', {
        error_class: 'timeout',
        retryable: false,
        outcome_unknown: true,
        message: 'x',
      }),
    );
    expect(other).toBe(
      'x (timeout) Its outcome is unknown: check whether its write applied before you retry.',
    );
  });
});

describe('ids and a parked result', () => {
  it('shows run ids short, and leaves other text alone', () => {
    expect(shortId(`scripted-${RUN}/op/1`)).toBe('scripted-run_3f2a9c…/op/1');
    expect(shortId(`${RUN}/op/2`)).toBe('run_3f2a9c…/op/2');
    expect(shortId('call_1')).toBe('call_1');
  });

  it('names the delivery key apart from Resume, explains the envelope and a paused run', () => {
    expect(RESULT_WORDS.keyHint).toContain('Not the Resume control');
    expect(RESULT_WORDS.bodyHint).toContain('the runtime’s standard result shape');
    expect(RESULT_WORDS.paused).toContain('reads it once it is resumed');
    expect(
      describeEvent(
        event('request_opened', { kind: 'result', tool: 'wait', resume_key: `callback:${RUN}/op/2` }),
      ),
    ).toBe('for the tool wait (delivery key callback:run_3f2a9c…/op/2)');
    expect(
      requestLine({
        kind: 'result',
        request_id: 'r',
        effect_id: '1:0',
        tool: 'wait',
        resume_key: 'k',
        op_id: 'o',
        opened_at: T0,
        expires_at: null,
      } as Parameters<typeof requestLine>[0]),
    ).toBe('result of wait (delivery key k)');
  });
});

describe('an approval and the past', () => {
  it("says what is approved, why, and what the digest's rfc8785 is", () => {
    expect(approvalKindText('tool_call')).toBe('a tool call');
    expect(approvalWhy('tool_call')).toContain('the tool policy requires a person');
    expect(
      approvalWhy(
        'tool_call',
        true,
        'Call echo 1.0.0 (read-only, risk low; policy rule echo_needs_a_person)',
      ),
    ).toBe(
      "Why: the tool policy's rule echo_needs_a_person requires a person to approve this call before it runs.",
    );
    expect(approvalWhy('tool_call', false)).toBe(
      "Why: the run's client asked a person to approve this before it goes on.",
    );
    expect(digestHint('tool_call')).toContain('under "The call: tool, version and arguments"');
    expect(digestHint('tool_call')).not.toMatch(/rfc8785|digest_mismatch|Changes/);
  });

  it('says the status then may hide a wait, and whose state it shows', () => {
    expect(PAST_STATUS_HINT).toContain('does not always tell running from waiting');
    expect(PAST_STATE_HINT).toBe("The agent's own state at that revision, as its reducer stored it.");
  });
});
