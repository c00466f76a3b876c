/**
 * The console's pure parts (console/src/model, console/src/auth/session.ts): lease takeover
 * estimates, budget bars, the transcript, listing filters and paging across statuses, stable
 * control ids, ack wording, the token in the URL fragment.
 */
import { describe, expect, it } from 'vitest';
import { jwtExpiry, readSession, saveSession, tokenFromFragment } from '../../console/src/auth/session.ts';
import { budgetBars, budgetPauseLimit } from '../../console/src/model/budgets.ts';
import { actionKey, ControlIds, describeAck } from '../../console/src/model/controls.ts';
import { describeEvent } from '../../console/src/model/events.ts';
import { leaseView, observeLease } from '../../console/src/model/lease.ts';
import {
  DEFAULT_FILTERS,
  fetchListingPage,
  filtersFromQuery,
  filtersToQuery,
  type ListRuns,
  matchesFilters,
  sortRuns,
} from '../../console/src/model/run-listing.ts';
import { transcriptOf } from '../../console/src/model/transcript.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { consoleRecord, T0 } from '../support/console-records.ts';

const record = (patch: Record<string, unknown> = {}) => consoleRecord(patch);

const running = (expiresAt: number) =>
  record({ status: 'running', lease: { owner: 'worker-a', expires_at: expiresAt }, epoch: 5 });

const event = (seq: number, kind: RunEvent['kind'], data: Record<string, unknown>): RunEvent => ({
  seq,
  kind,
  at: T0 + seq,
  data,
});

describe('lease view', () => {
  it('shows a held lease with the seconds it has left', () => {
    const run = running(T0 + 30_000);
    const seen = observeLease(null, run, T0);

    expect(leaseView(run, T0, seen)).toEqual({ kind: 'held', owner: 'worker-a', epoch: 5, expiresInS: 30 });
  });

  it('estimates the takeover of an expired lease as the skew allowance, then up to one sweeper period', () => {
    const run = running(T0 - 5_000);

    const view = leaseView(run, T0, observeLease(null, run, T0), { sweep_interval_ms: 10_000 });
    const noSkew = leaseView(run, T0, observeLease(null, run, T0), {
      clock_skew_ms: 0,
      sweep_interval_ms: 10_000,
    });

    // The default allowance is a third of the default lease (30 s): 25 s after now, then a pass.
    expect(view).toMatchObject({
      kind: 'stale',
      why: 'expired',
      expiresInS: -5,
      takeoverFromS: 25,
      takeoverInS: 35,
    });
    expect(noSkew).toMatchObject({ takeoverFromS: 0, takeoverInS: 10 });
  });

  it('calls a lease that stopped being renewed for two heartbeats stale before it expires', () => {
    const run = running(T0 + 60_000);
    const seen = observeLease(null, run, T0);
    const later = T0 + 25_000;

    const renewedTooLong = leaseView(run, later, observeLease(seen, run, later), {
      heartbeat_ms: 10_000,
      sweep_interval_ms: 10_000,
    });
    const renewed = running(T0 + 80_000);
    const fresh = leaseView(renewed, later, observeLease(seen, renewed, later), { heartbeat_ms: 10_000 });

    expect(renewedTooLong).toMatchObject({
      kind: 'stale',
      why: 'not_renewed',
      takeoverFromS: 65,
      takeoverInS: 75,
    });
    expect(fresh.kind).toBe('held');
  });

  it('shows no lease with the epoch when nobody holds one', () => {
    expect(leaseView(record({ epoch: 2 }), T0, null)).toEqual({ kind: 'none', epoch: 2 });
  });
});

describe('budget bars', () => {
  it('puts bounded limits first with what core counts as used', () => {
    const run = record({
      budgets: { max_total_tokens: 1000, max_turns: 5 },
      usage: { turns: 2, input_tokens: 300, output_tokens: 100 },
    });

    const bars = budgetBars(run, T0 + 2_000);

    expect(bars.slice(0, 2)).toMatchObject([
      { limit: 'max_turns', label: 'model turns', used: 2, max: 5, unit: 'count' },
      { limit: 'max_total_tokens', label: 'tokens (in + out)', used: 400, max: 1000, unit: 'tokens' },
    ]);
    expect(bars.every((b) => b.hint.length > 0)).toBe(true);
    expect(bars.find((b) => b.limit === 'max_wall_ms')).toMatchObject({ used: 2_000 });
    expect(bars).toHaveLength(9);
  });

  it('names the limit a budget pause hit, and nothing for other pauses', () => {
    const paused = (reason: string) =>
      record({ status: 'paused', pause_reason: reason, paused_from: 'queued' });

    expect(budgetPauseLimit(paused('budget_exceeded:max_turns'))).toBe('max_turns');
    expect(budgetPauseLimit(paused('reducer_changed'))).toBeNull();
    expect(budgetPauseLimit(paused('budget_exceeded:max_bogus'))).toBeNull();
  });
});

describe('transcript', () => {
  it('reads the conversation in seq order: input, model, tool envelope, answer', () => {
    const envelope = { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: { ok: true } };
    const events = [
      event(9, 'request_resolved', { request_id: 'q1', kind: 'input', value: 'PDF' }),
      event(1, 'run_started', { input: 'charge 42' }),
      event(4, 'model_turn_completed', {
        message: { text: null },
        tool_calls: [{ call_id: 'c1', name: 'charge', args: { amount: 42 } }],
        finish_reason: 'tool_calls',
        usage: { input_tokens: 10, output_tokens: 2 },
      }),
      event(7, 'tool_result', { call_id: 'c1', tool: 'charge', envelope }),
      event(8, 'reducer_answered', { event_seq: 7, state_rev: 3, effects: [] }),
    ];

    const entries = transcriptOf(events);

    expect(entries.map((e) => `${e.seq}:${e.kind}`)).toEqual(['1:user', '4:assistant', '7:tool', '9:user']);
    expect(entries[2]).toMatchObject({
      tool: 'charge',
      callId: 'c1',
      envelope: { status: 'succeeded', writes: [] },
    });
    expect(entries[3]).toMatchObject({ via: 'answer', content: 'PDF' });
  });

  it('skips an event whose data does not have its contract shape instead of failing', () => {
    const entries = transcriptOf([event(2, 'tool_result', { tool: 'x', envelope: { status: 'nonsense' } })]);

    expect(entries).toEqual([]);
    expect(describeEvent(event(2, 'tool_result', { tool: 'x', envelope: 7 }))).toBe('x');
  });
});

describe('runs listing', () => {
  it('round-trips its filters through the query string and ignores unknown values', () => {
    const filters = {
      ...DEFAULT_FILTERS,
      status: 'waiting' as const,
      principal: 'alice',
      from: T0,
      order: 'oldest' as const,
    };

    expect(filtersFromQuery(filtersToQuery(filters))).toEqual(filters);
    expect(filtersFromQuery('status=exploded&order=sideways&from=yesterday')).toEqual(DEFAULT_FILTERS);
  });

  it('filters by principal, subject prefix and creation time, and sorts by creation', () => {
    const a = record({ run_id: 'a', created_at: T0 });
    const b = record({
      run_id: 'b',
      created_at: T0 + 10,
      principal: { kind: 'agent', id: 'bot', on_behalf_of: 'alice' },
    });
    const c = record({ run_id: 'c', created_at: T0 + 20, subject: { workspace: 'other', path: '/x' } });

    const byPrincipal = [a, b, c].filter((r) =>
      matchesFilters(r, { ...DEFAULT_FILTERS, principal: 'agent:' }),
    );
    const bySubject = [a, b, c].filter((r) => matchesFilters(r, { ...DEFAULT_FILTERS, subject: 'ws:/tick' }));
    const byPath = [a, b, c].filter((r) => matchesFilters(r, { ...DEFAULT_FILTERS, subject: '/x' }));
    const byTime = [a, b, c].filter((r) =>
      matchesFilters(r, { ...DEFAULT_FILTERS, from: T0 + 5, to: T0 + 15 }),
    );

    expect(byPrincipal.map((r) => r.run_id)).toEqual(['b']);
    expect(bySubject.map((r) => r.run_id)).toEqual(['a', 'b']);
    expect(byPath.map((r) => r.run_id)).toEqual(['c']);
    expect(byTime.map((r) => r.run_id)).toEqual(['b']);
    expect(sortRuns([a, c, b], 'newest').map((r) => r.run_id)).toEqual(['c', 'b', 'a']);
  });

  it('pages all statuses with one cursor per status that has more, without repeating a run', async () => {
    const asked: string[] = [];
    const listRuns: ListRuns = async ({ status, cursor }) => {
      asked.push(`${status}:${cursor ?? '-'}`);
      if (status === 'running')
        return cursor === undefined
          ? { runs: [record({ run_id: 'r1' })], cursor: 'R2' }
          : { runs: [record({ run_id: 'r2' })] };
      if (status === 'waiting') return { runs: [record({ run_id: 'r1' }), record({ run_id: 'w1' })] };
      return { runs: [] };
    };

    const first = await fetchListingPage(listRuns, 'all', null, 25);
    const second = await fetchListingPage(listRuns, 'all', first.next, 25);

    expect(first.runs.map((r) => r.run_id)).toEqual(['r1', 'w1']);
    expect(first.next).toEqual({ running: 'R2' });
    expect(second).toMatchObject({ next: null });
    expect(second.runs.map((r) => r.run_id)).toEqual(['r2']);
    expect(asked.filter((a) => a.endsWith(':R2'))).toEqual(['running:R2']);
    expect(asked).toHaveLength(9);
  });
});

describe('controls', () => {
  it('reuses the control_id of an unacknowledged action and starts a new one after its ack', () => {
    let n = 0;
    const ids = new ControlIds(() => `id-${++n}`);
    const stop = { command: 'stop', reason: 'x' } as const;

    const first = ids.idFor(stop);
    const retry = ids.idFor({ reason: 'x', command: 'stop' });
    const other = ids.idFor({ command: 'pause' });
    ids.acknowledged(stop);
    const next = ids.idFor(stop);

    expect([first, retry, other, next]).toEqual(['id-1', 'id-1', 'id-2', 'id-3']);
    expect(actionKey({ command: 'steer', input: { b: 1, a: 2 } })).toBe(
      actionKey({ input: { a: 2, b: 1 }, command: 'steer' }),
    );
  });

  it('words each ack, with the reason of a rejection in plain language', () => {
    expect(describeAck('stop', { ack: 'applied', seq: 9 })).toEqual({
      tone: 'good',
      text: 'stop: applied (event 9)',
    });
    expect(describeAck('stop', { ack: 'duplicate', original_seq: 9 }).text).toContain('duplicate of event 9');
    const stale = describeAck('approve', { ack: 'rejected', reason: 'digest_mismatch', seq: 12 });
    expect(stale.tone).toBe('bad');
    expect(stale.text).toContain('rejected, digest_mismatch: what you approved is not what the run asks now');
  });
});

describe('session', () => {
  it('takes the token from the URL fragment and keeps the rest of the fragment', () => {
    expect(tokenFromFragment('#token=abc&x=1')).toEqual({ token: 'abc', rest: '#x=1' });
    expect(tokenFromFragment('#token=')).toEqual({ token: null, rest: '' });
    expect(tokenFromFragment('')).toEqual({ token: null, rest: '' });
  });

  it('forgets a stored session once its JWT has expired', () => {
    const store = new Map<string, string>();
    const storage = {
      getItem: (k: string) => store.get(k) ?? null,
      setItem: (k: string, v: string) => void store.set(k, v),
      removeItem: (k: string) => void store.delete(k),
    } as Storage;
    const payload = Buffer.from(JSON.stringify({ sub: 'alice', exp: T0 / 1000 })).toString('base64url');
    const jwt = `e30.${payload}.sig`;

    saveSession(storage, { token: jwt, via: 'token', expiresAt: jwtExpiry(jwt) ?? 0 });

    expect(jwtExpiry(jwt)).toBe(T0);
    expect(readSession(storage, T0 - 1)).toMatchObject({ token: jwt });
    expect(readSession(storage, T0)).toBeNull();
    expect(jwtExpiry('opaque-token')).toBeUndefined();
  });
});
