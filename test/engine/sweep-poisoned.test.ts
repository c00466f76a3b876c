/**
 * A run the sweeper cannot process (its every sweep throws) does not hold up the due runs behind
 * it in its shard: a pass steps past it, and its failure is logged at a bounded rate.
 * docs/architecture.md, "The sweeper".
 */
import { describe, expect, it } from 'vitest';
import { createMemoryBlobStore } from '../../lib/blobs/memory-blob-store.ts';
import type { RunStore } from '../../lib/engine/ports.ts';
import { SWEEP_SHARDS } from '../../lib/engine/ports.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { sweepShardKey } from '../../lib/store/table.ts';
import { inProcessReducers, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const ALICE = { principal: { kind: 'user' as const, id: 'alice' } };
const BOB = { principal: { kind: 'user' as const, id: 'bob' } };
const reducer = { function_path: '/r/idle' };

describe('the sweeper and a run it cannot sweep', () => {
  it('still wakes 300 other due runs in the same shards, and logs the failures at a bounded rate', async () => {
    const inner = createMemoryRunStore({ blobs: createMemoryBlobStore() });
    const poisoned = new Set<string>();
    const store = new Proxy(inner, {
      get(target, name, receiver) {
        if (name === 'getRun')
          return async (runId: string) => {
            if (poisoned.has(runId))
              throw new Error('Number 9008995603844774 is greater than MAX_SAFE_INTEGER');
            return target.getRun(runId);
          };
        return Reflect.get(target, name, receiver);
      },
    }) as RunStore;
    const logged: { level: string; message: string }[] = [];
    const candidates = 2;
    const t = await makeMemoryTestEngine({
      store,
      // Never stepped here: the sweeper only wakes the runs (sends their step messages).
      reducers: inProcessReducers({ '/r/idle': () => ({ effects: [] }) }),
      tools: inProcessTools({}),
      models: scriptedModel(async () => ({ error_class: 'unsupported', message: 'no model' })),
      sweepCandidates: candidates,
      // The test clock runs with real time: a woken run must not come due again while the passes
      // run, however slow the machine (with the default 1 s grace, a loaded CI woke some twice).
      wakeGraceMs: 3_600_000,
      log: (entry) => logged.push(entry as { level: string; message: string }),
    });
    // Bob's poisoned runs come due first: more of them in every shard than a pass's candidates.
    const perShard = new Map<string, number>();
    const others = new Set<string>();
    while ([...Array(SWEEP_SHARDS).keys()].some((s) => (perShard.get(String(s)) ?? 0) <= candidates)) {
      const { run } = await t.engine.createRun({ subject: uniqueSubject('bob'), reducer, input: 'x' }, BOB);
      const shard = sweepShardKey(run.run_id);
      if ((perShard.get(shard) ?? 0) > candidates) {
        others.add(run.run_id);
        continue;
      }
      perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
      poisoned.add(run.run_id);
    }
    t.clock.advance(10);
    for (let i = 0; i < 300; i++) {
      const { run } = await t.engine.createRun({ subject: uniqueSubject(), reducer, input: 'y' }, ALICE);
      others.add(run.run_id);
    }
    await t.drainMessages();
    t.clock.advance(2 * 3_600_000); // past every run's wake deadline

    let woken = 0;
    for (let pass = 0; pass < 100 && woken < others.size; pass++) woken += (await t.engine.sweep()).woken;
    expect(woken).toBe(others.size);
    expect(new Set(await t.drainMessages())).toEqual(others);
    // Every pass met the poisoned runs; all within the log's 60 s interval, so one line said so.
    const failures = logged.filter((e) => e.message === 'sweep of a run failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]?.level).toBe('error');
  });
});
