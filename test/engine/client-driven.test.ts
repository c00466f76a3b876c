/**
 * Client-driven runs on the memory store: a client takes the lease, begins and reports its own
 * operations, is fenced out once it lost the lease, sees a stop, and reports turn outcomes.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases";
 * docs/contracts/turn-outcome.md.
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { EngineError } from '../../lib/engine/errors.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

async function setup(budgets: Record<string, number> = {}) {
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({}),
    tools: inProcessTools({}),
    models: noModel,
    // Client leases of seconds: takeover right at expiry (the skew allowance has its own tests).
    clockSkewMs: 0,
  });
  const { run } = await t.engine.createRun({ subject: uniqueSubject(), input: 'go', budgets }, alice);
  return { t, runId: run.run_id, client: t.engine.client };
}

async function refusal(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof EngineError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

function outcomeDoc(runId: string, opId: string, fields: Record<string, unknown>) {
  return {
    schema: 'agent.external-runtime.turn-outcome.v1',
    'outcome/ref': `out-${Math.random()}`,
    'turn/ref': opId,
    'binding/ref': runId,
    'agent/id': 'agents/external',
    status: 'completed',
    'reason/code': 'completed',
    retryability: 'terminal',
    'budget/reserved': {},
    'budget/charged': { input_tokens: 10, output_tokens: 5 },
    'usage/fidelity': 'authoritative',
    'selected/at': '2026-12-01T00:00:00Z',
    'selected/by': 'test',
    ...fields,
  };
}

const contiguous = (events: RunEvent[]) => events.map((e) => e.seq).every((s, i) => s === i + 1);

const bob = { principal: { kind: 'user' as const, id: 'bob' } };

describe('client-driven runs', () => {
  it('do not exist for a caller who may not see them: every route answers run_not_found and writes nothing', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    const before = await t.engine.getRun(runId, alice);
    const attempts = [
      client.takeLease(runId, { owner: 'b' }, bob),
      client.takeLease(runId, { owner: 'a', epoch: a.epoch }, bob),
      client.beginOperation(runId, { fence, kind: 'model_turn' }, bob),
      client.takeSteers(runId, { fence }, bob),
      client.completeRun(runId, { fence }, bob),
      client.releaseLease(runId, { fence }, bob),
      client.inspectLease(runId, bob),
    ];
    for (const attempt of attempts) expect((await refusal(attempt)).code).toBe('run_not_found');
    expect((await refusal(client.inspectLease('run_unknown', bob))).code).toBe('run_not_found');
    const after = await t.engine.getRun(runId, alice);
    expect(after.version).toBe(before.version);
    expect(after.last_seq).toBe(before.last_seq);
  });

  it('runs a model turn the client executes, charges its usage, and completes; no step message is sent', async () => {
    const { t, runId, client } = await setup();
    expect(await t.drainMessages()).toEqual([]);
    const { lease } = await client.takeLease(runId, { owner: 'a' }, alice);
    expect(lease).toMatchObject({ owner: 'a', epoch: 1 });
    const fence = { owner: 'a', epoch: lease.epoch };
    const begun = await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    const opId = begun.operation?.op_id as string;
    expect(begun.run.status).toBe('running');
    const retried = await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    expect(retried.operation?.op_id).toBe(opId);
    await client.reportOutcome(
      runId,
      {
        fence,
        op_id: opId,
        result: {
          kind: 'model_turn_completed',
          message: { text: 'hi' },
          usage: { input_tokens: 7, output_tokens: 3 },
        },
      },
      alice,
    );
    const done = await client.completeRun(runId, { fence, summary: 'said hi' }, alice);
    expect(done.run).toMatchObject({
      status: 'completed',
      usage: { turns: 1, input_tokens: 7, output_tokens: 3 },
    });
    expect(done.lease).toBeNull();
    const events = await t.engine.readEvents(runId, alice, 0, 100);
    expect(contiguous(events)).toBe(true);
    expect(events.map((e) => e.kind)).toEqual([
      'run_started',
      'operation_started',
      'model_turn_completed',
      'run_completed',
    ]);
    expect(await t.drainMessages()).toEqual([]);
    expect(await t.engine.stepRun(runId)).toMatchObject({ kind: 'nothing_to_do' });
  });

  it('refuses an outcome naming another op_id with invalid_state that names the operation in flight', async () => {
    const { t, runId, client } = await setup();
    const { lease } = await client.takeLease(runId, { owner: 'a' }, alice);
    const fence = { owner: 'a', epoch: lease.epoch };
    const result = { kind: 'model_turn_completed', usage: { input_tokens: 1, output_tokens: 1 } };
    const none = await refusal(client.reportOutcome(runId, { fence, op_id: 'op/1', result }, alice));
    expect(none.code).toBe('invalid_state');
    expect(none.details.reason).toBe('no_operation');
    expect(none.message).toBe(
      'op/1 is not the operation in flight (no operation is in flight; op ids read {run_id}/op/{n})',
    );
    const opId = (await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice)).operation?.op_id;
    expect(opId).toBe(`${runId}/op/1`);
    const before = await t.engine.getRun(runId, alice);
    const wrong = await refusal(client.reportOutcome(runId, { fence, op_id: 'op/1', result }, alice));
    expect(wrong.message).toBe(
      `op/1 is not the operation in flight (the operation in flight is ${opId}; op ids read {run_id}/op/{n})`,
    );
    expect((await t.engine.getRun(runId, alice)).last_seq).toBe(before.last_seq);
  });

  it('refuses a second client while the lease is held, and fences the first out once the second took it after expiry', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a', ttl_ms: 5_000 }, alice)).lease;
    expect((await refusal(client.takeLease(runId, { owner: 'b' }, alice))).code).toBe('lease_held');
    const fenceA = { owner: 'a', epoch: a.epoch };
    const op = await client.beginOperation(
      runId,
      {
        fence: fenceA,
        kind: 'tool_call',
        replay_safe: false,
        request: { tool: 'charge', args: { cents: 5 }, mutating: true },
      },
      alice,
    );
    t.clock.advance(6_000);
    const b = (await client.takeLease(runId, { owner: 'b' }, alice)).lease;
    expect(b.epoch).toBeGreaterThan(a.epoch + 1);
    const zombie = await refusal(
      client.reportOutcome(
        runId,
        { fence: fenceA, op_id: op.operation?.op_id, result: { kind: 'tool_result', envelope: { ok: 1 } } },
        alice,
      ),
    );
    expect(zombie.code).toBe('fenced_out');
    expect(zombie.details.reason_code).toBe('session-fence-mismatch');
    const events = await t.engine.readEvents(runId, alice, 0, 100);
    const abandoned = events.find((e) => e.kind === 'operation_failed');
    expect(abandoned?.data).toMatchObject({ outcome_unknown: true, error_class: 'lease_expired' });
    expect(events.some((e) => e.kind === 'tool_result')).toBe(false);
    expect(contiguous(events)).toBe(true);
  });

  it('the sweeper lets an expired client lease go, keeps a replay-safe operation pending, and never steps the run', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a', ttl_ms: 2_000 }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    t.clock.advance(3_000);
    const report = await t.engine.sweep();
    expect(report.taken_over).toBe(1);
    const after = await t.engine.getRun(runId, alice);
    expect(after).toMatchObject({
      status: 'queued',
      lease: null,
      wake_at: null,
      operation: { attempt: 2, started_at: null },
    });
    expect(await t.drainMessages()).toEqual([]);
    t.clock.advance(120_000);
    expect((await t.engine.sweep()).woken).toBe(0);
    // The next client begins the kept operation again, under the same op_id.
    const b = (await client.takeLease(runId, { owner: 'b' }, alice)).lease;
    expect(
      (
        await refusal(
          client.beginOperation(runId, { fence: { owner: 'b', epoch: b.epoch }, kind: 'compaction' }, alice),
        )
      ).details.reason,
    ).toBe('operation_pending');
    const again = await client.beginOperation(
      runId,
      { fence: { owner: 'b', epoch: b.epoch }, kind: 'model_turn' },
      alice,
    );
    expect(again.operation).toMatchObject({ op_id: after.operation?.op_id, attempt: 2 });
  });

  it("names a tool call's call_id on each operation_started, the first attempt and one begun again after a takeover", async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a', ttl_ms: 2_000 }, alice)).lease;
    const begin = (fence: { owner: string; epoch: number }) =>
      client.beginOperation(
        runId,
        {
          fence,
          kind: 'tool_call',
          replay_safe: true,
          request: { tool: 'lookup', args: { id: 7 }, mutating: false, call_id: 'call_7' },
        },
        alice,
      );
    await begin({ owner: 'a', epoch: a.epoch });
    t.clock.advance(3_000);
    expect((await t.engine.sweep()).taken_over).toBe(1);
    const b = (await client.takeLease(runId, { owner: 'b' }, alice)).lease;
    await begin({ owner: 'b', epoch: b.epoch });
    const started = (await t.engine.readEvents(runId, alice, 0, 100)).filter(
      (e) => e.kind === 'operation_started',
    );
    expect(started.map((e) => [e.operation_id, e.data.attempt, e.data.call_id])).toEqual([
      [`${runId}/op/1`, 1, 'call_7'],
      [`${runId}/op/1`, 2, 'call_7'],
    ]);
  });

  it('a stop during a client operation makes the run cancelling, seen at renewal, and stopped when the client reports', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    const op = await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    expect(await t.engine.applyControl(runId, { control_id: 's1', command: 'stop' }, alice)).toMatchObject({
      ack: 'applied',
    });
    const renewed = await client.takeLease(runId, { owner: 'a', epoch: a.epoch }, alice);
    expect(renewed.run.status).toBe('cancelling');
    const ended = await client.reportOutcome(
      runId,
      { fence, op_id: op.operation?.op_id, result: { kind: 'operation_cancelled' } },
      alice,
    );
    expect(ended.run.status).toBe('stopped');
    expect((await refusal(client.takeLease(runId, { owner: 'a', epoch: a.epoch }, alice))).code).toBe(
      'fenced_out',
    );
  });

  it('refuses a steer with when_busy reject during a client operation as run_busy; one with interrupt shows at renewal and waits for the client', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    const op = await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    const busy = await t.engine.applyControl(
      runId,
      { control_id: 'r1', command: 'steer', input: 'no', when_busy: 'reject' },
      alice,
    );
    expect(busy).toMatchObject({ ack: 'rejected', reason: 'run_busy' });
    await t.engine.applyControl(
      runId,
      { control_id: 'i1', command: 'steer', input: 'look at y', when_busy: 'interrupt' },
      alice,
    );
    const renewed = await client.takeLease(runId, { owner: 'a', epoch: a.epoch }, alice);
    expect(renewed.run).toMatchObject({ status: 'running', interrupt_requested: `${runId}/steer/1` });

    const reported = await client.reportOutcome(
      runId,
      { fence, op_id: op.operation?.op_id, result: { kind: 'operation_cancelled' } },
      alice,
    );
    expect(reported.run.status).toBe('running');
    expect(reported.run).not.toHaveProperty('interrupt_requested');
    const taken = await client.takeSteers(runId, { fence }, alice);
    expect(taken.steers.map((s) => s.input)).toEqual(['look at y']);
  });

  it('names the control_ids of the steers a client completes its run without taking', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    await t.engine.applyControl(runId, { control_id: 'late-1', command: 'steer', input: 'and z' }, alice);
    await client.completeRun(runId, { fence, summary: 'done' }, alice);
    const events = await t.engine.readEvents(runId, alice, 0, 100);
    expect(events.find((e) => e.kind === 'steers_discarded')?.data).toEqual({
      count: 1,
      control_ids: ['late-1'],
    });
  });

  it('hands queued steers to the client at its boundary, and opens a question that parks the run waiting', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    await t.engine.applyControl(runId, { control_id: 'st1', command: 'steer', input: 'also do y' }, alice);
    const taken = await client.takeSteers(runId, { fence }, alice);
    expect(taken.steers.map((s) => s.input)).toEqual(['also do y']);
    const asked = await client.openRequest(
      runId,
      { fence, request: { kind: 'input', question: 'which?' } },
      alice,
    );
    const released = await client.releaseLease(runId, { fence }, alice);
    expect(released.run.status).toBe('waiting');
    await t.engine.applyControl(
      runId,
      { control_id: 'ans', command: 'provide_input', request_id: asked.request_id, value: 'x' },
      alice,
    );
    expect((await t.engine.getRun(runId, alice)).status).toBe('queued');
    expect(await t.drainMessages()).toEqual([]);
  });

  it('pauses at begin when a budget is exhausted, keeping the operation, and fences the client out', async () => {
    const { runId, client } = await setup({ max_turns: 1 });
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    const first = await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    await client.reportOutcome(
      runId,
      { fence, op_id: first.operation?.op_id, result: { kind: 'model_turn_completed', usage: {} } },
      alice,
    );
    const second = await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice);
    expect(second.operation).toBeNull();
    expect(second.run).toMatchObject({ status: 'paused', pause_reason: 'budget_exceeded:max_turns' });
    expect((await refusal(client.beginOperation(runId, { fence, kind: 'model_turn' }, alice))).code).toBe(
      'fenced_out',
    );
  });

  it('accepts or refuses a turn outcome of each status by the three rules, and refuses a repeated outcome ref', async () => {
    const { t, runId, client } = await setup();
    const a = (await client.takeLease(runId, { owner: 'a' }, alice)).lease;
    const fence = { owner: 'a', epoch: a.epoch };
    const begin = async () =>
      (await client.beginOperation(runId, { fence, kind: 'model_turn' }, alice)).operation?.op_id as string;
    const report = (opId: string, fields: Record<string, unknown>) =>
      client.reportOutcome(
        runId,
        { fence, op_id: opId, turn_outcome: outcomeDoc(runId, opId, fields) },
        alice,
      );
    const cases: [Record<string, unknown>, string | null][] = [
      [{ status: 'completed' }, 'product/ref'],
      [{ status: 'completed', 'product/ref': 'p1', 'product/digest': 'sha256:1' }, null],
      [{ status: 'refused', 'reason/code': 'policy-denied', 'product/ref': 'p' }, 'product/ref'],
      [{ status: 'refused', 'reason/code': 'policy-denied' }, null],
      [
        {
          status: 'failed',
          'reason/code': 'provider-unavailable',
          retryability: 'retryable',
          'product/digest': 'd',
        },
        'product/digest',
      ],
      [{ status: 'failed', 'reason/code': 'provider-unavailable', retryability: 'retryable' }, null],
      [{ status: 'cancelled', 'reason/code': 'cancelled' }, null],
      [{ status: 'unknown', 'reason/code': 'unknown', retryability: 'terminal' }, 'retryability'],
      [
        { status: 'unknown', 'reason/code': 'session-lost', retryability: 'reconciliation-required' },
        'reason/code',
      ],
      [{ status: 'unknown', 'reason/code': 'unknown', retryability: 'reconciliation-required' }, null],
    ];
    let opId = await begin();
    for (const [fields, refusedField] of cases) {
      if (refusedField === null) {
        await report(opId, fields);
        opId = await begin();
      } else {
        const err = await refusal(report(opId, fields));
        expect(err.code).toBe('validation_failed');
        expect(err.details.reason_code).toBe('event-malformed');
        expect((err.details.issues as { path: string[] }[])[0]?.path).toEqual(['turn_outcome', refusedField]);
      }
    }
    const events = await t.engine.readEvents(runId, alice, 0, 200);
    const results = events.filter((e) => e.data.turn_outcome !== undefined);
    expect(results.map((e) => [e.kind, e.data.outcome_unknown ?? null])).toEqual([
      ['model_turn_completed', null],
      ['operation_failed', false],
      ['operation_failed', false],
      ['operation_cancelled', null],
      ['operation_failed', true],
    ]);
    // Each result event records the document it came from, its usage/fidelity included.
    expect(results[0]?.data.turn_outcome).toMatchObject({ 'usage/fidelity': 'authoritative' });
    expect((await t.engine.getRun(runId, alice)).usage).toMatchObject({
      input_tokens: 50,
      output_tokens: 25,
      turns: 5,
    });
    const doc = outcomeDoc(runId, opId, {
      status: 'cancelled',
      'reason/code': 'cancelled',
      'outcome/ref': 'same',
    });
    await client.reportOutcome(runId, { fence, op_id: opId, turn_outcome: doc }, alice);
    const next = await begin();
    const dup = await refusal(
      client.reportOutcome(runId, { fence, op_id: next, turn_outcome: { ...doc, 'turn/ref': next } }, alice),
    );
    expect(dup).toMatchObject({ code: 'turn_outcome_refused', details: { reason_code: 'event-duplicate' } });
    const stale = await refusal(
      report(next, { 'turn/ref': opId, status: 'cancelled', 'reason/code': 'cancelled' }),
    );
    expect(stale.details.reason_code).toBe('event-stale');
    const fencedOut = await refusal(
      client.reportOutcome(
        runId,
        {
          fence: { owner: 'a', epoch: 0 },
          op_id: next,
          turn_outcome: outcomeDoc(runId, next, { status: 'cancelled', 'reason/code': 'cancelled' }),
        },
        alice,
      ),
    );
    expect(fencedOut.details.reason_code).toBe('session-fence-mismatch');
    expect(contiguous(await t.engine.readEvents(runId, alice, 0, 200))).toBe(true);
  });
});
