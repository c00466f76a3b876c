/**
 * The console's fifth round of words: when a client-driven run last heard from its client and
 * what happens if it does not come back, one primary id per tool call, event rows in words with
 * their kind as a tag, times and an approval gate's fields glossed, what a steer does on a
 * conversation run, and the event number (seq) named.
 */
import { describe, expect, it } from 'vitest';
import { clientHeardText } from '../../console/src/model/driver.ts';
import {
  EVENT_TERM_HINTS,
  GATE_HINTS,
  SCRIPTED_CALL_ID_NOTE,
  gateLines,
  jsonTermHints,
  timeFieldLines,
} from '../../console/src/model/event-terms.ts';
import { describeEvent, EVENT_KIND_WORDS, eventWords } from '../../console/src/model/events.ts';
import { steerWords } from '../../console/src/model/run-mode.ts';
import {
  detailText,
  MODEL_CALL_ID_HINT,
  MODEL_CALL_ID_LABEL,
  SEQ_HINT,
  seqHint,
  stamp,
} from '../../console/src/model/words.ts';
import { type RunEvent, RunEventKind } from '../../lib/contracts/index.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const record = (patch: Record<string, unknown> = {}) =>
  consoleRecord({ run_id: 'run_3f2a9c0d11223344556677889900aabb', ...patch });

describe('when a client-driven run last heard from its client', () => {
  const held = (expires_at: number) =>
    record({ status: 'running', lease: { owner: 'my-loop', expires_at }, updated_at: T0 - 180_000 });

  it('says how long ago, and by when the client must come back before the runtime lets go', () => {
    expect(clientHeardText(held(T0 + 60_000), T0)).toBe(
      'Last heard from its client 3 min ago (its last write to the run). If the client does not come ' +
        `back by ${stamp(T0 + 60_000)}, its hold on the run ends: the runtime then lets go of the run ` +
        'and the run waits for a client to take it again.',
    );
    expect(clientHeardText({ ...held(T0 + 60_000), updated_at: T0 }, T0)).toMatch(
      /^Last heard from its client just now/,
    );
  });

  it('says the hold ended once it has, and that the run then waits for a client', () => {
    expect(clientHeardText(held(T0 - 5_000), T0)).toBe(
      'Last heard from its client 3 min ago (its last write to the run). Its hold on the run ended ' +
        `at ${stamp(T0 - 5_000)}: the runtime lets go of the run and the run waits for a client to take it again.`,
    );
  });

  it('says nothing on a server-driven run or one no client holds', () => {
    const server = record({
      status: 'running',
      reducer: { function_path: 'lib/reducers/agent-loop.js' },
      lease: { owner: 'w1@1/step', expires_at: T0 + 60_000 },
    });
    expect(clientHeardText(server, T0)).toBeNull();
    expect(clientHeardText(record({ status: 'queued' }), T0)).toBeNull();
  });
});

describe('one primary id per tool call', () => {
  it("names the operation the call's id and labels the model's id plainly", () => {
    expect(MODEL_CALL_ID_LABEL).toBe("the model's id for this call");
    expect(MODEL_CALL_ID_HINT).toContain("It is not the run's own id for the call: that is the operation");
    expect(MODEL_CALL_ID_HINT).toContain('The scripted model names its calls after the model turn');
    expect(
      detailText({ op_id: 'run_3f2a9c0d11223344/op/4', call_id: 'scripted-run_3f2a9c0d11223344/op/3' }),
    ).toBe("operation run_3f2a9c…/op/4 · the model's id for this call scripted-run_3f2a9c…/op/3");
  });

  it("glosses a call_id in an event's JSON as the model's id, not the run's", () => {
    expect(jsonTermHints({ tool: 'charge', call_id: 'scripted-run_1/op/3' })).toEqual([
      `${EVENT_TERM_HINTS.call_id} ${SCRIPTED_CALL_ID_NOTE}`,
    ]);
    expect(EVENT_TERM_HINTS.call_id).toMatch(/^call_id: the model's id for this call/);
  });
});

describe("an event row's text", () => {
  it('reads in words for every kind, never the kind name itself', () => {
    for (const kind of RunEventKind.options) {
      expect(EVENT_KIND_WORDS[kind]).not.toBe('');
      expect(EVENT_KIND_WORDS[kind]).not.toContain('_');
    }
    expect(eventWords('tool_result')).toBe('Tool answered');
    expect(eventWords('lease_taken_over')).toBe('Taken over by the runtime');
    // A kind from a newer server reads as its name with spaces.
    expect(eventWords('lease_acquired')).toBe('lease acquired');
  });

  it('reads an operation start without its raw kind name', () => {
    const started = {
      seq: 3,
      kind: 'operation_started',
      at: T0,
      data: { kind: 'tool_call', tool: 'charge', attempt: 1 },
    } as RunEvent;
    expect(describeEvent(started)).toBe('tool call · charge · attempt 1');
  });
});

describe("an approval gate's JSON and its times", () => {
  const gated = {
    kind: 'approval',
    request_id: 'run_1/req/1',
    effect_id: '2:0',
    subject: {
      kind: 'tool_call',
      digest: 'sha256:rfc8785:ab12',
      digest_alg: 'sha256:rfc8785',
      summary: 'Call charge 1.0.0 (policy rule pay_review)',
      changes: { tool: 'charge', version: '1.0.0', args: { amount: 42 } },
    },
    opened_at: T0,
    expires_at: null,
    gate: true,
  };

  it('reads ms epoch fields as times in the page style, and a null expiry as never', () => {
    expect(timeFieldLines(gated, stamp)).toEqual([
      `opened_at: ${stamp(T0)} (local time)`,
      'expires_at: null: it never expires',
    ]);
    expect(timeFieldLines({ nested: { finished_at: T0 + 1_000 } }, stamp)).toEqual([
      `finished_at: ${stamp(T0 + 1_000)} (local time)`,
    ]);
    // A count or a seq that happens to end in _at is not a time.
    expect(timeFieldLines({ event_seq: 7, cut_at: 12 }, stamp)).toEqual([]);
  });

  it("glosses the gate's fields in words, only for an approval the gate opened", () => {
    const lines = gateLines(gated);
    expect(lines[0]).toBe(GATE_HINTS.gate);
    expect(lines[0]).toContain("the service's policy gate opened this approval itself");
    expect(lines.join(' ')).toContain('a fingerprint of that exact call');
    expect(gateLines({ ...gated, gate: undefined })).toEqual([]);
    expect(gateLines(null)).toEqual([]);
  });
});

describe('what a steer does, by the kind of run', () => {
  it('calls it your next message on a conversation run, and says what happens to an open question', () => {
    const words = steerWords('conversation', false);
    expect(words.label).toBe('Steer the run: your next message to the agent');
    expect(words.button).toBe('Send steer (your message)');
    expect(words.hint).toMatch(/^On a conversation run a steer is your next message to the agent\./);
    expect(words.hint).toContain('that request is withdrawn and the agent answers this message instead');
    expect(words.hint).toContain('it ends only when someone stops it');
    expect(words.hint).not.toContain('task');
  });

  it('says a task run takes it between two steps, and a client-driven run leaves it to its code', () => {
    expect(steerWords('task', false).hint).toMatch(/^On a task run a steer adds to the task/);
    expect(steerWords('task', false).label).toBe('Steer the run');
    expect(steerWords(null, true).hint).toContain("A client-driven run's own code decides what a steer does");
    expect(steerWords(null, false).hint).toContain("The run's reducer reads the message");
  });
});

describe("an event's number", () => {
  it('names it event #N and says what the seq is', () => {
    expect(seqHint(12)).toBe("event #N is an event's number in the run's log, its seq (1 to 12)");
    expect(SEQ_HINT).toContain('event #N is the N-th (the API calls the number its seq)');
  });
});
