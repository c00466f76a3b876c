/**
 * Checking reducer upgrades against recorded runs (issue 29 points 1 and 4): the airline replay
 * runs on the memory engine with the default agent reducer, each run's log is exported as
 * `raisin.run-log/1`, and the check replays every delivery against an artifact. The default
 * reducer reproduces every answer; a changed artifact is caught at its first divergent delivery.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReducerRequest } from '../../lib/contracts/index.ts';
import { reducerRequestFor } from '../../lib/core/reducer-outcome.ts';
import { readAgentLoopSource } from '../../lib/reducers/index.ts';
import { checkRunLog, checkTotals, createCheckHost } from '../../lib/replay/reducer-check.ts';
import { deliveriesOf } from '../../lib/replay/run-at-delivery.ts';
import { parseRunLog, type RunLog, runLogOf } from '../../lib/replay/run-log.ts';
import { runReplay } from '../../lib/replay/run-replay.ts';
import type { SandboxReducerHost } from '../../lib/sandbox/index.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';
import { alice } from '../support/hosts.ts';
import { type MemoryReplayStack, memoryReplayStack, requestKey } from '../support/memory-replay-stack.ts';

const CONVERSATIONS = 6;
const encode = (text: string) => new TextEncoder().encode(text);

let stack: MemoryReplayStack;
let logs: RunLog[] = [];
const hosts: SandboxReducerHost[] = [];

/** A check host over `source` (JavaScript), closed after the file. */
function jsHost(source: string): SandboxReducerHost {
  const host = createCheckHost({ kind: 'js', bytes: encode(source) });
  hosts.push(host);
  return host;
}

beforeAll(async () => {
  stack = memoryReplayStack();
  const report = await runReplay({
    file: join(TAU_BENCH_DIR, 'trajectories.json'),
    toolsFile: join(TAU_BENCH_DIR, 'tools.json'),
    limit: CONVERSATIONS,
    concurrency: 1,
    startStack: stack.start,
    out: () => {},
  });
  expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
  const { engine } = stack.engine();
  for (const c of report.conversations) {
    const runId = c.run_id as string;
    const run = await engine.getRun(runId, alice);
    const events = await engine.readEvents(runId, alice, 0, 10_000);
    const checkpoints = (await engine.listCheckpoints(runId, alice)).map((item) => item);
    const states = [];
    for (let rev = 1; rev <= run.state_rev; rev += 1) {
      try {
        const s = await engine.getState(runId, alice, rev);
        states.push({ state_rev: s.state_rev, state: s.state });
      } catch {
        // replaced inside one commit: never stored
      }
    }
    const exported = runLogOf({ run, events, checkpoints, states, exportedAt: 0 });
    logs.push(parseRunLog(JSON.parse(JSON.stringify(exported))));
  }
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all(hosts.map((h) => h.close()));
});

describe('reducer check over recorded airline conversations', () => {
  it('rebuilds from the log exactly the request the engine sent at every delivery', () => {
    let compared = 0;
    for (const log of logs) {
      const states = new Map(log.states.map((s) => [s.state_rev, s.state]));
      for (const d of deliveriesOf(log.run, log.events)) {
        const sent = stack.requests.get(requestKey(log.run.run_id, d.event.seq)) as ReducerRequest;
        expect(sent).toBeDefined();
        const rebuilt = reducerRequestFor(
          { ...d.run, state_rev: d.state_rev } as never,
          d.state_rev === 0 ? null : states.get(d.state_rev),
          d.event,
        );
        const { state: sentState, ...sentRest } = sent;
        const { state: rebuiltState, ...rebuiltRest } = rebuilt as ReducerRequest;
        expect(rebuiltRest).toEqual(sentRest);
        if (states.has(d.state_rev) || d.state_rev === 0) expect(rebuiltState).toEqual(sentState);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(CONVERSATIONS * 5);
  });

  it('reports the default agent reducer identical on every run', async () => {
    const host = jsHost(readAgentLoopSource());
    const checks = [];
    for (const log of logs) checks.push(await checkRunLog(host, log));
    expect(checks.map((c) => c.result)).toEqual(logs.map(() => 'identical'));
    const totals = checkTotals(checks);
    expect(totals).toMatchObject({ runs: CONVERSATIONS, identical: CONVERSATIONS, diverged: 0 });
    expect(totals.deliveries).toBeGreaterThan(CONVERSATIONS * 5);
  });
});
