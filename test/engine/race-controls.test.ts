/**
 * Race tests around controls, on the memory
 * store and step queue: stop during a model call and while a step message is delayed, an approval
 * whose arguments a steer changed, and one control_id sent twice at once.
 * docs/contracts/run-lifecycle.md, "Controls", "Operations".
 */
import { describe, expect, it } from 'vitest';
import type { ControlAck } from '../../lib/contracts/index.ts';
import { digestOf } from '../../lib/core/canonical.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import type { ModelHost, PolicyDecision, ToolCallRequest } from '../../lib/engine/ports.ts';
import { expectConvergedLog, readAll, scopedStore, shardOfRun } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { askOnce, modelOnce, respond, unchanged } from '../support/reducers.ts';
import { aborted, callWithSteer, latch } from '../support/steer-reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

describe('race 5: stop', () => {
  it('during a model call: the run goes cancelling, then stopped when the call returns, its usage counted, and nothing more starts', async () => {
    const hold = latch();
    let sawAbort = false;
    const model = scriptedModel(async (_turn, signal) => {
      await hold.wait();
      await Promise.race([aborted(signal), new Promise((r) => setTimeout(r, 5_000))]);
      sawAbort = signal.aborted;
      // The provider had already billed the call: the late answer carries its usage.
      return {
        message: { text: 'late' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 120, output_tokens: 30 },
      };
    });
    const tools = inProcessTools({});
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/m': modelOnce() }),
      tools,
      models: model,
      heartbeatMs: 50,
    });
    const store = scopedStore(t.store);
    const engine = t.another({ store });
    const { run } = await engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/m' }, input: 'x' },
      alice,
    );
    const step = engine.stepRun(run.run_id);
    await hold.entered;

    const ack = await engine.applyControl(run.run_id, { control_id: 'stop-1', command: 'stop' }, alice);
    expect(ack.ack).toBe('applied');
    expect((await store.getRun(run.run_id))?.status).toBe('cancelling');
    hold.release();
    expect(await step).toMatchObject({ kind: 'progressed', status: 'stopped' });
    expect(sawAbort).toBe(true); // the heartbeat saw `cancelling` and aborted the interruptible call

    // The sweeper finishes the reducer's bookkeeping of the ended run; still nothing starts.
    await engine.sweep(shardOfRun(run.run_id));
    const stopped = await store.getRun(run.run_id);
    expect(stopped).toMatchObject({
      status: 'stopped',
      lease: null,
      operation: null,
      inbox: [],
      usage: { model_calls: 1, operations: 1, input_tokens: 120, output_tokens: 30 },
    });
    const events = await readAll(store, run.run_id);
    expectConvergedLog(events);
    const kinds = events.map((e) => e.kind);
    expect(kinds.filter((k) => k === 'operation_started')).toHaveLength(1);
    const stopAt = kinds.indexOf('stop_requested');
    expect(kinds.slice(stopAt)).toEqual(
      expect.arrayContaining(['stop_requested', 'operation_cancelled', 'stopped']),
    );
    expect(kinds.indexOf('operation_cancelled')).toBeGreaterThan(stopAt);
    expect(events.find((e) => e.kind === 'operation_cancelled')?.data.acknowledged).toBe(true);
    expect(kinds.lastIndexOf('operation_started')).toBeLessThan(stopAt);
    expect(model.calls).toBe(1);
    expect(tools.executions.size).toBe(0);
  });

  it('while the run waits for a delayed step message: the message, when it comes, starts nothing', async () => {
    const tools = inProcessTools({ lookup: async () => ({ ok: true }) });
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/ask': askOnce() }),
      tools,
      models: noModel,
    });
    const store = scopedStore(t.store);
    const engine = t.another({ store });
    const { run } = await engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, input: 'x' },
      alice,
    );
    // The creation's wake-up is lost; the run waits for a delayed one (a retry with back-off).
    await t.drainMessages();
    await t.queue.send({ run_id: run.run_id }, 1);
    const ack = await engine.applyControl(run.run_id, { control_id: 'stop-2', command: 'stop' }, alice);
    expect(ack.ack).toBe('applied');
    const stopped = await store.getRun(run.run_id);
    expect(stopped).toMatchObject({ status: 'stopped', lease: null });

    // The delayed message comes once its delay has passed (what is visible before is the
    // stop's own wake-up, if any).
    await t.drainMessages();
    t.clock.advance(1_000);
    expect(await t.drainMessages()).toEqual([run.run_id]);
    expect(await engine.stepRun(run.run_id)).toEqual({ kind: 'nothing_to_do', status: 'stopped' });
    const after = await store.getRun(run.run_id);
    // No lease was taken, nothing started; only the reducer's bookkeeping of the ended run (its
    // answers to run_started and stopped, with no effect) was written.
    expect(after).toMatchObject({ status: 'stopped', lease: null, operation: null, epoch: stopped?.epoch });
    const events = await readAll(store, run.run_id);
    const added = events.filter((e) => e.seq > (stopped?.last_seq ?? 0));
    expect(added.every((e) => e.kind === 'reducer_answered')).toBe(true);
    expect(added.every((e) => (e.data.effects as unknown[]).length === 0)).toBe(true);
    expect(events.some((e) => e.kind === 'operation_started' || e.kind === 'request_opened')).toBe(false);
    // A second delivery of the same message changes nothing at all.
    expect(await engine.stepRun(run.run_id)).toEqual({ kind: 'nothing_to_do', status: 'stopped' });
    expect((await store.getRun(run.run_id))?.version).toBe(after?.version);
  });
});

describe('race 6: an approval whose arguments a steer changed', () => {
  it('rejects the approval quoting the old digest, never runs the tool on it, and proceeds on the new one', async () => {
    /** The gate: every deploy needs approval of sha256 over canonical {tool, version, args}. */
    const gate = (r: ToolCallRequest): PolicyDecision => ({
      decision: 'require_approval',
      digest: digestOf({ tool: r.tool, version: '1.0.0', args: r.args }),
      summary: `deploy ${JSON.stringify(r.args)}`,
      tool_version: '1.0.0',
    });
    const deployed: unknown[] = [];
    const tools = inProcessTools(
      {
        deploy: async (r) => {
          deployed.push(r.args);
          return { deployed: r.args };
        },
      },
      gate,
    );
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/deploy': callWithSteer('deploy') }),
      tools,
      models: noModel,
    });
    const store = scopedStore(t.store);
    const engine = t.another({ store });
    const { run } = await engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/deploy' }, input: { version: 1 } },
      alice,
    );
    await engine.stepRun(run.run_id);
    const first = await store.getRun(run.run_id);
    expect(first?.status).toBe('waiting');
    const r1 = first?.open_requests[0];
    if (r1?.kind !== 'approval') throw new Error('no approval opened');
    const d1 = r1.subject.digest;
    expect(d1).toBe(digestOf({ tool: 'deploy', version: '1.0.0', args: { version: 1 } }));

    // A steer changes the arguments: the reducer withdraws the approval and calls again.
    const steer = await engine.applyControl(
      run.run_id,
      { control_id: 'steer-1', command: 'steer', input: { version: 2 } },
      alice,
    );
    expect(steer.ack).toBe('applied');
    await engine.stepRun(run.run_id);
    const second = await store.getRun(run.run_id);
    expect(second?.status).toBe('waiting');
    expect(second?.open_requests).toHaveLength(1);
    const r2 = second?.open_requests[0];
    if (r2?.kind !== 'approval') throw new Error('no second approval opened');
    const d2 = r2.subject.digest;
    expect(d2).toBe(digestOf({ tool: 'deploy', version: '1.0.0', args: { version: 2 } }));
    expect(d2).not.toBe(d1);

    // Approving with what the person saw first (D1) is rejected, on the open request or the withdrawn one.
    const stale = await engine.applyControl(
      run.run_id,
      { control_id: 'approve-d1', command: 'approve', request_id: r2.request_id, subject_digest: d1 },
      alice,
    );
    expect(stale).toMatchObject({ ack: 'rejected', reason: 'digest_mismatch' });
    const withdrawn = await engine.applyControl(
      run.run_id,
      { control_id: 'approve-r1', command: 'approve', request_id: r1.request_id, subject_digest: d1 },
      alice,
    );
    // The withdrawn request was this run's: it is no longer open.
    expect(withdrawn).toMatchObject({ ack: 'rejected', reason: 'request_already_resolved' });
    expect(await engine.stepRun(run.run_id)).toMatchObject({ kind: 'nothing_to_do', status: 'waiting' });
    expect(deployed).toEqual([]);

    const ok = await engine.applyControl(
      run.run_id,
      { control_id: 'approve-d2', command: 'approve', request_id: r2.request_id, subject_digest: d2 },
      alice,
    );
    expect(ok.ack).toBe('applied');
    expect(await engine.stepRun(run.run_id)).toMatchObject({ kind: 'progressed', status: 'completed' });
    expect(deployed).toEqual([{ version: 2 }]);
    const events = await readAll(store, run.run_id);
    expectConvergedLog(events);
    expect(events.filter((e) => e.kind === 'operation_started').map((e) => e.operation_id)).toEqual([
      `${run.run_id}/op/2`,
    ]);
    expect(
      events.filter((e) => e.kind === 'request_closed').map((e) => [e.data.request_id, e.data.reason]),
    ).toEqual([[r1.request_id, 'withdrawn']]);
  });
});

describe('race 7: one control_id sent twice', () => {
  it('concurrently: one event and one applied ack, every other send a duplicate of its seq', async () => {
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/ask': askOnce() }),
      tools: inProcessTools({}),
      models: noModel,
    });
    const store = scopedStore(t.store);
    const engine = t.another({ store });
    const { run } = await engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, input: 'x' },
      alice,
    );
    await engine.stepRun(run.run_id);
    const steer = { control_id: 'steer-twice', command: 'steer', input: 'look again' };

    const acks = await Promise.all(
      Array.from({ length: 8 }, () => engine.applyControl(run.run_id, steer, alice)),
    );
    const applied = acks.filter((a): a is Extract<ControlAck, { ack: 'applied' }> => a.ack === 'applied');
    expect(applied).toHaveLength(1);
    const seq = applied[0]?.seq;
    expect(acks.filter((a) => a.ack !== 'applied')).toEqual(
      Array.from({ length: 7 }, () => ({ ack: 'duplicate', original_seq: seq })),
    );
    const events = await readAll(store, run.run_id);
    const queued = events.filter((e) => e.kind === 'steer_queued');
    expect(queued.map((e) => [e.seq, e.data.control_id])).toEqual([[seq, 'steer-twice']]);

    // The same id with another command is rejected (and logged), and the original ack stands.
    const reused = await engine.applyControl(run.run_id, { ...steer, input: 'something else' }, alice);
    expect(reused).toMatchObject({ ack: 'rejected', reason: 'control_id_reused' });
    const rejectedEvent = (await readAll(store, run.run_id)).find((e) => e.kind === 'control_rejected');
    expect(rejectedEvent?.data).toMatchObject({ control_id: 'steer-twice', reason: 'control_id_reused' });
    expect(await engine.applyControl(run.run_id, steer, alice)).toEqual({
      ack: 'duplicate',
      original_seq: seq,
    });
    const stopAsReuse = await engine.applyControl(
      run.run_id,
      { control_id: 'steer-twice', command: 'stop' },
      alice,
    );
    expect(stopAsReuse).toMatchObject({ ack: 'rejected', reason: 'control_id_reused' });
    expect((await store.getRun(run.run_id))?.status).not.toBe('stopped');
  });
});

describe('a control committed while an operation runs', () => {
  it('never leaves the worker serving an event the log does not hold at that seq', async () => {
    // Prepare: the model calls `lookup`; while it runs, a steer takes the next seq, so the
    // worker's fused commit of the tool's result is stale and must be recomputed. The second
    // model turn is then compiled from the log as the worker knows it.
    const included: { seq: number; kind: string }[][] = [];
    const models: ModelHost = {
      async turn(_input, context) {
        included.push(context.manifest.included.map(({ seq, kind }) => ({ seq, kind })));
        const usage = { input_tokens: 1, output_tokens: 1 };
        return included.length === 1
          ? {
              message: { text: null },
              tool_calls: [{ call_id: 'c1', name: 'lookup', args: {} }],
              finish_reason: 'tool_calls',
              usage,
            }
          : { message: { text: 'done' }, tool_calls: [], finish_reason: 'stop', usage };
      },
    };
    let runId = '';
    let engine: Engine | undefined;
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/model-tool': modelThenTool() }),
      tools: inProcessTools({
        lookup: async () => {
          await engine?.applyControl(
            runId,
            { control_id: 'mid-tool', command: 'steer', input: 'also this' },
            alice,
          );
          return { found: true };
        },
      }),
      models,
    });
    const store = scopedStore(t.store);
    engine = t.another({ store });
    const { run } = await engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/model-tool' }, input: 'x' },
      alice,
    );
    runId = run.run_id;

    // Act
    for (let i = 0; i < 5 && (await store.getRun(runId))?.status !== 'completed'; i += 1) {
      await engine.stepRun(runId);
    }

    // Assert: every event a model context was built from is the logged event at that seq.
    const log = new Map((await readAll(store, runId)).map((e) => [e.seq, e.kind]));
    expect((await store.getRun(runId))?.status).toBe('completed');
    expect(included).toHaveLength(2);
    for (const turn of included) {
      for (const { seq, kind } of turn) expect({ seq, kind }).toEqual({ seq, kind: log.get(seq) });
    }
    expect(included[1]?.filter((e) => e.kind === 'tool_result')).toHaveLength(1);
  });
});

/** Asks the model; runs the one tool call it makes (c1), then asks again; completes on a text reply. */
function modelThenTool() {
  type R = {
    state: { seen: number } | null;
    state_rev: number;
    event: {
      seq: number;
      kind: string;
      data: { tool_calls?: { call_id: string }[]; envelope?: { status: string } };
    };
  };
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as R;
    if (req.event.seq <= (req.state?.seen ?? 0)) return unchanged(req);
    const answer = (effects: Record<string, unknown>[]) => respond(req, { seen: req.event.seq }, effects);
    const { kind, data, seq } = req.event;
    if (kind === 'run_started') return answer([{ kind: 'request_model_turn', tools_offered: [] }]);
    if (kind === 'model_turn_completed') {
      const call = data.tool_calls?.[0];
      if (call === undefined) return answer([{ kind: 'complete', outcome: 'succeeded', summary: 'ok' }]);
      return answer([
        {
          kind: 'call_tool',
          tool: 'lookup',
          args: {},
          mutating: false,
          replay_safe: true,
          for_call_id: call.call_id,
        },
      ]);
    }
    if (kind === 'tool_result') {
      return answer([
        {
          kind: 'request_model_turn',
          tools_offered: [],
          tool_results: [
            { call_id: 'c1', name: 'lookup', status: data.envelope?.status ?? 'succeeded', seq },
          ],
        },
      ]);
    }
    return answer([]);
  };
}

/**
 * Runs the `steerable` reducer (windowed or not) while `steers` steers arrive during its first
 * model call, to the run's end. Returns what each model turn was compiled from, and the log.
 */
async function steeredDuringFirstTurn(windowed: boolean, steers: number) {
  const hold = latch();
  const seen: { kinds: string[]; to: number }[] = [];
  const models: ModelHost = {
    async turn(_input, context) {
      if (seen.length === 0) await hold.wait();
      seen.push({ kinds: context.manifest.included.map((e) => e.kind), to: context.manifest.to_seq });
      return {
        message: { text: `reply ${seen.length}` },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 1, output_tokens: 1 },
      };
    },
  };
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ '/r/steerable': steerable(windowed) }),
    tools: inProcessTools({}),
    models,
  });
  const store = scopedStore(t.store);
  const engine = t.another({ store });
  const { run } = await engine.createRun(
    { subject: uniqueSubject(), reducer: { function_path: '/r/steerable' }, input: 'start' },
    alice,
  );
  const stepping = engine.stepRun(run.run_id);
  await hold.entered;
  for (let n = 1; n <= steers; n += 1) {
    await engine.applyControl(
      run.run_id,
      { control_id: `s${n}`, command: 'steer', input: `steer ${n}` },
      alice,
    );
  }
  hold.release();
  await stepping;
  for (let i = 0; i < 3 && (await store.getRun(run.run_id))?.status !== 'completed'; i += 1) {
    await engine.stepRun(run.run_id);
  }
  return { seen, status: (await store.getRun(run.run_id))?.status, log: await readAll(store, run.run_id) };
}

describe('steers queued during an operation', () => {
  it('are all consumed at the next boundary, and one model turn answers them together', async () => {
    const { seen, status, log } = await steeredDuringFirstTurn(false, 3);

    expect(status).toBe('completed');
    expect(seen).toHaveLength(2);
    expect(seen[1]?.kinds.filter((k) => k === 'steer_consumed')).toHaveLength(3);
    const consumed = log.filter((e) => e.kind === 'steer_consumed').map((e) => e.seq);
    expect(consumed).toEqual([consumed[0], (consumed[0] ?? 0) + 1, (consumed[0] ?? 0) + 2]);
  });
});

describe('a model turn’s transcript window', () => {
  it('leaves events after the to_seq the reducer asked for (steers consumed since) to the next turn', async () => {
    const { seen, log } = await steeredDuringFirstTurn(true, 2);

    const firstSteer = log.find((e) => e.kind === 'steer_consumed')?.seq;
    expect(seen[1]?.to).toBe(firstSteer);
    expect(seen[1]?.kinds.filter((k) => k === 'steer_consumed')).toHaveLength(1);
  });
});

/**
 * Asks the model; after its reply, a user_input (a consumed steer) asks it again unless a model
 * turn is already pending; completes after the second reply.
 */
function steerable(windowed = false) {
  type S = { seen: number; pending: boolean; replies: number };
  type R = { state: S | null; state_rev: number; event: { seq: number; kind: string } };
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as R;
    const st: S = req.state ?? { seen: 0, pending: false, replies: 0 };
    if (req.event.seq <= st.seen) return unchanged(req);
    const answer = (next: Partial<S>, effects: Record<string, unknown>[]) =>
      respond(req, { ...st, seen: req.event.seq, ...next }, effects);
    // Windowed: the model sees the log up to the event the reducer answered (transcript.to_seq).
    const turn = {
      kind: 'request_model_turn',
      tools_offered: [],
      ...(windowed ? { context: { transcript: { from_seq: 1, to_seq: req.event.seq } } } : {}),
    };
    switch (req.event.kind) {
      case 'run_started':
        return answer({ pending: true }, [turn]);
      case 'model_turn_completed':
        if (st.replies + 1 >= 2)
          return answer({ pending: false, replies: 2 }, [
            { kind: 'complete', outcome: 'succeeded', summary: 'ok' },
          ]);
        return answer({ pending: false, replies: st.replies + 1 }, []);
      case 'user_input':
        return st.pending ? answer({}, []) : answer({ pending: true }, [turn]);
      default:
        return answer({}, []);
    }
  };
}
