/**
 * A sustained burst of controls on one run (50 per second, valid and rejected mixed) on DynamoDB
 * Local, while the step worker runs its operations: every operation is committed once, the run
 * completes, and the worker's lost version races are rebased rather than redone. The figures
 * (commits per second, rebases, p99 delay) are the engine bench's.
 */
import { describe, expect, it } from 'vitest';
import type { ControlAck } from '../../lib/contracts/index.ts';
import { makeTestEngine } from '../support/engine.ts';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a burst of controls during a run', () => {
  it('never keeps the worker from committing: 50 controls a second for 3 s, every operation once', async () => {
    const tools = inProcessTools({
      lookup: async () => {
        await sleep(200);
        return { ok: true };
      },
    });
    const t = await makeTestEngine({
      reducers: inProcessReducers({ '/r/loop': toolLoop(15) }),
      tools,
      models: noModel,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
      alice,
    );
    let stop = false;
    const acks: ControlAck[] = [];
    const burst = (async () => {
      const client = t.another();
      for (let i = 0; !stop && i < 150; i += 1) {
        const control =
          i % 3 === 0
            ? { control_id: `steer-${i}`, command: 'steer', input: `note ${i}` }
            : i % 3 === 1
              ? { control_id: `resume-${i}`, command: 'resume' } // rejected: not_paused
              : { control_id: `approve-${i}`, command: 'approve', request_id: 'nope', subject_digest: 'x' };
        acks.push(await client.applyControl(run.run_id, control, alice));
        await sleep(20);
      }
    })();
    let rebases = 0;
    let steps = 0;
    for (let i = 0; i < 100; i += 1) {
      const outcome = await t.engine.stepRun(run.run_id);
      steps += 1;
      if (outcome.kind === 'progressed') rebases += outcome.rebases;
      const now = await t.store.getRun(run.run_id);
      if (now?.status === 'completed') break;
    }
    stop = true;
    await burst;
    const final = await t.store.getRun(run.run_id);
    expect(final).toMatchObject({ status: 'completed', outcome: 'succeeded' });
    expect([...tools.executions.values()]).toEqual(Array.from({ length: 15 }, () => 1));
    expect(acks.filter((a) => a.ack === 'applied').length).toBeGreaterThan(0);
    expect(acks.filter((a) => a.ack === 'rejected').length).toBeGreaterThan(0);
    const events = await t.engine.readEvents(run.run_id, alice, 0, 5_000);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    console.log(`control burst: ${acks.length} controls, ${steps} steps, ${rebases} rebased commits`);
  });
});
