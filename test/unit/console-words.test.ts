/**
 * The console's words for people (console/src/model): who drives a run without lease jargon on
 * server-driven runs, why an abandoned client-driven run still reads running and how the
 * sweeper's period and its takeover estimate agree, the modes where a question appears, the
 * grouped kind filter and a line per kind, pause reasons, the runs list's words, turn outcomes
 * and wrapped tool results in the transcript, dollars, short digests and plurals.
 */
import { describe, expect, it } from 'vitest';
import { formatUsd, pauseText } from '../../console/src/model/budgets.ts';
import { driverWords } from '../../console/src/model/driver.ts';
import {
  describeEvent,
  EVENT_KIND_GROUPS,
  EVENT_KIND_HINTS,
  kindFilterHint,
  matchesKindFilter,
} from '../../console/src/model/events.ts';
import { leaseView, observeLease } from '../../console/src/model/lease.ts';
import { LIST_HINTS, needsYouText, shownText, statusNoteText } from '../../console/src/model/list-words.ts';
import { runModeOf } from '../../console/src/model/run-mode.ts';
import { legacyMatters, transcriptOf } from '../../console/src/model/transcript.ts';
import { noPlanText, plural, shortDigest } from '../../console/src/model/words.ts';
import { RUN_EVENT_KINDS, type RunRecord } from '../../lib/contracts/index.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const REDUCER = { function_path: '/lib/raisin/ai/agent-run-reducer', artifact_hash: 'sha256:abc' };

const record = (patch: Record<string, unknown> = {}) => consoleRecord({ epoch: 2, ...patch });

const TIMINGS = { sweep_interval_ms: 10_000, clock_skew_ms: 30_000 };
const wordsAt = (run: RunRecord, now: number) =>
  driverWords(run, leaseView(run, now, observeLease(null, run, T0), TIMINGS), TIMINGS);

describe('who drives the run', () => {
  it('speaks of a worker, never a lease or an epoch, on a server-driven run', () => {
    const idle = wordsAt(record({ reducer: REDUCER, status: 'queued' }), T0);
    expect(idle).toMatchObject({
      term: 'Driven by',
      text: 'the service: a worker picks the run up as soon as it has work',
      warn: false,
    });
    expect(idle.hint).toContain('server-driven');
    const held = record({
      reducer: REDUCER,
      status: 'running',
      lease: { owner: 'step-1', expires_at: T0 + 30_000 },
    });
    expect(wordsAt(held, T0).text).toBe('the service: a worker is on it now');
    const dead = wordsAt(held, T0 + 31_000);
    expect(dead).toMatchObject({
      warn: true,
      // Expired 1 s ago: the 30 s skew allowance, then up to one 10 s sweeper period.
      text: 'the service: its worker stopped responding; another takes over in about 39 seconds',
    });
    for (const w of [idle, wordsAt(held, T0), dead]) expect(w.text).not.toMatch(/lease|epoch|no worker/i);
    expect(dead.note).not.toMatch(/lease/i);
  });

  it('says why a client-driven run whose client stopped renewing still reads running, and when the sweeper acts', () => {
    const run = record({ status: 'running', lease: { owner: 'laptop-1', expires_at: T0 + 5_000 } });
    const words = wordsAt(run, T0 + 8_000);
    // Two plain sentences, not a chain of "which" clauses.
    expect(words.text).toBe(
      'the client laptop-1. Its hold on the run ran out 3 seconds ago: it stopped renewing it.',
    );
    expect(words.note).toContain(
      'still reads "running" because a client-driven run ends only when its client ends it',
    );
    // Expired 3 s ago: the 30 s skew allowance, then up to one 10 s sweeper period: 27 + 10.
    expect(words.note).toContain(
      'Its hold on the run (its lease) ran out 3 seconds ago. The service checks for stalled runs every ' +
        '10 seconds (the sweeper). It frees a hold once the hold is 30 seconds past its end, to allow ' +
        'for clocks that differ between machines: within about 37 seconds.',
    );
    expect(words.note).toContain('The run then waits (status queued) for a client to take it again.');
    expect(words.note).toContain('The service never ends the run itself.');
    // The technical words once each, in parentheses; none of "a lost lease go" or "waits, queued".
    expect(words.note?.match(/lease/g)).toHaveLength(1);
    expect(words.note?.match(/sweeper/g)).toHaveLength(1);
    expect(words.note).not.toMatch(/lost lease|waits, queued/);
  });

  it('says a live client must renew its hold, and when the hold runs out', () => {
    const run = record({ status: 'running', lease: { owner: 'my-loop', expires_at: T0 + 25_000 } });
    expect(wordsAt(run, T0).text).toBe(
      'the client my-loop. It must renew its hold on the run (its lease) while it works; unless renewed, the hold runs out in 25 seconds.',
    );
  });

  it('says a released client-driven run waits for a client, and nothing for an ended one', () => {
    expect(wordsAt(record({ status: 'queued' }), T0).note).toBe(
      'The run waits for a client to take it again: nothing else moves a client-driven run.',
    );
    expect(
      wordsAt(
        record({ status: 'completed', outcome: 'succeeded', terminal_reason: 'completed', finished_at: T0 }),
        T0,
      ).note,
    ).toBeUndefined();
  });
});

describe('the words around a run', () => {
  it('reads the mode from run_started, conversation by default for the agent reducer only', () => {
    const started = (context: unknown) => ({ kind: 'run_started' as const, data: { input: 'x', context } });
    expect(runModeOf(started({ mode: 'task' }), true)).toBe('task');
    expect(runModeOf(started({}), true)).toBe('conversation');
    expect(runModeOf(started({ mode: 'task' }), false)).toBeNull();
    expect(runModeOf(undefined, true)).toBeNull();
  });

  it('puts every event kind in exactly one group, and filters by group or kind', () => {
    const grouped = EVENT_KIND_GROUPS.flatMap((g) => g.kinds);
    expect([...grouped].sort()).toEqual([...RUN_EVENT_KINDS].sort());
    expect(new Set(grouped).size).toBe(grouped.length);
    expect(matchesKindFilter({ kind: 'tool_result' }, 'group:Model and tools')).toBe(true);
    expect(matchesKindFilter({ kind: 'paused' }, 'group:Model and tools')).toBe(false);
    expect(matchesKindFilter({ kind: 'paused' }, 'paused')).toBe(true);
    expect(matchesKindFilter({ kind: 'paused' }, '')).toBe(true);
  });

  it('says why a run paused without the status it paused from', () => {
    const paused = (pause_reason: string) =>
      record({ status: 'paused', pause_reason, paused_from: 'queued', paused_at: T0 });
    expect(pauseText(paused('budget_exceeded:max_turns'))).toBe('the max turns budget is used up');
    expect(pauseText(paused('provider_outage'))).toBe('the model provider is unavailable');
    expect(pauseText(paused('user_asked'))).toBe('user asked');
  });

  it('shows digests without their algorithm, and counts in singular and plural', () => {
    expect(shortDigest(`sha256:rfc8785:${'ab'.repeat(32)}`)).toBe(`${'ab'.repeat(6)}…`);
    expect(shortDigest('abc')).toBe('abc');
    expect(plural(1, 'model call')).toBe('1 model call');
    expect(plural(0, 'model call')).toBe('0 model calls');
    expect(plural(1200, 'token')).toBe('1,200 tokens');
  });
});

describe('the words a newcomer asked about', () => {
  it('says what the run waits on a person for, and what the count line counts', () => {
    expect(needsYouText([{ kind: 'approval' }, { kind: 'input' }, { kind: 'input' }])).toBe(
      '1 approval to decide, 2 questions to answer',
    );
    expect(needsYouText([{ kind: 'result' }])).toBe('1 result to deliver');
    // A client-driven run nobody holds waits for its client: a note by its status, not a thing
    // for you to do; an ended or held one says nothing.
    const client = record({ status: 'queued' });
    expect(statusNoteText(client)).toBe('waits for its client');
    expect(needsYouText(client.open_requests)).toBe('');
    expect(statusNoteText(record({ status: 'queued', reducer: REDUCER }))).toBe('');
    expect(
      statusNoteText(record({ status: 'running', lease: { owner: 'my-loop', expires_at: T0 + 1 } })),
    ).toBe('');
    expect(LIST_HINTS.needsYou).toContain('results to deliver');
    expect(shownText(4, 4, false)).toBe('4 runs');
    expect(shownText(1, 4, true)).toBe(
      '1 run matches the filters, of 4 loaded; older runs not loaded yet (Load more)',
    );
  });

  it('has a line for every event kind, shown for a one-kind filter only', () => {
    for (const kind of RUN_EVENT_KINDS) expect(EVENT_KIND_HINTS[kind].length).toBeGreaterThan(10);
    expect(kindFilterHint('capability_gap')).toBe(EVENT_KIND_HINTS.capability_gap);
    expect(kindFilterHint('group:Model and tools')).toBeUndefined();
    expect(kindFilterHint('')).toBeUndefined();
  });

  it('reads a reducer answer as what the reducer decided', () => {
    const answered = describeEvent({
      seq: 11,
      kind: 'reducer_answered',
      at: T0,
      data: {
        event_seq: 10,
        state_rev: 2,
        effects: [
          { effect_id: 'e1', kind: 'call_tool' },
          { effect_id: 'e2', kind: 'complete' },
        ],
      },
    });
    expect(answered).toBe('it read event #10 and calls a tool, then completes the run');
  });

  it('says why a run has no plan by whether it has a reducer', () => {
    expect(noPlanText(true)).toContain('the reducer');
    expect(noPlanText(false)).toContain("moved by its client's own code");
    expect(noPlanText(false)).not.toContain('has not');
  });

  it("shows a turn outcome's words, and marks a wrapped tool result only when it claims writes or evidence", () => {
    const usage = { input_tokens: 20, output_tokens: 5 };
    const [turn] = transcriptOf([
      {
        seq: 3,
        kind: 'model_turn_completed',
        at: T0,
        data: {
          message: { text: null },
          tool_calls: [],
          finish_reason: 'stop',
          usage,
          turn_outcome: {
            'outcome/ref': 'o1',
            'turn/ref': 'op1',
            'binding/ref': 'run_1',
            'agent/id': 'me',
            status: 'completed',
            'reason/code': 'completed',
            retryability: 'terminal',
            'product/ref': 'prod-1',
            'product/digest': 'sha256:ab',
            'budget/reserved': {},
            'budget/charged': usage,
            'usage/fidelity': 'host-measured',
            'selected/at': '2026-12-03T10:00:00Z',
            'selected/by': 'my-agent',
          },
        },
      },
    ]);
    expect(turn).toMatchObject({
      kind: 'assistant',
      tokens: { input: 20, output: 5 },
      outcome: {
        status: 'completed: completed',
        product: 'product prod-1',
        usage: 'as the host measured them',
        by: 'my-agent',
      },
    });
    const wrapped = {
      envelope: 'raisin.tool-result/1' as const,
      status: 'succeeded' as const,
      legacy: true,
      reads: [],
      writes: [],
      artifact_refs: [],
      evidence: [],
      diagnostics: [],
      suggested_next_actions: [],
      payload: 'hello',
    };
    expect(legacyMatters(wrapped)).toBe(false);
    expect(legacyMatters({ ...wrapped, evidence: [{ kind: 'read_back', ok: true }] })).toBe(true);
    expect(
      legacyMatters({ ...wrapped, legacy: undefined, evidence: [{ kind: 'read_back', ok: true }] }),
    ).toBe(false);
  });

  it('shows dollars with two significant digits under a cent', () => {
    expect(formatUsd(0)).toBe('$0');
    expect(formatUsd(0.000423)).toBe('$0.00042');
    expect(formatUsd(1.254)).toBe('$1.25');
  });
});
