/**
 * The console's seventh round of words (a newcomer's trial of the console): the environment
 * badge's hint, an ended run's outcome beside its status in the list, and no "0" model turns for
 * a run whose model has not answered.
 */
import { describe, expect, it } from 'vitest';
import { LIST_HINTS, outcomeText, turnText } from '../../console/src/model/list-words.ts';
import { environmentHint } from '../../console/src/model/words.ts';
import { publicRun } from '../../lib/contracts/index.ts';
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
