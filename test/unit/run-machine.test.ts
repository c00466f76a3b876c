import { describe, expect, it } from 'vitest';
import type { RunRecord, ToolResultEnvelope } from '../../lib/contracts/index.ts';
import { controlDigest } from '../../lib/core/controls.ts';
import { effectiveProjection } from '../../lib/core/projection.ts';
import {
  acquireLease,
  applyReducerAnswer,
  consumeSteer,
  decideControl,
  deliverResult,
  expireRequests,
  type Fence,
  finishOperation,
  gateOperation,
  releaseLease,
  startOperation,
  stopRun,
  type TransitionResult,
  takeOver,
} from '../../lib/core/run-machine.ts';
import { modelEffect, newRun, toolEffect } from '../support/runs.ts';

function ok(result: TransitionResult): Extract<TransitionResult, { ok: true }> {
  if (!result.ok) throw new Error(`expected ok, got ${result.code}: ${result.message}`);
  return result;
}

const envelope = (
  status: ToolResultEnvelope['status'] = 'succeeded',
  extra: Partial<ToolResultEnvelope> = {},
): ToolResultEnvelope => ({
  envelope: 'raisin.tool-result/1',
  status,
  reads: [],
  writes: [],
  artifact_refs: [],
  evidence: [],
  diagnostics: [],
  suggested_next_actions: [],
  ...extra,
});

/** A run leased by worker w1 whose reducer answered run_started with `effects`. */
function leasedWith(effects = [toolEffect(1)], now = 2_000): { record: RunRecord; fence: Fence } {
  const leased = ok(acquireLease(newRun(), 'w1', now)).record;
  const answered = ok(
    applyReducerAnswer(
      leased,
      { event_seq: 1, state_rev: 1, effects, projection: null, diagnostics: [] },
      now,
    ),
  );
  return { record: answered.record, fence: { owner: 'w1', epoch: leased.epoch } };
}

function control(
  record: RunRecord,
  c: Parameters<typeof controlDigest>[0],
  now = 3_000,
  previous: { digest: string; seq: number } | null = null,
) {
  return decideControl(record, c, controlDigest(c), previous, now);
}

describe('run creation and leases', () => {
  it('creates a queued run whose first event is run_started at seq 1', () => {
    const result = newRun();
    expect(result.status).toBe('queued');
    expect(result.last_seq).toBe(1);
    expect(result.inbox).toEqual([1]);
  });

  it('bumps the epoch on acquire and on release, and refuses a second holder', () => {
    const run = newRun();
    const leased = ok(acquireLease(run, 'w1', 2_000)).record;
    expect(leased.epoch).toBe(run.epoch + 1);
    expect(leased.status).toBe('running');
    expect(acquireLease(leased, 'w2', 2_001)).toMatchObject({ ok: false, code: 'lease_held' });
    const released = ok(releaseLease(leased, { owner: 'w1', epoch: leased.epoch }, 2_002)).record;
    expect(released.epoch).toBe(leased.epoch + 1);
    expect(released.lease).toBeNull();
  });

  it('refuses a release or a commit from a fenced-out worker', () => {
    const { record } = leasedWith();
    expect(releaseLease(record, { owner: 'w1', epoch: record.epoch - 1 }, 2_100)).toMatchObject({
      ok: false,
      code: 'lease_lost',
    });
    expect(releaseLease(record, { owner: 'zombie', epoch: record.epoch }, 2_100)).toMatchObject({
      ok: false,
      code: 'lease_lost',
    });
  });
});

describe('operations', () => {
  it('starts the pending operation and records its result with usage in one transition', () => {
    const { record, fence } = leasedWith();
    const started = ok(startOperation(record, 2_100)).record;
    expect(started.operation?.started_at).toBe(2_100);
    const done = ok(finishOperation(started, fence, { kind: 'tool_result', envelope: envelope() }, 2_200));
    expect(done.record.operation).toBeNull();
    expect(done.record.usage.tool_calls).toBe(1);
    expect(done.events.map((e) => e.kind)).toEqual(['tool_result']);
    expect(done.record.inbox).toEqual([done.events[0]?.seq]);
  });

  it('parks a tool that answers waiting and resumes it when the result is delivered', () => {
    const { record, fence } = leasedWith();
    const started = ok(startOperation(record, 2_100)).record;
    const parked = ok(
      finishOperation(
        started,
        fence,
        { kind: 'tool_result', envelope: envelope('waiting', { resume_key: 'child:r9' }) },
        2_200,
      ),
    ).record;
    const released = ok(releaseLease(parked, fence, 2_300)).record;
    expect(released.status).toBe('waiting');
    const delivered = ok(deliverResult(released, 'child:r9', envelope(), 2_400));
    expect(delivered.record.status).toBe('queued');
    expect(delivered.events.map((e) => e.kind)).toEqual(['result_delivered', 'tool_result']);
    expect(deliverResult(delivered.record, 'child:r9', envelope(), 2_500)).toMatchObject({
      ok: false,
      code: 'request_not_found',
    });
  });

  it('pauses with the operation kept when a budget is exceeded and on_exceeded is pause', () => {
    const run = newRun({ budgets: { max_operations: 1 } });
    const leased = ok(acquireLease(run, 'w1', 2_000)).record;
    const fence = { owner: 'w1', epoch: leased.epoch };
    let r = ok(
      applyReducerAnswer(
        leased,
        { event_seq: 1, state_rev: 1, effects: [toolEffect(1)], projection: null, diagnostics: [] },
        2_000,
      ),
    ).record;
    r = ok(startOperation(r, 2_001)).record;
    r = ok(finishOperation(r, fence, { kind: 'tool_result', envelope: envelope() }, 2_002)).record;
    r = ok(
      applyReducerAnswer(
        r,
        {
          event_seq: r.inbox[0] ?? 0,
          state_rev: 2,
          effects: [toolEffect(2)],
          projection: null,
          diagnostics: [],
        },
        2_003,
      ),
    ).record;
    const paused = ok(startOperation(r, 2_004));
    expect(paused.record.status).toBe('paused');
    expect(paused.record.operation?.started_at).toBeNull();
    expect(paused.events.map((e) => e.kind)).toEqual(['budget_exceeded', 'paused', 'checkpoint_written']);
    const resumed = control(paused.record, {
      control_id: 'c1',
      command: 'resume',
      budget_increase: { max_operations: 1 },
    });
    expect(resumed.kind).toBe('applied');
    if (resumed.kind !== 'applied') return;
    expect(resumed.record.budgets.max_operations).toBe(2);
    expect(resumed.record.status).toBe('queued');
  });

  it('holds token totals at Number.MAX_SAFE_INTEGER instead of breaking the record', () => {
    const run = newRun();
    const near = {
      ...run,
      usage: { ...run.usage, input_tokens: Number.MAX_SAFE_INTEGER - 3 },
    } as typeof run;
    const leased = ok(acquireLease(near, 'w1', 2_000)).record;
    const fence = { owner: 'w1', epoch: leased.epoch };
    let r = ok(
      applyReducerAnswer(
        leased,
        { event_seq: 1, state_rev: 1, effects: [modelEffect(1)], projection: null, diagnostics: [] },
        2_000,
      ),
    ).record;
    r = ok(startOperation(r, 2_001)).record;
    const finished = ok(
      finishOperation(
        r,
        fence,
        {
          kind: 'model_turn_completed',
          message: { text: 'hi' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 10, output_tokens: 2 },
        },
        2_002,
      ),
    ).record;
    expect(finished.usage.input_tokens).toBe(Number.MAX_SAFE_INTEGER);
    expect(finished.usage.output_tokens).toBe(2);
  });

  it('fails the run with budget_exceeded:<which> when on_exceeded is fail', () => {
    const run = newRun({ budgets: { max_model_calls: 1 }, on_exceeded: 'fail' });
    const leased = ok(acquireLease(run, 'w1', 2_000)).record;
    const fence = { owner: 'w1', epoch: leased.epoch };
    let r = ok(
      applyReducerAnswer(
        leased,
        { event_seq: 1, state_rev: 1, effects: [modelEffect(1)], projection: null, diagnostics: [] },
        2_000,
      ),
    ).record;
    r = ok(startOperation(r, 2_001)).record;
    r = ok(
      finishOperation(
        r,
        fence,
        {
          kind: 'model_turn_completed',
          message: { text: 'hi' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 5, output_tokens: 2 },
        },
        2_002,
      ),
    ).record;
    r = ok(
      applyReducerAnswer(
        r,
        {
          event_seq: r.inbox[0] ?? 0,
          state_rev: 2,
          effects: [modelEffect(2)],
          projection: null,
          diagnostics: [],
        },
        2_003,
      ),
    ).record;
    const failed = ok(startOperation(r, 2_004)).record;
    expect(failed.status).toBe('failed');
    expect(failed.status === 'failed' && failed.terminal_reason).toBe('budget_exceeded:max_model_calls');
    expect(failed.lease).toBeNull();
  });
});

describe('takeover by the sweeper', () => {
  it('keeps a replay-safe operation for dispatch again under the same op_id', () => {
    const { record } = leasedWith([toolEffect(1, 0, { replay_safe: true })]);
    const started = ok(startOperation(record, 2_100)).record;
    const taken = ok(takeOver(started, 2_100 + 90_001));
    expect(taken.record.operation?.op_id).toBe(started.operation?.op_id);
    expect(taken.record.operation?.attempt).toBe(2);
    expect(taken.record.operation?.started_at).toBeNull();
    expect(taken.record.epoch).toBe(started.epoch + 1);
    expect(taken.record.status).toBe('queued');
  });

  it('reports a non-replay-safe operation as operation_failed with outcome_unknown', () => {
    const { record } = leasedWith([toolEffect(1, 0, { replay_safe: false, mutating: true })]);
    const started = ok(startOperation(record, 2_100)).record;
    const taken = ok(takeOver(started, 2_100 + 90_001));
    expect(taken.record.operation).toBeNull();
    const failed = taken.events.find((e) => e.kind === 'operation_failed');
    expect(failed?.data).toMatchObject({ outcome_unknown: true, retryable: false });
  });

  it('refuses to take over a lease that has not expired', () => {
    const { record } = leasedWith();
    expect(takeOver(record, 2_500)).toMatchObject({ ok: false, code: 'lease_held' });
  });
});

describe('controls', () => {
  it('stops immediately between operations and closes open requests', () => {
    const { record, fence } = leasedWith([{ effect_id: '1:0', kind: 'ask_user', question: 'which flight?' }]);
    const waiting = ok(releaseLease(record, fence, 2_100)).record;
    expect(waiting.status).toBe('waiting');
    const decision = control(waiting, { control_id: 'c1', command: 'stop' });
    expect(decision.kind).toBe('applied');
    if (decision.kind !== 'applied') return;
    expect(decision.record.status).toBe('stopped');
    expect(decision.record.open_requests).toEqual([]);
    expect(decision.events.map((e) => e.kind)).toEqual(['stopped', 'request_closed']);
  });

  it('enters cancelling during an operation and stops when it returns, counting its usage', () => {
    const { record, fence } = leasedWith([modelEffect(1)]);
    const started = ok(startOperation(record, 2_100)).record;
    const decision = control(started, { control_id: 'c1', command: 'stop' });
    if (decision.kind !== 'applied') throw new Error('not applied');
    expect(decision.record.status).toBe('cancelling');
    const late = ok(
      finishOperation(
        decision.record,
        fence,
        {
          kind: 'model_turn_completed',
          message: { text: 'late' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 10, output_tokens: 3 },
        },
        2_200,
      ),
    );
    expect(late.record.status).toBe('stopped');
    expect(late.record.usage.input_tokens).toBe(10);
    expect(late.record.lease).toBeNull();
  });

  it('answers a repeated control with the original seq and a reused id with control_id_reused', () => {
    const run = newRun();
    const first = control(run, { control_id: 'c1', command: 'steer', input: 'faster' });
    if (first.kind !== 'applied') throw new Error('not applied');
    const digest = controlDigest({ control_id: 'c1', command: 'steer', input: 'faster' });
    const again = control(first.record, { control_id: 'c1', command: 'steer', input: 'faster' }, 3_001, {
      digest,
      seq: first.seq,
    });
    expect(again).toEqual({ kind: 'duplicate', original_seq: first.seq });
    const reused = control(first.record, { control_id: 'c1', command: 'stop' }, 3_002, {
      digest,
      seq: first.seq,
    });
    expect(reused.kind === 'rejected' && reused.reason).toBe('control_id_reused');
  });

  it('rejects every control on a terminal run with run_terminal', () => {
    const stopped = ok(stopRun(newRun(), 'done', 2_000)).record;
    const decision = control(stopped, { control_id: 'c9', command: 'steer', input: 'x' });
    expect(decision.kind === 'rejected' && decision.reason).toBe('run_terminal');
  });

  it('rejects a control to an ended run without writing anything: no event, the seq of its last event', () => {
    const stopped = ok(stopRun(newRun(), 'done', 2_000)).record;
    const c = { control_id: 'c1', command: 'stop' } as const;
    const decision = decideControl(stopped, c, controlDigest(c), null, 3_000);
    expect(decision).toMatchObject({
      kind: 'rejected',
      reason: 'run_terminal',
      events: [],
      seq: stopped.last_seq,
    });
    if (decision.kind === 'rejected') expect(decision.record).toBe(stopped);
  });

  it('applies an approval only with the current digest', () => {
    const { record, fence } = leasedWith([toolEffect(1, 0, { mutating: true })]);
    const gated = ok(
      gateOperation(
        record,
        { digest: 'd2', summary: 'cancel booking', tool: 'cancel', tool_version: '1.0.0' },
        2_050,
      ),
    ).record;
    const waiting = ok(releaseLease(gated, fence, 2_100)).record;
    expect(waiting.status).toBe('waiting');
    const requestId = waiting.open_requests[0]?.request_id ?? '';
    const stale = control(waiting, {
      control_id: 'a1',
      command: 'approve',
      request_id: requestId,
      subject_digest: 'd1',
      decision: 'approved',
    });
    expect(stale.kind === 'rejected' && stale.reason).toBe('digest_mismatch');
    if (stale.kind !== 'rejected') return;
    expect(stale.record.operation?.approved_digest).toBeUndefined();
    const good = control(stale.record, {
      control_id: 'a2',
      command: 'approve',
      request_id: requestId,
      subject_digest: 'd2',
      decision: 'approved',
    });
    if (good.kind !== 'applied') throw new Error('not applied');
    expect(good.record.status).toBe('queued');
    expect(good.record.operation?.approved_digest).toBe('d2');
  });

  it('closes an expired request and drops the operation it gated', () => {
    const { record, fence } = leasedWith([toolEffect(1, 0, { mutating: true })]);
    const gated = ok(
      gateOperation(record, { digest: 'd', summary: 's', tool: 't', tool_version: '1.0.0' }, 2_050, 1_000),
    ).record;
    const waiting = ok(releaseLease(gated, fence, 2_100)).record;
    expect(waiting.wake_at).toBe(3_050);
    const expired = ok(expireRequests(waiting, 3_050));
    expect(expired.record.operation).toBeNull();
    expect(expired.record.status).toBe('queued');
    expect(expired.events.map((e) => e.kind)).toEqual(['request_closed']);
  });
});

describe('steers while busy (when_busy)', () => {
  /** A leased run with a tool call in flight (`interruptible` as given). */
  function inFlight(interruptible = true) {
    const { record, fence } = leasedWith([toolEffect(1, 0, { interruptible })]);
    return { record: ok(startOperation(record, 2_100)).record, fence };
  }
  const steer = (when_busy?: 'enqueue' | 'reject' | 'interrupt') =>
    ({
      control_id: `s-${when_busy}`,
      command: 'steer',
      input: 'also B-9',
      ...(when_busy ? { when_busy } : {}),
    }) as const;

  it('never starts a server-driven run’s pending operation while a steer is queued: it is consumed first', () => {
    const { record } = leasedWith();
    const steered = control(record, steer());
    if (steered.kind !== 'applied') throw new Error('not applied');
    const refused = startOperation(steered.record, 3_100);
    expect(refused).toMatchObject({ ok: false, code: 'steers_queued' });
    const consumed = ok(consumeSteer(steered.record, 3_100)).record;
    expect(ok(startOperation(consumed, 3_200)).record.operation?.started_at).toBe(3_200);
  });

  it('queues a steer between operations whatever when_busy says', () => {
    for (const mode of ['enqueue', 'reject', 'interrupt'] as const) {
      const decision = control(leasedWith().record, steer(mode));
      if (decision.kind !== 'applied') throw new Error(`${mode}: ${decision.kind}`);
      expect(decision.record.queued_steers).toHaveLength(1);
      expect(decision.record).not.toHaveProperty('interrupt_requested');
    }
  });

  it('rejects a steer with when_busy reject while an operation is in flight as run_busy, queueing nothing', () => {
    const { record } = inFlight();
    const decision = control(record, steer('reject'));
    expect(decision).toMatchObject({ kind: 'rejected', reason: 'run_busy' });
    if (decision.kind !== 'rejected') throw new Error('not rejected');
    expect(decision.record.queued_steers).toEqual([]);
    expect(decision.events.map((e) => e.kind)).toEqual(['control_rejected']);
  });

  it('queues a steer without when_busy, or with enqueue, behind the operation in flight and leaves it running', () => {
    for (const mode of [undefined, 'enqueue'] as const) {
      const decision = control(inFlight().record, steer(mode));
      if (decision.kind !== 'applied') throw new Error('not applied');
      expect(decision.record).toMatchObject({ status: 'running', queued_steers: [{ input: 'also B-9' }] });
      expect(decision.record).not.toHaveProperty('interrupt_requested');
    }
  });

  it('marks an interruptible operation in flight for interruption, and drops the mark once it was cancelled', () => {
    const { record, fence } = inFlight();
    const decision = control(record, steer('interrupt'));
    if (decision.kind !== 'applied') throw new Error('not applied');
    const steerId = `${record.run_id}/steer/1`;
    expect(decision.record).toMatchObject({ status: 'running', interrupt_requested: steerId });
    expect(decision.events[0]?.data).toMatchObject({
      steer_id: steerId,
      when_busy: 'interrupt',
      interrupts: record.operation?.op_id,
    });

    const cancelled = ok(
      finishOperation(decision.record, fence, { kind: 'operation_cancelled', acknowledged: true }, 3_100),
    );
    expect(cancelled.record).toMatchObject({
      status: 'running',
      operation: null,
      queued_steers: [{ steer_id: steerId }],
    });
    expect(cancelled.record).not.toHaveProperty('interrupt_requested');
    expect(cancelled.events.map((e) => e.kind)).toEqual(['operation_cancelled']);
  });

  it('lets a non-interruptible operation run on: an interrupting steer is only queued', () => {
    const decision = control(inFlight(false).record, steer('interrupt'));
    if (decision.kind !== 'applied') throw new Error('not applied');
    expect(decision.record.queued_steers).toHaveLength(1);
    expect(decision.record).not.toHaveProperty('interrupt_requested');
    expect(decision.events[0]?.data).not.toHaveProperty('interrupts');
  });

  it('drops an interrupt when a stop follows: the run is cancelling, the steer is discarded at the end', () => {
    const { record, fence } = inFlight();
    const interrupted = control(record, steer('interrupt'));
    if (interrupted.kind !== 'applied') throw new Error('not applied');
    const stopping = control(interrupted.record, { control_id: 'halt', command: 'stop' }, 3_050);
    if (stopping.kind !== 'applied') throw new Error('not applied');
    expect(stopping.record.status).toBe('cancelling');
    expect(stopping.record).not.toHaveProperty('interrupt_requested');
    const stopped = ok(
      finishOperation(stopping.record, fence, { kind: 'operation_cancelled', acknowledged: true }, 3_100),
    );
    expect(stopped.events.find((e) => e.kind === 'steers_discarded')?.data).toEqual({
      count: 1,
      control_ids: ['s-interrupt'],
    });
  });
});

describe('effective projection', () => {
  it('shows in_progress only while running', () => {
    const projection = { items: [{ key: 'a', title: 'A', status: 'in_progress' as const }] };
    expect(effectiveProjection(projection, 'running')?.items[0]?.status).toBe('in_progress');
    expect(effectiveProjection(projection, 'stopped')?.items[0]?.status).toBe('stopped');
    expect(effectiveProjection(projection, 'paused')?.items[0]?.status).toBe('paused');
    expect(effectiveProjection(projection, 'waiting')?.items[0]?.status).toBe('waiting');
  });
});

describe('a pause that lands during a model turn', () => {
  it("pauses at the turn's end and keeps its event for the reducer until a resume", () => {
    // A model turn under way; a pause control lands while it runs.
    const { record, fence } = leasedWith([modelEffect(1)]);
    const running = ok(startOperation(record, 2_001)).record;
    const paused = control(running, { control_id: 'p1', command: 'pause' });
    if (paused.kind !== 'applied') throw new Error(`expected applied, got ${paused.kind}`);
    // The worker's result lands at the boundary: the run pauses there.
    const ended = ok(
      finishOperation(
        paused.record,
        fence,
        {
          kind: 'model_turn_completed',
          message: { text: 'done' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 1, output_tokens: 1 },
        },
        3_001,
      ),
    ).record;
    expect(ended.status).toBe('paused');
    const event = ended.inbox[0] ?? 0;
    expect(event).toBeGreaterThan(0);
    // The reducer's answer to that event, computed before the pause landed, is not applied:
    // the run cannot complete while paused.
    const answer = {
      event_seq: event,
      state_rev: ended.state_rev + 1,
      effects: [{ effect_id: 'e-done', kind: 'complete' as const, outcome: 'succeeded' as const }],
      projection: null,
      diagnostics: [],
    };
    expect(applyReducerAnswer(ended, answer as never, 3_002)).toMatchObject({
      ok: false,
      code: 'invalid_state',
    });
    expect(ended.inbox).toEqual([event]);
  });
});

describe('control rejection reasons', () => {
  it('names a second stop (and a pause) of a stopping run already_stopping', () => {
    const { record } = leasedWith();
    const running = ok(startOperation(record, 2_001)).record;
    const first = control(running, { control_id: 's1', command: 'stop' });
    if (first.kind !== 'applied') throw new Error(`expected applied, got ${first.kind}`);
    expect(first.record.status).toBe('cancelling');
    expect(control(first.record, { control_id: 's2', command: 'stop' })).toMatchObject({
      kind: 'rejected',
      reason: 'already_stopping',
    });
    expect(control(first.record, { control_id: 'p1', command: 'pause' })).toMatchObject({
      kind: 'rejected',
      reason: 'already_stopping',
    });
  });

  it('names a pause of a paused run already_paused', () => {
    const paused = control(newRun(), { control_id: 'p1', command: 'pause' });
    if (paused.kind !== 'applied') throw new Error(`expected applied, got ${paused.kind}`);
    expect(control(paused.record, { control_id: 'p2', command: 'pause' })).toMatchObject({
      kind: 'rejected',
      reason: 'already_paused',
    });
  });
});
