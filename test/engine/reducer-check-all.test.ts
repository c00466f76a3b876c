/**
 * The built-in agent reducer against all 160 recorded airline conversations:
 * the replay runs every conversation on the memory engine, each run's log is exported as
 * `raisin.run-log/1`, and `checkRunLog` replays every delivery against the agent loop built from
 * its source. A change to the agent loop that alters any decision fails here, naming the first
 * divergent seq of the first conversation that diverged.
 */
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { checkRunLog, checkTotals } from '../../lib/engine/upgrade/reducer-check.ts';
import { parseRunLog, runLogOf } from '../../lib/engine/upgrade/run-log.ts';
import { readAgentLoopSource } from '../../lib/reducers/index.ts';
import { runReplay } from '../../lib/replay/run-replay.ts';
import { createCheckHost } from '../../lib/sandbox/check-host.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';
import { alice } from '../support/hosts.ts';
import { memoryReplayStack } from '../support/memory-replay-stack.ts';

const stack = memoryReplayStack();
const host = createCheckHost({ kind: 'js', bytes: new TextEncoder().encode(readAgentLoopSource()) });

afterAll(async () => {
  await stack.close();
  await host.close();
});

it('finds the agent loop identical to its recorded decisions on all 160 conversations', async () => {
  const report = await runReplay({
    file: join(TAU_BENCH_DIR, 'trajectories.json'),
    toolsFile: join(TAU_BENCH_DIR, 'tools.json'),
    startStack: stack.start,
    out: () => {},
  });
  expect(report.conversations).toHaveLength(160);
  const { engine } = stack.engine();
  const checks = [];
  for (const c of report.conversations) {
    const runId = c.run_id as string;
    const run = await engine.getRun(runId, alice);
    const events = await engine.readEvents(runId, alice, 0, 10_000);
    const checkpoints = await engine.listCheckpoints(runId, alice);
    const state = await engine.getState(runId, alice);
    const log = runLogOf({
      run,
      events,
      checkpoints,
      states: [{ state_rev: state.state_rev, state: state.state }],
      exportedAt: 0,
    });
    checks.push({
      conversation: c,
      check: await checkRunLog(host, parseRunLog(JSON.parse(JSON.stringify(log)))),
    });
  }
  const first = checks.find((c) => c.check.result !== 'identical');
  expect(first, `first divergence: ${JSON.stringify(first?.check)}`).toBeUndefined();
  const totals = checkTotals(checks.map((c) => c.check));
  expect(totals).toMatchObject({ runs: 160, identical: 160, diverged: 0 });
  expect(totals.deliveries).toBeGreaterThan(160 * 5);
}, 600_000);
