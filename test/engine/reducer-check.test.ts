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

/**
 * The agent loop with one deliberate change: every answer to a tool_result that moves the state
 * also writes a checkpoint (a valid answer, so the check sees a different decision, not a fault).
 */
function withCheckpointOnToolResult(source: string): string {
  const renamed = source.replace('export function reduce(request) {', 'function reduceV1(request) {');
  expect(renamed).not.toBe(source);
  return `${renamed}
export function reduce(request) {
  const answer = reduceV1(request);
  if (request.event.kind === 'tool_result' && answer.refused == null && answer.state_rev !== request.state_rev) {
    answer.effects = [...answer.effects, { effect_id: answer.state_rev + ':' + answer.effects.length, kind: 'checkpoint', reason: 'upgrade' }];
  }
  return answer;
}
`;
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
    // Per decision: each delivery given the state the run stored for it, not the check's own.
    for (const log of logs) {
      const check = await checkRunLog(host, { ...log, states: everyState(log.run.run_id) });
      expect(check).toMatchObject({
        result: 'identical',
        deliveries: totals.deliveries > 0 ? expect.any(Number) : 0,
      });
    }
  });

  it('reports a changed JavaScript artifact at the first delivery it answers differently', async () => {
    const host = jsHost(withCheckpointOnToolResult(readAgentLoopSource()));
    let diverged = 0;
    for (const log of logs) {
      const deliveries = deliveriesOf(log.run, log.events);
      const first = deliveries.findIndex(
        (d) => d.event.kind === 'tool_result' && d.recorded.kind === 'answered',
      );
      const check = await checkRunLog(host, log);
      if (first === -1) {
        expect(check.result).toBe('identical');
        continue;
      }
      diverged += 1;
      const expected = deliveries[first];
      expect(check).toMatchObject({
        result: 'diverged',
        event_seq: expected?.event.seq,
        answer_seq: expected?.recorded.seq,
        deliveries: first + 1,
      });
      if (check.result !== 'diverged') continue;
      expect(check.new.outcome === 'answered' && check.new.effects.at(-1)?.kind).toBe('checkpoint');
      expect(check.diff.join('\n')).toMatch(
        /^effects\.\d+: \(absent\) → \{"effect_id":"\d+:\d+","kind":"checkpoint"\}$/m,
      );
    }
    // The premise: some runs called tools, so the change had something to change.
    expect(diverged).toBeGreaterThan(0);
  });

  it('with every state revision in the log, catches a change to the state alone at its delivery', async () => {
    const host = jsHost(withStateMarkOnToolResult(readAgentLoopSource()));
    let diverged = 0;
    for (const log of logs) {
      const full = { ...log, states: everyState(log.run.run_id) };
      expect(full.states.length).toBeGreaterThan(log.states.length);
      const deliveries = deliveriesOf(full.run, full.events);
      const first = deliveries.findIndex(
        (d) =>
          d.event.kind === 'tool_result' &&
          d.recorded.kind === 'answered' &&
          d.recorded.data.state_rev !== d.state_rev,
      );
      const check = await checkRunLog(host, full);
      if (first === -1) continue;
      diverged += 1;
      expect(check).toMatchObject({ result: 'diverged', event_seq: deliveries[first]?.event.seq });
      if (check.result === 'diverged') expect(check.diff).toEqual(['state.upgraded: (absent) → true']);
    }
    expect(diverged).toBeGreaterThan(0);
  });
});

/** Every state revision the engine sent a reducer of `runId` (what the store wrote, commit by commit). */
function everyState(runId: string): { state_rev: number; state: unknown }[] {
  const byRev = new Map<number, unknown>();
  for (const r of stack.requests.values()) if (r.run.run_id === runId) byRev.set(r.state_rev, r.state);
  const final = logs.find((l) => l.run.run_id === runId)?.states ?? [];
  for (const s of final) byRev.set(s.state_rev, s.state);
  return [...byRev.entries()].filter(([rev]) => rev > 0).map(([state_rev, state]) => ({ state_rev, state }));
}

/** The agent loop marking its state (`upgraded: true`) in each answer to a tool_result that moves it. */
function withStateMarkOnToolResult(source: string): string {
  return `${source.replace('export function reduce(request) {', 'function reduceV1(request) {')}
export function reduce(request) {
  const answer = reduceV1(request);
  if (request.event.kind === 'tool_result' && answer.refused == null && answer.state_rev !== request.state_rev) {
    answer.state = { ...answer.state, upgraded: true };
  }
  return answer;
}
`;
}
