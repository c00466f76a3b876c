import { describe, expect, it } from 'vitest';
import { MAX_STATE_BYTES, REDUCER_CONTRACT, ReducerRequest } from '../../lib/contracts/index.ts';
import { validateReducerResponse } from '../../lib/core/reducer-validation.ts';

// ---------------------------------------------------------------- builders

type Json = Record<string, unknown>;

/** A valid request: a tool_result for call_1 arriving at state_rev 7 (parsed, never cast). */
function request(overrides: { run?: Json; event?: Json; state_rev?: number; accept?: string[] } = {}) {
  return ReducerRequest.parse({
    contract: REDUCER_CONTRACT,
    accept: overrides.accept ?? [REDUCER_CONTRACT],
    run: {
      run_id: 'run_1',
      status: 'running',
      turn: 3,
      last_seq: 41,
      usage: {},
      budgets: {},
      open_requests: [],
      unanswered_calls: ['call_1'],
      subject: { workspace: 'ai', path: '/agents/a/inbox/chats/c1' },
      ...overrides.run,
    },
    state: { last_event_seq: 40 },
    state_rev: overrides.state_rev ?? 7,
    event: overrides.event ?? {
      seq: 41,
      kind: 'tool_result',
      effect_id: '7:0',
      operation_id: 'op_7',
      data: {
        call_id: 'call_1',
        tool: '/lib/t',
        envelope: { envelope: 'raisin.tool-result/1', status: 'succeeded' },
      },
    },
  });
}

const userInput = { seq: 41, kind: 'user_input', data: { steer_id: 's1', input: 'hi' } };
const stopped = { seq: 41, kind: 'stopped', data: { reason: 'user' } };

/** A response at state_rev 8 with the given effects (ids to be filled by the caller). */
function response(effects: unknown[], overrides: Json = {}): Json {
  return { contract: REDUCER_CONTRACT, state: { last_event_seq: 41 }, state_rev: 8, effects, ...overrides };
}

const checkpoint = (id: string) => ({ effect_id: id, kind: 'checkpoint' });
const callTool = (id: string, extra: Json = {}) => ({
  effect_id: id,
  kind: 'call_tool',
  tool: '/lib/t',
  args: {},
  mutating: false,
  replay_safe: true,
  ...extra,
});
const modelTurn = (id: string, callIds: string[] = ['call_1']) => ({
  effect_id: id,
  kind: 'request_model_turn',
  tools_offered: [],
  tool_results: callIds.map((call_id) => ({ call_id })),
});
const askUser = (id: string) => ({ effect_id: id, kind: 'ask_user', question: 'Go on?' });
const approval = (id: string) => ({
  effect_id: id,
  kind: 'request_approval',
  subject: { kind: 'tool_call', digest: 'd', digest_alg: 'sha256/jcs', summary: 'refund 10' },
});
const withdraw = (id: string, requestId: string) => ({
  effect_id: id,
  kind: 'withdraw_request',
  request_id: requestId,
});
const complete = (id: string, outcome = 'succeeded') => ({ effect_id: id, kind: 'complete', outcome });
const failEffect = (id: string) => ({ effect_id: id, kind: 'fail', code: 'boom', message: 'it broke' });
const gap = (id: string) => ({
  effect_id: id,
  kind: 'capability_gap',
  gap: {
    requested_outcome: 'refund',
    missing: ['refund tool'],
    inspected: [],
    why_insufficient: 'no tool',
    proposed: { layer: 'tool', description: 'add one' },
  },
});

function codeOf(req: ReturnType<typeof request>, raw: unknown): string {
  const result = validateReducerResponse(req, raw);
  return result.ok ? 'ok' : result.code;
}

// ---------------------------------------------------------------- tests

describe('validateReducerResponse', () => {
  it('accepts a valid answer and returns it decoded with defaults', () => {
    const result = validateReducerResponse(request(), response([modelTurn('8:0')]));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.response.refused).toBeNull();
    expect(result.response.diagnostics).toEqual([]);
    expect(result.response.effects).toHaveLength(1);
  });

  it('treats absent effects as none', () => {
    const result = validateReducerResponse(request(), {
      contract: REDUCER_CONTRACT,
      state: null,
      state_rev: 7,
    });
    expect(result).toMatchObject({ ok: true, response: { effects: [] } });
  });

  describe('1. contract_mismatch', () => {
    it.each([
      ['a string', 'ok'],
      ['null', null],
      ['an array', []],
    ])('refuses an answer that is %s', (_label, raw) => {
      expect(codeOf(request(), raw)).toBe('contract_mismatch');
    });

    it('refuses a contract the request did not accept, naming the path', () => {
      const result = validateReducerResponse(
        request(),
        response([], { contract: 'raisin.agent-run.reducer/2' }),
      );
      expect(result).toMatchObject({ ok: false, code: 'contract_mismatch', path: 'contract' });
    });

    it('accepts any contract listed in accept', () => {
      const req = request({ accept: [REDUCER_CONTRACT, 'raisin.agent-run.reducer/2'] });
      expect(codeOf(req, response([], { contract: 'raisin.agent-run.reducer/2', state_rev: 7 }))).toBe('ok');
    });

    it.each([
      ['a string state_rev', { state_rev: '8' }, 'state_rev'],
      ['a negative state_rev', { state_rev: -1 }, 'state_rev'],
      ['a fractional state_rev', { state_rev: 7.5 }, 'state_rev'],
      ['diagnostics that are not an array', { diagnostics: 'none' }, 'diagnostics'],
      ['a refused without code', { refused: { message: 'no' } }, 'refused.code'],
    ])('refuses %s with its path', (_label, overrides, path) => {
      const result = validateReducerResponse(request(), response([], overrides));
      expect(result).toMatchObject({ ok: false, code: 'contract_mismatch', path });
    });

    it('refuses an answer without state', () => {
      const { state: _state, ...raw } = response([]);
      expect(validateReducerResponse(request(), raw)).toMatchObject({
        code: 'contract_mismatch',
        path: 'state',
      });
    });

    it('refuses a state that is not a JSON value', () => {
      const result = validateReducerResponse(request(), response([], { state: { n: Number.NaN } }));
      expect(result).toMatchObject({ ok: false, code: 'contract_mismatch', path: 'state' });
    });

    it('refuses a known effect kind with a missing field, naming the field', () => {
      const { mutating: _mutating, ...bad } = callTool('8:0');
      const result = validateReducerResponse(request(), response([checkpoint('8:0'), bad]));
      expect(result).toMatchObject({ ok: false, code: 'contract_mismatch', path: 'effects.1.mutating' });
    });

    it('ranks a bad contract before an unknown effect kind', () => {
      const raw = response([{ effect_id: '8:0', kind: 'launch' }], { contract: 'x' });
      expect(codeOf(request(), raw)).toBe('contract_mismatch');
    });
  });

  describe('2. unknown_effect_kind', () => {
    it('refuses an effect kind outside the 9, naming its path', () => {
      const result = validateReducerResponse(
        request(),
        response([checkpoint('8:0'), { effect_id: '8:1', kind: 'send_email' }]),
      );
      expect(result).toMatchObject({ ok: false, code: 'unknown_effect_kind', path: 'effects.1.kind' });
    });

    it('refuses an effect without a kind', () => {
      expect(codeOf(request(), response([{ effect_id: '8:0' }]))).toBe('unknown_effect_kind');
    });

    it('refuses effects that are an object', () => {
      expect(codeOf(request(), response([], { effects: { 0: checkpoint('8:0') } }))).toBe(
        'unknown_effect_kind',
      );
    });

    it('reads effects: null as no effects (growth rule: an absent optional sent as null)', () => {
      const result = validateReducerResponse(request(), response([], { effects: null }));
      expect(result.ok && result.response.effects).toEqual([]);
    });

    it('refuses an effect that is not an object', () => {
      expect(codeOf(request(), response(['checkpoint']))).toBe('unknown_effect_kind');
    });

    it('ranks an unknown kind anywhere before a known kind with bad fields', () => {
      const raw = response([
        { effect_id: '8:0', kind: 'call_tool' },
        { effect_id: '8:1', kind: 'launch' },
      ]);
      expect(codeOf(request(), raw)).toBe('unknown_effect_kind');
    });

    it('ranks an unknown kind before a regressed state_rev', () => {
      expect(codeOf(request(), response([{ effect_id: '8:0', kind: 'launch' }], { state_rev: 2 }))).toBe(
        'unknown_effect_kind',
      );
    });
  });

  describe('3. state_rev_regressed', () => {
    it('accepts the request revision and the next one', () => {
      expect(codeOf(request(), response([], { state_rev: 7 }))).toBe('ok');
      expect(codeOf(request(), response([], { state_rev: 8 }))).toBe('ok');
    });

    it.each([6, 9, 0])('refuses state_rev %i when the request is at 7', (stateRev) => {
      const result = validateReducerResponse(request(), response([], { state_rev: stateRev }));
      expect(result).toMatchObject({ ok: false, code: 'state_rev_regressed', path: 'state_rev' });
    });

    it('ranks a regressed state_rev before an effect id mismatch', () => {
      expect(codeOf(request(), response([checkpoint('1:5')], { state_rev: 9 }))).toBe('state_rev_regressed');
    });
  });

  describe('4. effect_id_mismatch', () => {
    it('refuses an effect id of the old revision', () => {
      const result = validateReducerResponse(request(), response([modelTurn('7:0')]));
      expect(result).toMatchObject({ ok: false, code: 'effect_id_mismatch', path: 'effects.0.effect_id' });
    });

    it('refuses ids that do not follow the effect index', () => {
      const result = validateReducerResponse(request(), response([checkpoint('8:0'), modelTurn('8:2')]));
      expect(result).toMatchObject({ ok: false, code: 'effect_id_mismatch', path: 'effects.1.effect_id' });
    });

    it('ranks an id mismatch before effects without a state change', () => {
      expect(codeOf(request(), response([checkpoint('8:0')], { state_rev: 7 }))).toBe('effect_id_mismatch');
    });
  });

  describe('5. effects_without_state_change', () => {
    it('refuses effects while state_rev stays the same', () => {
      const result = validateReducerResponse(request(), response([checkpoint('7:0')], { state_rev: 7 }));
      expect(result).toMatchObject({ ok: false, code: 'effects_without_state_change' });
    });

    it('accepts a duplicate-event answer: same state, same state_rev, no effects', () => {
      const req = request();
      expect(codeOf(req, { contract: REDUCER_CONTRACT, state: req.state, state_rev: 7, effects: [] })).toBe(
        'ok',
      );
    });

    it('accepts a state bump without effects', () => {
      expect(codeOf(request(), response([]))).toBe('ok');
    });
  });

  describe('6. multiple_operations', () => {
    it.each([
      ['two call_tool', [callTool('8:0'), callTool('8:1')]],
      ['call_tool and ask_user', [callTool('8:0'), askUser('8:1')]],
      ['a model turn and an approval', [modelTurn('8:0'), approval('8:1')]],
    ])('refuses %s in one answer', (_label, effects) => {
      const result = validateReducerResponse(request(), response(effects));
      expect(result).toMatchObject({ ok: false, code: 'multiple_operations', path: 'effects.1' });
    });

    it('accepts one operation with checkpoints and withdrawals', () => {
      const req = request({ run: { open_requests: [{ request_id: 'req_1', kind: 'input' }] } });
      expect(codeOf(req, response([checkpoint('8:0'), withdraw('8:1', 'req_1'), askUser('8:2')]))).toBe('ok');
    });

    it('ranks multiple operations before a terminal conflict', () => {
      expect(codeOf(request(), response([callTool('8:0'), askUser('8:1'), complete('8:2')]))).toBe(
        'multiple_operations',
      );
    });
  });

  describe('7. terminal_not_exclusive', () => {
    it.each([
      ['complete with a call_tool', [complete('8:0'), callTool('8:1')]],
      ['fail with an ask_user', [askUser('8:0'), failEffect('8:1')]],
      ['complete with fail', [complete('8:0'), failEffect('8:1')]],
      ['two completes', [complete('8:0'), complete('8:1', 'partial')]],
    ])('refuses %s', (_label, effects) => {
      expect(codeOf(request(), response(effects))).toBe('terminal_not_exclusive');
    });

    it('accepts complete with a checkpoint, and fail alone', () => {
      expect(codeOf(request(), response([complete('8:0'), checkpoint('8:1')]))).toBe('ok');
      expect(codeOf(request(), response([failEffect('8:0')]))).toBe('ok');
    });
  });

  describe('8. gap_without_follow_up', () => {
    it('accepts a gap followed by complete{blocked} or by ask_user', () => {
      expect(codeOf(request(), response([gap('8:0'), complete('8:1', 'blocked')]))).toBe('ok');
      expect(codeOf(request(), response([gap('8:0'), checkpoint('8:1'), askUser('8:2')]))).toBe('ok');
    });

    it.each([
      ['a gap alone', [gap('8:0')]],
      ['a gap followed by complete{succeeded}', [gap('8:0'), complete('8:1', 'succeeded')]],
      ['a gap preceded, not followed, by ask_user', [askUser('8:0'), gap('8:1')]],
    ])('refuses %s', (_label, effects) => {
      expect(codeOf(request(), response(effects))).toBe('gap_without_follow_up');
    });

    it('requires a follow-up after every gap, naming the unfollowed one', () => {
      const result = validateReducerResponse(request(), response([gap('8:0'), askUser('8:1'), gap('8:2')]));
      expect(result).toMatchObject({ ok: false, code: 'gap_without_follow_up', path: 'effects.2' });
    });
  });

  describe('9. effects_after_terminal', () => {
    it.each(['completed', 'failed', 'stopped'])(
      'refuses a non-checkpoint effect when the run is %s',
      (status) => {
        const req = request({ run: { status, unanswered_calls: [] } });
        expect(codeOf(req, response([checkpoint('8:0'), askUser('8:1')]))).toBe('effects_after_terminal');
      },
    );

    it('refuses a non-checkpoint effect on the stopped event while the run is still cancelling', () => {
      const req = request({ run: { status: 'cancelling' }, event: stopped });
      expect(codeOf(req, response([complete('8:0', 'partial')]))).toBe('effects_after_terminal');
    });

    it('accepts a state change with only checkpoints after the run ended', () => {
      const req = request({ run: { status: 'stopped' }, event: stopped });
      expect(codeOf(req, response([checkpoint('8:0'), checkpoint('8:1')]))).toBe('ok');
      expect(codeOf(req, response([]))).toBe('ok');
    });
  });

  describe('10. open_requests_unresolved', () => {
    const openTwo = {
      status: 'waiting',
      unanswered_calls: [],
      open_requests: [
        { request_id: 'req_1', kind: 'input' },
        { request_id: 'req_2', kind: 'approval' },
      ],
    };

    it('refuses starting an operation on user_input while a request stays open', () => {
      const req = request({ run: openTwo, event: userInput });
      const result = validateReducerResponse(req, response([withdraw('8:0', 'req_1'), modelTurn('8:1', [])]));
      expect(result).toMatchObject({ ok: false, code: 'open_requests_unresolved', path: 'effects.1' });
      expect(result.ok || result.message).toContain('req_2');
    });

    it('accepts starting an operation once every open request is withdrawn', () => {
      const req = request({ run: openTwo, event: userInput });
      const effects = [withdraw('8:0', 'req_2'), withdraw('8:1', 'req_1'), callTool('8:2')];
      expect(codeOf(req, response(effects))).toBe('ok');
    });

    it('accepts user_input that starts no operation while requests stay open', () => {
      const req = request({ run: openTwo, event: userInput });
      expect(codeOf(req, response([checkpoint('8:0')]))).toBe('ok');
    });

    it('does not apply to other events', () => {
      const req = request({ run: { ...openTwo, status: 'running' } });
      expect(codeOf(req, response([callTool('8:0')]))).toBe('ok');
    });
  });

  describe('11. unanswered_tool_calls', () => {
    const twoCalls = { unanswered_calls: ['call_1', 'call_2'] };

    it('refuses a model turn that leaves a previous tool call unanswered', () => {
      const result = validateReducerResponse(
        request({ run: twoCalls }),
        response([modelTurn('8:0', ['call_2'])]),
      );
      expect(result).toMatchObject({
        ok: false,
        code: 'unanswered_tool_calls',
        path: 'effects.0.tool_results',
      });
      expect(result.ok || result.message).toContain('call_1');
    });

    it('refuses a model turn without tool_results while calls are unanswered', () => {
      const { tool_results: _results, ...turn } = modelTurn('8:0');
      expect(codeOf(request(), response([turn]))).toBe('unanswered_tool_calls');
    });

    it('accepts a model turn that answers every unanswered call', () => {
      expect(
        codeOf(request({ run: twoCalls }), response([modelTurn('8:0', ['call_2', 'call_1', 'call_3'])])),
      ).toBe('ok');
    });

    it('refuses a call_tool whose for_call_id names no unanswered call', () => {
      const result = validateReducerResponse(
        request(),
        response([callTool('8:0', { for_call_id: 'call_9' })]),
      );
      expect(result).toMatchObject({
        ok: false,
        code: 'unanswered_tool_calls',
        path: 'effects.0.for_call_id',
      });
    });

    it('accepts a call_tool for an unanswered call, and one without for_call_id', () => {
      expect(codeOf(request(), response([callTool('8:0', { for_call_id: 'call_1' })]))).toBe('ok');
      expect(codeOf(request({ run: { unanswered_calls: [] } }), response([callTool('8:0')]))).toBe('ok');
    });
  });

  describe('12. projection_invalid', () => {
    it('accepts a projection with every item status, and null or absent projection', () => {
      const statuses = [
        'pending',
        'in_progress',
        'waiting',
        'completed',
        'blocked',
        'failed',
        'stopped',
        'paused',
      ];
      const items = statuses.map((status, i) => ({ key: `k${i}`, title: 't', status, detail: { any: [1] } }));
      expect(codeOf(request(), response([], { projection: { items, summary: 's' } }))).toBe('ok');
      expect(codeOf(request(), response([], { projection: null }))).toBe('ok');
      expect(codeOf(request(), response([]))).toBe('ok');
    });

    it.each([
      [
        'an unknown item status',
        { items: [{ key: 'k', title: 't', status: 'done' }] },
        'projection.items.0.status',
      ],
      ['no items', { summary: 's' }, 'projection.items'],
      ['an empty key', { items: [{ key: '', title: 't', status: 'pending' }] }, 'projection.items.0.key'],
      ['a list instead of an object', [], 'projection'],
    ])('refuses a projection with %s', (_label, projection, path) => {
      const result = validateReducerResponse(request(), response([], { projection }));
      expect(result).toMatchObject({ ok: false, code: 'projection_invalid', path });
    });
  });

  describe('13. state_too_large', () => {
    /** A state whose canonical JSON `{"s":"…"}` is exactly `bytes` long. */
    const stateOf = (bytes: number) => ({ s: 'x'.repeat(bytes - '{"s":""}'.length) });

    it('accepts a canonical state of exactly 256 KiB', () => {
      expect(codeOf(request(), response([], { state: stateOf(MAX_STATE_BYTES) }))).toBe('ok');
    });

    it('refuses a canonical state one byte over 256 KiB', () => {
      const result = validateReducerResponse(
        request(),
        response([], { state: stateOf(MAX_STATE_BYTES + 1) }),
      );
      expect(result).toMatchObject({ ok: false, code: 'state_too_large', path: 'state' });
    });

    it('measures UTF-8 bytes, not characters', () => {
      const state = { s: 'é'.repeat(MAX_STATE_BYTES / 2) };
      expect(codeOf(request(), response([], { state }))).toBe('state_too_large');
    });

    it('ranks an invalid projection before a too-large state', () => {
      const raw = response([], { state: stateOf(MAX_STATE_BYTES + 1), projection: { items: 'none' } });
      expect(codeOf(request(), raw)).toBe('projection_invalid');
    });
  });

  describe('growth rule and refusals', () => {
    it('ignores unknown fields at every level and drops them from the decoded answer', () => {
      const raw = response([{ ...modelTurn('8:0'), priority: 'high' }], {
        trace: 'x',
        projection: { items: [{ key: 'k', title: 't', status: 'pending', eta: 3 }], progress: 1 },
      });
      const result = validateReducerResponse(request(), raw);
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      expect(result.response).not.toHaveProperty('trace');
      expect(result.response.effects[0]).not.toHaveProperty('priority');
      expect(result.response.projection).toEqual({ items: [{ key: 'k', title: 't', status: 'pending' }] });
    });

    it('returns ok for an otherwise valid refused answer, keeping the refusal', () => {
      const raw = response([], { state_rev: 7, refused: { code: 'unsupported', message: 'cannot handle' } });
      expect(validateReducerResponse(request(), raw)).toMatchObject({
        ok: true,
        response: { refused: { code: 'unsupported', message: 'cannot handle' } },
      });
    });

    it('still applies the rules to a refused answer', () => {
      const raw = response([callTool('8:0'), callTool('8:1')], { refused: { code: 'x', message: 'y' } });
      expect(codeOf(request(), raw)).toBe('multiple_operations');
    });
  });
});
