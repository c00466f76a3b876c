/**
 * The step worker starts a run's next step from the record it committed last: no GetItem; a record
 * moved on by another writer is refused by the acquire commit and the step goes on from the record
 * the refusal carries.
 */
import { describe, expect, it } from 'vitest';
import { alice, inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { toolLoop } from '../support/reducers.ts';

const noModel = scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' }));

async function yieldingRun() {
  let t: Awaited<ReturnType<typeof makeMemoryTestEngine>> | undefined;
  const tools = inProcessTools({
    // Each call takes past half the lease: the step yields after it, leaving a step message.
    lookup: async () => {
      t?.clock.advance(60_000);
      return {};
    },
  });
  t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ '/r/loop': toolLoop(3) }),
    tools,
    models: noModel,
  });
  const { run } = await t.engine.createRun(
    { subject: uniqueSubject(), reducer: { function_path: '/r/loop' }, input: 'go' },
    alice,
  );
  expect(await t.drainMessages()).toEqual([run.run_id]);
  return { t, runId: run.run_id };
}

describe('the record cache of the step worker', () => {
  it('starts the next step of a run it committed without reading the run', async () => {
    const { t, runId } = await yieldingRun();
    const first = await t.engine.stepRun(runId);
    expect(first).toMatchObject({ kind: 'progressed', status: 'queued', operations: 1 });
    expect(await t.drainMessages()).toEqual([runId]);
    let runReads = 0;
    const getRun = t.store.getRun.bind(t.store);
    t.store.getRun = (id) => {
      runReads += 1;
      return getRun(id);
    };
    const second = await t.engine.stepRun(runId);
    expect(second).toMatchObject({ kind: 'progressed', operations: 1 });
    expect(runReads).toBe(0);
  });

  it('goes on from the current record when another writer moved the run', async () => {
    const { t, runId } = await yieldingRun();
    await t.engine.stepRun(runId);
    await t.drainMessages();
    // Another worker process (its own cache) steps the run meanwhile.
    const other = t.another();
    expect(await other.stepRun(runId)).toMatchObject({ kind: 'progressed', operations: 1 });
    await t.drainMessages();
    const third = await t.engine.stepRun(runId);
    expect(third).toMatchObject({ kind: 'progressed', operations: 1 });
    const done = await t.engine.stepRun(runId);
    expect(done).toMatchObject({ kind: 'progressed', status: 'completed' });
  });
});
