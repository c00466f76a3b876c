/**
 * The console's words for people (console/src/model): who drives a run without lease jargon on
 * server-driven runs, why an abandoned client-driven run still reads running, the modes where a
 * question appears, the grouped kind filter, pause reasons, short digests and plurals.
 */
import { describe, expect, it } from 'vitest';
import { pauseText } from '../../console/src/model/budgets.ts';
import { driverWords } from '../../console/src/model/driver.ts';
import { EVENT_KIND_GROUPS, matchesKindFilter } from '../../console/src/model/events.ts';
import { leaseView, observeLease } from '../../console/src/model/lease.ts';
import { runModeOf } from '../../console/src/model/run-mode.ts';
import { plural, shortDigest } from '../../console/src/model/words.ts';
import { RUN_EVENT_KINDS, type RunRecord, RunRecord as RunRecordSchema } from '../../lib/contracts/index.ts';

const T0 = 1_800_000_000_000;
const REDUCER = { function_path: '/lib/raisin/ai/agent-run-reducer', artifact_hash: 'sha256:abc' };

function record(patch: Record<string, unknown> = {}): RunRecord {
  return RunRecordSchema.parse({
    run_id: 'run_1',
    version: 3,
    created_at: T0,
    updated_at: T0,
    principal: { kind: 'user', id: 'alice' },
    subject: { workspace: 'ws', path: '/tickets/7' },
    reducer: null,
    budgets: {},
    on_exceeded: 'pause',
    usage: {},
    counters: {},
    epoch: 2,
    last_seq: 4,
    reduced_seq: 4,
    inbox: [],
    turn: 1,
    state_rev: 1,
    projection: null,
    unanswered_calls: [],
    queued_steers: [],
    wake_at: null,
    status: 'queued',
    lease: null,
    operation: null,
    open_requests: [],
    ...patch,
  });
}

const wordsAt = (run: RunRecord, now: number, sweepIntervalMs = 10_000) =>
  driverWords(
    run,
    leaseView(run, now, observeLease(null, run, T0), { sweep_interval_ms: sweepIntervalMs }),
    sweepIntervalMs,
  );

describe('who drives the run', () => {
  it('speaks of a worker, never a lease or an epoch, on a server-driven run', () => {
    const idle = wordsAt(record({ reducer: REDUCER, status: 'queued' }), T0);
    expect(idle).toEqual({
      term: 'Worker',
      text: 'none right now: a worker picks the run up as soon as it has work',
      warn: false,
    });
    const held = record({
      reducer: REDUCER,
      status: 'running',
      lease: { owner: 'step-1', expires_at: T0 + 30_000 },
    });
    expect(wordsAt(held, T0).text).toBe('a worker is on it now');
    const dead = wordsAt(held, T0 + 31_000);
    expect(dead).toMatchObject({
      warn: true,
      // Expired 1 s ago: the 30 s skew allowance, then up to one 10 s sweeper period.
      text: 'the worker stopped responding; another takes over in about 39 seconds',
    });
    for (const w of [idle, wordsAt(held, T0), dead]) expect(JSON.stringify(w)).not.toMatch(/lease|epoch/i);
  });

  it('says why a client-driven run whose client stopped renewing still reads running, and when the sweeper acts', () => {
    const run = record({ status: 'running', lease: { owner: 'laptop-1', expires_at: T0 + 5_000 } });
    const words = wordsAt(run, T0 + 8_000);
    expect(words.text).toBe(
      'the client laptop-1, which stopped renewing its lease, which ran out 3 seconds ago',
    );
    expect(words.note).toContain(
      'still reads "running" because a client-driven run ends only when its client ends it',
    );
    expect(words.note).toContain(
      // Expired 3 s ago: the 30 s skew allowance, then up to one 10 s sweeper period.
      'The sweeper, which passes every 10 seconds, lets the lost lease go (in about 37 seconds)',
    );
    expect(words.note).toContain('The sweeper never ends the run.');
  });

  it('says a released client-driven run waits for a client, and nothing for an ended one', () => {
    expect(wordsAt(record({ status: 'queued' }), T0).note).toBe(
      'The run waits for a client to take it up again: nothing else moves a client-driven run, and the sweeper only expires its open requests.',
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
