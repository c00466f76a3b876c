/**
 * The console's fourth round of words: a live run says what it waits on a person for, durations
 * past 90 s in minutes, turns against calls, a checkpoint's pending operation, a takeover's
 * sweeper, an ended run's driver and checkpoints, the runs list's column hints, plurals, and what
 * an expiry or an approval on a paused run does.
 */
import { describe, expect, it } from 'vitest';
import { budgetBars, MODEL_CALLS_HINT, MODEL_TURNS_HINT } from '../../console/src/model/budgets.ts';
import { driverWords } from '../../console/src/model/driver.ts';
import { describeEvent } from '../../console/src/model/events.ts';
import { leaseView } from '../../console/src/model/lease.ts';
import { LIST_HINTS } from '../../console/src/model/list-words.ts';
import {
  APPROVAL_PAUSED,
  checkpointParts,
  duration,
  expiryWhat,
  noCheckpointsText,
  operationStateText,
  personWaitText,
  USAGE_HINTS,
} from '../../console/src/model/run-words.ts';
import { detailText } from '../../console/src/model/words.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const record = (patch: Record<string, unknown> = {}) =>
  consoleRecord({
    run_id: 'run_3f2a9c0d11223344556677889900aabb',
    subject: { workspace: 'ws', path: '/t' },
    turn: 0,
    ...patch,
  });

const ask = { kind: 'input' } as const;
const approval = { kind: 'approval' } as const;

describe('what a live run waits on a person for', () => {
  it('says so beside any status word, and nothing once ended or for a parked result only', () => {
    expect(personWaitText({ status: 'running', open_requests: [ask] })).toBe('waits for your answer');
    expect(personWaitText({ status: 'paused', open_requests: [approval] })).toBe('waits for an approval');
    expect(personWaitText({ status: 'waiting', open_requests: [approval, ask] })).toBe(
      'waits for an approval and your answer',
    );
    expect(personWaitText({ status: 'waiting', open_requests: [{ kind: 'result' }] })).toBeNull();
    expect(personWaitText({ status: 'completed', open_requests: [ask] })).toBeNull();
    expect(personWaitText({ status: 'running', open_requests: [] })).toBeNull();
  });

  it('reads a client hold of 840 seconds in minutes, and 90 seconds still in seconds', () => {
    expect(duration(840)).toBe('14 min');
    expect(duration(90)).toBe('90 seconds');
    expect(duration(91)).toBe('2 min');
    expect(duration(1)).toBe('1 second');
    expect(duration(-120)).toBe('2 min');
    expect(duration(3 * 3600)).toBe('3.0 h');
    const run = record({ status: 'running', lease: { owner: 'my-loop-q', expires_at: T0 + 840_000 } });
    expect(driverWords(run, leaseView(run, T0, null)).text).toBe(
      'the client my-loop-q. It must renew its hold on the run (its lease) while it works; unless renewed, the hold runs out in 14 min.',
    );
  });
});

describe('usage', () => {
  it('tells a turn from a call, says the wall time counts waits, and what a tool call counts', () => {
    const bars = budgetBars(record(), T0);
    expect(bars.find((b) => b.limit === 'max_turns')?.hint).toBe(MODEL_TURNS_HINT);
    expect(MODEL_TURNS_HINT).toContain('A model turn is one answer of the model');
    expect(MODEL_CALLS_HINT).toContain('A model call is one request to the model provider, retries included');
    expect(bars.find((b) => b.limit === 'max_wall_ms')?.hint).toContain(
      'time spent waiting for people (approvals, answers) included',
    );
    expect(USAGE_HINTS.toolCalls).toBe(
      'A tool call counts once it was made, its result in or not: when its tool answered, failed or ' +
        'was lost. A tool that parks its work (hands it to something outside the run) answers at once, ' +
        'and its result arrives later; the plan counts a call finished only once its result is in.',
    );
    expect(USAGE_HINTS.aws).toBe('an estimate of what these requests would cost on AWS');
  });
});

describe('checkpoints and the current operation', () => {
  it('says pending for an operation not started, under way once started, and the log for a task run', () => {
    expect(checkpointParts({ operation: { kind: 'tool_call', started_at: null } }, false)).toEqual({
      log: 'the log',
      operation: ', with a tool call pending (not started)',
    });
    expect(checkpointParts({ operation: { kind: 'model_turn', started_at: T0 } }, true)).toEqual({
      log: 'the conversation',
      operation: ', with a model turn under way',
    });
    expect(checkpointParts({ operation: null }, false).operation).toBe('');
  });

  it('says None. on an ended run and None yet. on a live one', () => {
    expect(noCheckpointsText('completed')).toBe('None.');
    expect(noCheckpointsText('stopped')).toBe('None.');
    expect(noCheckpointsText('running')).toBe('None yet.');
  });

  it('says an operation begun again after a takeover is to be run again', () => {
    expect(operationStateText({ started_at: null, attempt: 2 })).toBe(
      'to be run again: attempt 2; the first attempt was lost with its worker or client',
    );
    expect(operationStateText({ started_at: null, attempt: 3 })).toBe(
      'to be run again: attempt 3; the earlier attempts were lost with its worker or client',
    );
    expect(operationStateText({ started_at: null, attempt: 2 }, 'provider_outage')).toContain(
      'the model provider was unavailable',
    );
    expect(operationStateText({ started_at: null, attempt: 1 })).toBe('pending: not started yet');
    expect(operationStateText({ started_at: T0, attempt: 1 })).toBe('in flight');
  });

  it('counts attempts in the singular and plural', () => {
    expect(detailText({ tool: 'echo', attempts: 1 })).toBe('tool echo · 1 attempt');
    expect(detailText({ attempts: 2 })).toBe('2 attempts');
  });
});

describe('a takeover and an ended run', () => {
  const takeover = (owner: string) =>
    ({
      seq: 9,
      kind: 'lease_taken_over',
      at: T0,
      data: { previous_owner: owner, previous_epoch: 1 },
    }) as RunEvent;

  it('names the runtime, and says nobody holds the run when that is so', () => {
    expect(describeEvent(takeover('my-loop'), true)).toBe(
      'the runtime let go of the run (held by my-loop, hold number 1: the epoch, each new holder gets the next number); nobody holds it now',
    );
    expect(describeEvent(takeover('my-loop'))).not.toContain('nobody');
    expect(describeEvent(takeover('w1@1700/step'))).toMatch(
      /^the runtime \(or a restarted worker of the same slot\) took the run over \(held by w1@1700\/step/,
    );
  });

  it('says nobody drives an ended run, of either kind', () => {
    const done = { status: 'completed', outcome: 'succeeded', terminal_reason: 'completed', finished_at: T0 };
    const client = record(done);
    expect(driverWords(client, leaseView(client, T0, null)).text).toBe('nobody: the run has ended');
    const server = record({ ...done, reducer: { function_path: 'lib/reducers/agent-loop.js' } });
    expect(driverWords(server, leaseView(server, T0, null)).text).toBe('nobody: the run has ended');
  });

  it("names the regular check's expiry only when the abandoned run has open requests", () => {
    const bare = record({ status: 'queued' });
    expect(driverWords(bare, leaseView(bare, T0, null)).note).not.toContain('only expires');
    const open = {
      ...bare,
      open_requests: [
        {
          kind: 'input',
          request_id: `${bare.run_id}/req/1`,
          effect_id: 'e1',
          question: 'Which?',
          opened_at: T0,
          expires_at: null,
        },
      ],
    } as typeof bare;
    expect(driverWords(open, leaseView(open, T0, null)).note).toContain(
      "the service's regular check only expires its open requests",
    );
  });
});

describe('requests and the runs list', () => {
  it('says what an expiry does, and what approving does while paused', () => {
    expect(expiryWhat('result', true)).toBe(
      "If it is still open then, the wait for the result closes and the run's reducer is told and decides what comes next.",
    );
    expect(expiryWhat('approval', false)).toBe(
      'If it is still open then, the approval closes unanswered (the call it guards is not run) and its client is told.',
    );
    expect(APPROVAL_PAUSED).toContain('your decision is recorded now and the run stays paused');
  });

  it('has a hint for every column, naming each status', () => {
    for (const key of ['run', 'status', 'created', 'updated'] as const) expect(LIST_HINTS[key]).not.toBe('');
    for (const status of [
      'queued',
      'running',
      'waiting',
      'paused',
      'cancelling',
      'completed',
      'failed',
      'stopped',
    ])
      expect(LIST_HINTS.status).toContain(`${status}: `);
  });
});
