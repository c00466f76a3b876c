/**
 * The engine end to end on the memory store and a memory step queue (the store contract suite
 * keeps the memory store's semantics DynamoDB's): tool loops, create idempotency, waiting, large
 * payloads, a commit that can never be stored, model usage. docs/architecture.md, "The commit",
 * "The step".
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { RESULT_EXPIRY_MS } from '../../lib/core/run-machine.ts';
import {
  alice,
  envelopeOf,
  inProcessReducers,
  inProcessTools,
  scriptedModel,
  uniqueSubject,
} from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { askOnce, modelOnce, respond, toolLoop, unchanged } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

function expectContiguous(events: RunEvent[]) {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
}

describe('engine on the memory store', () => {
  it('runs a reducer through three tool calls to completion with one transaction per operation', async () => {
    const tools = inProcessTools({ lookup: async (r) => ({ echo: r.args.i }) });
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(3) }),
      tools,
      models: noModel,
    });
    const { run, created, control_capability } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
      alice,
    );
    expect(created).toBe(true);
    expect(control_capability).toBeTypeOf('string');
    expect(await t.drainMessages()).toEqual([run.run_id]);
    const before = t.store.metrics.transactions;
    const outcome = await t.engine.stepRun(run.run_id);
    expect(outcome).toMatchObject({ kind: 'progressed', status: 'completed', operations: 3 });
    // 3 fused operation commits (the first one also takes the lease) + the final answer (complete).
    expect(t.store.metrics.transactions - before).toBe(4);
    const done = await t.engine.getRun(run.run_id, alice);
    expect(done.status).toBe('completed');
    expect(done.lease).toBeNull();
    expect(done.usage.tool_calls).toBe(3);
    const events = await t.engine.readEvents(run.run_id, alice, 0, 1000);
    expectContiguous(events);
    expect(events.filter((e) => e.kind === 'tool_result')).toHaveLength(3);
    expect([...tools.executions.values()]).toEqual([1, 1, 1]);
  });

  it('returns the live run with created false for the same subject, and honours create_key', async () => {
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/ask': askOnce() }),
      tools: inProcessTools({}),
      models: noModel,
    });
    const subject = uniqueSubject();
    const first = await t.engine.createRun(
      { subject, reducer: { function_path: '/r/ask' }, input: 'x', create_key: 'k1' },
      alice,
    );
    const again = await t.engine.createRun(
      { subject, reducer: { function_path: '/r/ask' }, input: 'x' },
      alice,
    );
    expect(again.created).toBe(false);
    expect(again.run.run_id).toBe(first.run.run_id);
    expect(again.control_capability).toBeUndefined();
    const byKey = await t.engine.createRun(
      { subject, reducer: { function_path: '/r/ask' }, input: 'x', create_key: 'k1' },
      alice,
    );
    expect(byKey).toMatchObject({ created: false, run: { run_id: first.run.run_id } });
    // The same key for another request is refused, not answered with the old run.
    await expect(
      t.engine.createRun(
        { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, input: 'x', create_key: 'k1' },
        alice,
      ),
    ).rejects.toMatchObject({ code: 'create_key_reused' });
  });

  it('waits for an answer holding no lease, and completes with it', async () => {
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/ask': askOnce() }),
      tools: inProcessTools({}),
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/ask' }, input: 'x' },
      alice,
    );
    await t.engine.stepRun(run.run_id);
    const waiting = await t.engine.getRun(run.run_id, alice);
    expect(waiting.status).toBe('waiting');
    expect(waiting.lease).toBeNull();
    const request = waiting.open_requests[0];
    const ack = await t.engine.applyControl(
      run.run_id,
      { control_id: 'a1', command: 'provide_input', request_id: request?.request_id, value: 'HAT001' },
      alice,
    );
    expect(ack.ack).toBe('applied');
    await t.engine.stepRun(run.run_id);
    const done = await t.engine.getRun(run.run_id, alice);
    expect(done).toMatchObject({ status: 'completed', summary: 'HAT001' });
  });

  it('closes the result request of a tool that names no expiry at the default (24 h), and the reducer sees request_closed', async () => {
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/park': toolLoop(1, 'park') }),
      tools: {
        ...inProcessTools({ park: async () => null }),
        // A tool answering waiting, whose metadata names no result_expires_in_ms.
        execute: async (r) => ({ ...envelopeOf(null, 'waiting'), resume_key: `park-${r.run_id}` }),
      },
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/park' }, input: 'x' },
      alice,
    );
    await t.engine.stepRun(run.run_id);
    const parked = await t.engine.getRun(run.run_id, alice);
    const [open] = parked.open_requests;
    expect(parked.status).toBe('waiting');
    expect(open?.expires_at).toBe((open?.opened_at ?? 0) + RESULT_EXPIRY_MS);

    // The test clock is the wall clock plus an offset: a minute either side of the expiry.
    t.clock.advance((open?.expires_at ?? 0) - t.clock.now() - 60_000);
    expect((await t.engine.sweep()).expired).toBe(0);
    t.clock.advance(120_000);
    expect((await t.engine.sweep()).expired).toBe(1);
    for (const id of await t.drainMessages()) await t.engine.stepRun(id);

    const events = await t.engine.readEvents(run.run_id, alice, 0, 100);
    const closed = events.find((e) => e.kind === 'request_closed');
    expect(closed?.data).toEqual({ request_id: open?.request_id, reason: 'expired' });
    expect((await t.engine.getRun(run.run_id, alice)).reduced_seq).toBeGreaterThanOrEqual(closed?.seq ?? 0);
  });

  it('commits and reads back a 450 KB tool result intact through the blob store', async () => {
    const big = 'x'.repeat(450 * 1024);
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(1) }),
      tools: inProcessTools({ lookup: async () => ({ big }) }),
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'x' },
      alice,
    );
    await t.engine.stepRun(run.run_id);
    const events = await t.engine.readEvents(run.run_id, alice, 0, 100);
    const result = events.find((e) => e.kind === 'tool_result');
    const envelope = result?.data.envelope as { payload: { big: string } } | undefined;
    expect(envelope?.payload.big).toBe(big);
  });

  it('fails the run commit_refused, once, when what a step staged can never be stored (a 400 KB tool call in the record)', async () => {
    // The reducer asks for a tool call whose args would make the run record larger than an item may be.
    const huge = 'y'.repeat(400 * 1024);
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({
        '/r/huge': (raw: Record<string, unknown>) => {
          const req = raw as { state: unknown; state_rev: number; event: { kind: string } };
          if (req.event.kind !== 'run_started') return unchanged(req);
          return respond(req, { started: true }, [
            { kind: 'call_tool', tool: 'lookup', args: { huge }, mutating: false, replay_safe: true },
          ]);
        },
      }),
      tools: inProcessTools({ lookup: async () => ({}) }),
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/huge' }, input: 'x' },
      alice,
    );

    const outcome = await t.engine.stepRun(run.run_id);

    expect(outcome).toMatchObject({ kind: 'progressed', status: 'failed' });
    const failed = await t.store.getRun(run.run_id);
    expect(failed).toMatchObject({
      status: 'failed',
      terminal_reason: 'invariant_violation:commit_refused',
      lease: null,
    });
    expect(await t.engine.stepRun(run.run_id)).toMatchObject({ kind: 'nothing_to_do' });
    const events = await t.engine.readEvents(run.run_id, alice, 0, 100);
    expectContiguous(events);
    expect(events.filter((e) => e.kind === 'operation_started')).toHaveLength(0);
  });

  it('counts a model call and its tokens in the same commit as its result', async () => {
    const model = scriptedModel(async () => ({
      message: { text: 'done' },
      tool_calls: [],
      finish_reason: 'stop',
      usage: { input_tokens: 12, output_tokens: 4 },
    }));
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/r/m': modelOnce() }),
      tools: inProcessTools({}),
      models: model,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/m' }, input: 'x' },
      alice,
    );
    await t.engine.stepRun(run.run_id);
    const done = await t.engine.getRun(run.run_id, alice);
    expect(done).toMatchObject({
      status: 'completed',
      summary: 'done',
      usage: { model_calls: 1, input_tokens: 12, output_tokens: 4, turns: 1 },
    });
  });
});
