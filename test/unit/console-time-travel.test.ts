/**
 * The console's reading of time travel (console/src/model/time-travel.ts): the `?at=SEQ` of a
 * run page's address, and the past view of a `GET /runs/{id}/at/{seq}` answer.
 */
import { describe, expect, it } from 'vitest';
import { pastView, requestLine, travelSearch, travelSeq } from '../../console/src/model/time-travel.ts';
import { RunAtSeq } from '../../lib/contracts/index.ts';

const approval = {
  kind: 'approval',
  request_id: 'run_1/req/1',
  effect_id: '2:0',
  subject: {
    kind: 'tool_call',
    digest: 'ab'.repeat(32),
    digest_alg: 'sha256:rfc8785',
    summary: 'Call charge 1.0.0',
  },
  opened_at: 1,
  expires_at: null,
};

function answer(patch: Record<string, unknown> = {}) {
  return RunAtSeq.parse({
    run_id: 'run_1',
    seq: 6,
    current_seq: 15,
    status: 'running',
    turn: 1,
    last_seq: 6,
    usage: { model_calls: 1, tool_calls: 0 },
    open_requests: [approval],
    unanswered_calls: ['call-1'],
    state_rev: 2,
    state: { awaiting: '2:0' },
    state_known: true,
    projection: { items: [{ key: 'k', title: 'Call charge', status: 'in_progress' }] },
    projection_known: true,
    checkpoint: null,
    ...patch,
  });
}

describe('the seq a run page shows the past at', () => {
  it('reads a whole seq from ?at= and ignores anything else', () => {
    expect(travelSeq('?at=6')).toBe(6);
    expect(travelSeq('at=6&x=1')).toBe(6);
    for (const bad of [
      '',
      '?at=',
      '?at=0',
      '?at=-1',
      '?at=1.5',
      '?at=06',
      '?at=1e3',
      `?at=${'9'.repeat(17)}`,
    ]) {
      expect(travelSeq(bad)).toBeNull();
    }
  });

  it('sets and clears ?at= keeping the other parameters', () => {
    expect(travelSearch('', 6)).toBe('?at=6');
    expect(travelSearch('?x=1&at=3', 6)).toBe('?x=1&at=6');
    expect(travelSearch('?at=3', null)).toBe('');
    expect(travelSearch('?x=1&at=3', null)).toBe('?x=1');
  });
});

describe('the past view of a time-travel answer', () => {
  it('parses the open requests and the projection with the contract schemas', () => {
    const past = pastView(answer());

    expect(past).toMatchObject({ seq: 6, currentSeq: 15, stateRev: 2, modelCalls: 1, toolCalls: 0 });
    expect(past.state).toEqual({ known: true, value: { awaiting: '2:0' } });
    expect(past.projection?.items.map((i) => i.title)).toEqual(['Call charge']);
    expect(past.openRequests.map(requestLine)).toEqual(['approval: Call charge 1.0.0']);
    expect(past.unreadRequests).toEqual([]);
  });

  it('reports an unknown projection and a lost state with the reason', () => {
    const past = pastView(
      answer({
        projection: null,
        projection_known: false,
        state: null,
        state_known: false,
        unknown_reason: 'a fork',
      }),
    );

    expect(past.projection).toBeUndefined();
    expect(past.state).toEqual({ known: false });
    expect(past.unknownReason).toBe('a fork');
  });

  it('keeps a request the schema cannot read apart, and a malformed projection as unknown', () => {
    const past = pastView(answer({ open_requests: [{ kind: 'mystery' }], projection: { items: 'no' } }));

    expect(past.openRequests).toEqual([]);
    expect(past.unreadRequests).toEqual([{ kind: 'mystery' }]);
    expect(past.projection).toBeUndefined();
    expect(past.unknownReason).toMatch(/does not read as a projection/);
  });
});
