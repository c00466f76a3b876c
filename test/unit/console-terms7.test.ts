/**
 * The console's seventh round of words (a newcomer's trial of the console): the environment
 * badge's hint, an ended run's outcome beside its status in the list, no "0" model turns for a
 * run whose model has not answered; on a run page the reducer's artifact hash, the agent loop
 * named only for itself, its own last plan item, a reducer's answer as a sentence, a turn's
 * tokens in and out, the bars' legend and the transcript link; on a client-driven run what a
 * model call counts, a wrapped result's default status, the tool-result envelope and pinned;
 * on an approval where the risk comes from, the digest's prefix and the reason's reach.
 */
import { describe, expect, it } from 'vitest';
import { eventWords as cliEventWords } from '../../bin/commands/event-words.ts';
import { MODEL_CALLS_HINT, modelCallsHint } from '../../console/src/model/budgets.ts';
import { EVENT_TERM_HINTS, jsonTermHints } from '../../console/src/model/event-terms.ts';
import { DEFAULT_STATUS_NOTE, describeEvent, eventTone, TONE_WORDS } from '../../console/src/model/events.ts';
import { LIST_HINTS, outcomeText, turnText } from '../../console/src/model/list-words.ts';
import { digestAlgText, REASON_HINT, TOOL_SUMMARY_HINT } from '../../console/src/model/request-words.ts';
import {
  ARTIFACT_HASH_HINT,
  environmentHint,
  planItemNote,
  RESPOND_ITEM_NOTE,
  REDUCER_HINT,
  reducerGloss,
  TRANSCRIPT_LINK_HINT,
  tokensText,
} from '../../console/src/model/words.ts';
import { publicRun, RUN_EVENT_KINDS, type RunEvent } from '../../lib/contracts/index.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/paths.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const ended = { lease: null, operation: null, open_requests: [], finished_at: T0 + 1 };

describe("the runs list's words", () => {
  it('says what the local badge means', () => {
    expect(environmentHint('local')).toContain('the local stack started with npm start');
    expect(environmentHint('prod')).toBe(
      'prod: the name of the deployment this console talks to (its environment).',
    );
  });

  it("shows a completed run's outcome and a failed run's reason beside its status", () => {
    const done = consoleRecord({
      ...ended,
      status: 'completed',
      outcome: 'succeeded',
      terminal_reason: 'completed',
    });
    expect(outcomeText(publicRun(done))).toBe('succeeded');
    const failed = consoleRecord({ ...ended, status: 'failed', terminal_reason: 'budget_exceeded' });
    expect(outcomeText(publicRun(failed))).toBe('budget exceeded');
    const stopped = consoleRecord({ ...ended, status: 'stopped', terminal_reason: 'stopped' });
    expect(outcomeText(publicRun(stopped))).toBe('');
    expect(outcomeText(publicRun(consoleRecord()))).toBe('');
    expect(LIST_HINTS.status).toContain('completed: ended with an outcome (succeeded, partial or blocked');
  });

  it('leaves the model turns cell empty while the model has not answered, and says why', () => {
    expect(turnText(0)).toBe('');
    expect(turnText(3)).toBe('3');
    expect(LIST_HINTS.turn).toContain('a reducer that calls no model');
  });
});

describe('a server-driven run page', () => {
  const answer = (effects: { kind: string }[]) =>
    ({
      seq: 11,
      kind: 'reducer_answered',
      at: T0,
      data: { event_seq: 10, state_rev: 2, effects },
    }) as RunEvent;

  it("names the reducer's hash an artifact hash, and the agent loop only for the built-in one", () => {
    expect(ARTIFACT_HASH_HINT).toMatch(/^The artifact hash: the SHA-256 of the reducer's code/);
    expect(reducerGloss(AGENT_LOOP_PATH)).toBe(
      'the code that decides each next step of the run: the built-in agent loop',
    );
    expect(reducerGloss('/agents/one-tool')).toBe('the code that decides each next step of the run');
    expect(REDUCER_HINT).not.toContain('agent loop');
  });

  it("says the agent loop's last plan item is its own, not the user's", () => {
    expect(planItemNote('respond', true)).toBe(RESPOND_ITEM_NOTE);
    expect(planItemNote('respond', false)).toBe('');
    expect(planItemNote('call:c1', true)).toBe('');
  });

  it("reads a reducer's answer as a sentence, and an answer to an approval as the call going on", () => {
    expect(describeEvent(answer([{ kind: 'request_model_turn' }]))).toBe(
      'it read event #10 and asks for a model turn',
    );
    expect(describeEvent(answer([{ kind: 'call_tool' }, { kind: 'complete' }]))).toBe(
      'it read event #10 and calls a tool, then completes the run',
    );
    const approved = { kind: 'request_resolved', data: { kind: 'approval', decision: 'approved' } } as const;
    expect(describeEvent(answer([]), false, false, approved)).toBe(
      'it read event #10 and asks for nothing new: the call the approval held back, asked for earlier, now goes on',
    );
    // The CLI keeps its own sentence, with the same effect words.
    expect(cliEventWords(answer([{ kind: 'call_tool' }]))).toBe('answered event #10: calls a tool');
  });

  it("splits a model turn's tokens in and out, as the usage line does", () => {
    const turn = {
      seq: 5,
      kind: 'model_turn_completed',
      at: T0,
      data: {
        message: { role: 'assistant', text: 'hello' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 21, output_tokens: 23 },
      },
    } as RunEvent;
    expect(describeEvent(turn)).toBe('hello · 21 in / 23 out tokens');
    expect(tokensText(1200, 1)).toBe('1,200 in / 1 out token');
  });

  it('has a legend line for every bar colour, and marks the transcript link as another page', () => {
    for (const kind of RUN_EVENT_KINDS) expect(TONE_WORDS[eventTone(kind)].length).toBeGreaterThan(5);
    expect(TRANSCRIPT_LINK_HINT).toContain('on its own page');
  });
});

describe('a client-driven run page', () => {
  const result = (envelope: Record<string, unknown>) =>
    ({ seq: 5, kind: 'tool_result', at: T0, data: { tool: 'add', envelope } }) as RunEvent;

  it('says a model call is one reported turn when the client drives the run', () => {
    expect(modelCallsHint(true)).toBe(MODEL_CALLS_HINT);
    expect(modelCallsHint(false)).toContain('each turn it reports counts as one model call');
  });

  it("says a wrapped answer's succeeded is the runtime's default, not the tool's", () => {
    const wrapped = {
      envelope: 'raisin.tool-result/1',
      status: 'succeeded',
      legacy: true,
      payload: { sum: 5 },
    };
    expect(describeEvent(result(wrapped))).toBe(`add: succeeded ${DEFAULT_STATUS_NOTE}`);
    const own = { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: { sum: 5 } };
    expect(describeEvent(result(own))).toBe('add: succeeded');
  });

  it('names the tool-result envelope and what pinned means for a client-driven run', () => {
    const lines = jsonTermHints({ tool: 'add', envelope: { envelope: 'raisin.tool-result/1', reads: [] } });
    expect(lines).toContain(EVENT_TERM_HINTS.envelope);
    expect(EVENT_TERM_HINTS.envelope).toMatch(
      /^envelope: the tool-result envelope \(raisin\.tool-result\/1\)/,
    );
    expect(jsonTermHints({ pinned: { catalogue: 0, policy: 2, agents: 0 } })).toEqual([
      EVENT_TERM_HINTS.pinned,
    ]);
    expect(EVENT_TERM_HINTS.pinned).toContain("a client-driven run's client runs its own tools");
  });
});

describe('a run waiting for approval', () => {
  it("says where a tool's risk comes from, an unregistered risk tier included", () => {
    expect(TOOL_SUMMARY_HINT).toContain("the risk is the registration's risk tier, low when it names none");
  });

  it("reads the digest's sha256:rfc8785 prefix out, and nothing for another", () => {
    expect(digestAlgText(`sha256:rfc8785:${'ab'.repeat(32)}`)).toMatch(
      /^sha256:rfc8785: the SHA-256 of the request's canonical JSON \(RFC 8785/,
    );
    expect(digestAlgText('ab12')).toBeUndefined();
  });

  it('says the reason goes with either answer', () => {
    expect(REASON_HINT).toContain('Approve or Reject');
  });

  it('words a refused control in plain words first, its code after, as the console guide promises', () => {
    const refused = {
      seq: 4,
      kind: 'control_rejected',
      at: T0,
      data: { command: 'approve', reason: 'digest_mismatch' },
    } as RunEvent;
    const text = describeEvent(refused);
    expect(text.startsWith('approve refused: what you approved is not what the run asks now')).toBe(true);
    expect(text.endsWith('(digest_mismatch)')).toBe(true);
    const unknown = describeEvent({
      ...refused,
      data: { command: 'stop', reason: 'some_new_reason' },
    } as RunEvent);
    expect(unknown).toBe('stop refused: some new reason');
  });
});
