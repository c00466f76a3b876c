/**
 * No control can keep the step worker from committing: a commit that loses the version race to
 * a control is rebased (the worker's staged moves replayed on the record the control produced),
 * never redone: no second reducer call, no second tool call. On the memory store; the sustained
 * burst on DynamoDB Local is test/integration/control-burst.int.test.ts, and its figures are
 * the engine bench's.
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../lib/contracts/index.ts';
import type { Engine } from '../../lib/engine/engine.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

describe('the step worker under concurrent controls', () => {
  it('rebases a fused commit that a control made stale: each event reduced once, each tool run once', async () => {
    let engine: Engine | undefined;
    let runId = '';
    let sent = 0;
    const reducers = inProcessReducers({ '/r/loop': toolLoop(3) });
    const tools = inProcessTools({ lookup: async () => ({ ok: true }) });
    const t = await makeMemoryTestEngine({
      reducers,
      tools,
      models: noModel,
      // Right after each tool call, before the worker commits its result, a control commits.
      crash: async (point) => {
        if (point !== 'after_dispatch' || engine === undefined) return;
        sent += 1;
        await engine.applyControl(
          runId,
          { control_id: `burst-${sent}`, command: 'steer', input: `s${sent}` },
          alice,
        );
        await engine.applyControl(
          runId,
          { control_id: `bad-${sent}`, command: 'resume' },
          alice, // rejected not_paused: logged, and a new version all the same
        );
      },
    });
    engine = t.another();
    const { run } = await engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
      alice,
    );
    runId = run.run_id;
    const outcome = await t.engine.stepRun(run.run_id);

    expect(outcome).toMatchObject({ kind: 'progressed', status: 'completed', operations: 3 });
    if (outcome.kind !== 'progressed') return;
    expect(outcome.rebases).toBe(3);
    expect([...tools.executions.values()]).toEqual([1, 1, 1]);
    const events: RunEvent[] = await t.engine.readEvents(run.run_id, alice, 0, 1_000);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    // Every reducer-visible event was reduced once: one reducer_answered per delivered event.
    const answered = events.filter((e) => e.kind === 'reducer_answered').map((e) => e.data.event_seq);
    expect(new Set(answered).size).toBe(answered.length);
    expect(reducers.calls).toBe(answered.length);
    // The controls' events sit between the tool's run and its recorded result.
    expect(events.filter((e) => e.kind === 'steer_queued')).toHaveLength(3);
    expect(events.filter((e) => e.kind === 'control_rejected')).toHaveLength(3);
    // Each steer is consumed at the boundary it reached, before the next operation starts; the
    // one after the last operation is discarded by the run's end (the reducer completed it).
    const kinds = events.map((e) => e.kind);
    const queued = kinds.flatMap((k, i) => (k === 'steer_queued' ? [i] : []));
    for (const at of queued.slice(0, -1)) {
      const consumed = kinds.indexOf('steer_consumed', at);
      expect(consumed).toBeGreaterThan(at);
      expect(consumed).toBeLessThan(kinds.indexOf('operation_started', at));
    }
    expect(events.find((e) => e.kind === 'steers_discarded')?.data).toEqual({
      count: 1,
      control_ids: ['burst-3'],
    });
  });
});
