/**
 * Checking reducer upgrades against recorded runs: the airline replay
 * runs on the memory engine with the default agent reducer, each run's log is exported as
 * `raisin.run-log/1`, and the check replays every delivery against an artifact. The default
 * reducer reproduces every answer; a changed artifact is caught at its first divergent delivery.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import type { ReducerRequest } from '../../lib/contracts/index.ts';
import { reducerRequestFor } from '../../lib/core/reducer-outcome.ts';
import { checkRunLog, checkTotals } from '../../lib/engine/upgrade/reducer-check.ts';
import { deliveriesOf } from '../../lib/engine/upgrade/run-at-delivery.ts';
import { parseRunLog, type RunLog, runLogOf } from '../../lib/engine/upgrade/run-log.ts';
import { createHttpApp, type HttpApp } from '../../lib/http/app.ts';
import { anyOf, bearerTokenAuth } from '../../lib/http/auth.ts';
import { AGENT_LOOP_ARTIFACT_URL, readAgentLoopSource } from '../../lib/reducers/index.ts';
import { runReplay } from '../../lib/replay/run-replay.ts';
import { builtInFunctions } from '../../lib/runtime.ts';
import { createCheckHost } from '../../lib/sandbox/check-host.ts';
import type { LazyReducerHost } from '../../lib/sandbox/lazy-host.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';
import { alice } from '../support/hosts.ts';
import { type MemoryReplayStack, memoryReplayStack, requestKey } from '../support/memory-replay-stack.ts';

const CONVERSATIONS = 6;
const encode = (text: string) => new TextEncoder().encode(text);

let stack: MemoryReplayStack;
const logs: RunLog[] = [];
const hosts: { close(): Promise<void> }[] = [];

/** A check host over `source` (JavaScript), closed after the file. */
function jsHost(source: string): LazyReducerHost {
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
      expect(check.result).toBe('identical');
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
        /^effects\.\d+: \(absent\) → \{"effect_id":"\d+:\d+","kind":"checkpoint","detail":\{"reason":"upgrade"\}\}$/m,
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

describe('reducer check over conversations whose workers were killed', () => {
  it('rebuilds every request the engine sent after takeovers, and reports the default reducer identical', async () => {
    const chaotic = memoryReplayStack({ kills: { probability: 0.05, seed: 11 } });
    const host = jsHost(readAgentLoopSource());
    try {
      const report = await runReplay({
        file: join(TAU_BENCH_DIR, 'trajectories.json'),
        toolsFile: join(TAU_BENCH_DIR, 'tools.json'),
        limit: CONVERSATIONS,
        concurrency: 1,
        startStack: chaotic.start,
        out: () => {},
      });
      expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
      expect(chaotic.kills()).toBeGreaterThan(0);
      const { engine } = chaotic.engine();
      let takeovers = 0;
      for (const c of report.conversations) {
        const runId = c.run_id as string;
        const run = await engine.getRun(runId, alice);
        const events = await engine.readEvents(runId, alice, 0, 10_000);
        takeovers += events.filter((e) => e.kind === 'lease_taken_over').length;
        const log = parseRunLog(
          JSON.parse(JSON.stringify(runLogOf({ run, events, checkpoints: [], states: [], exportedAt: 0 }))),
        );
        for (const d of deliveriesOf(log.run, log.events)) {
          const sent = chaotic.requests.get(requestKey(runId, d.event.seq)) as ReducerRequest;
          const rebuilt = reducerRequestFor(
            { ...d.run, state_rev: d.state_rev } as never,
            sent.state,
            d.event,
          );
          expect(rebuilt).toEqual(sent);
        }
        expect((await checkRunLog(host, log)).result).toBe('identical');
      }
      expect(takeovers).toBeGreaterThan(0);
    } finally {
      await chaotic.close();
    }
  }, 120_000);
});

describe('agent-runs runs export and reducers check', () => {
  const TOKEN = 'check-token';
  const registry = builtInFunctions();
  let app: HttpApp;
  let dir: string;
  let upgradedHash: string;

  beforeAll(async () => {
    const upgraded = await registry.put(
      '/agents/upgraded',
      'js',
      encode(withCheckpointOnToolResult(readAgentLoopSource())),
    );
    upgradedHash = upgraded.hash;
    app = createHttpApp({
      engine: stack.engine().engine,
      functions: registry,
      tools: { list: async () => [] },
      auth: anyOf(
        bearerTokenAuth(TOKEN, alice.principal),
        bearerTokenAuth('user-token', { kind: 'user', id: 'bob' }, { admin: false }),
      ),
      log: () => {},
    });
    dir = mkdtempSync(join(tmpdir(), 'run-logs-'));
  });

  async function cli(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(COMMANDS, ['--url', 'http://api.test', '--token', TOKEN, ...args], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      cwd: dir,
      env: {},
      fetch: (request) => app.fetch(request),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('exports each run as one file and checks the default reducer identical on all of them', async () => {
    for (const [i, log] of logs.entries()) {
      const exported = await cli(['runs', 'export', log.run.run_id, '-o', `run-${i}.json`]);
      expect(exported).toMatchObject({ code: 0, err: '' });
      const text = readFileSync(join(dir, `run-${i}.json`), 'utf8');
      expect(text).not.toContain('capability_hash');
      const doc = parseRunLog(JSON.parse(text));
      expect(doc.events).toEqual(log.events);
      expect(doc.states.map((s) => s.state_rev)).toEqual(log.states.map((s) => s.state_rev));
    }
    const agentLoop = fileURLToPath(AGENT_LOOP_ARTIFACT_URL);
    const checked = await cli(['reducers', 'check', '--artifact', agentLoop, '--from', '.']);
    expect(checked.err).toBe('');
    expect(checked.code).toBe(0);
    const lines = checked.out.split('\n');
    expect(lines.filter((l) => / {2}identical {2}\(\d+ deliveries\)$/.test(l))).toHaveLength(CONVERSATIONS);
    expect(lines.at(-1)).toMatch(
      new RegExp(`^${CONVERSATIONS} runs: ${CONVERSATIONS} identical, 0 diverged, 0 skipped`),
    );
  });

  it('checks a published artifact against a run read through the API and exits 1 at its divergence', async () => {
    const log = logs.find((l) => deliveriesOf(l.run, l.events).some((d) => d.event.kind === 'tool_result'));
    if (log === undefined) throw new Error('no run with a tool result');
    const expected = await checkRunLog(jsHost(withCheckpointOnToolResult(readAgentLoopSource())), log);
    if (expected.result !== 'diverged') throw new Error('the changed artifact should diverge');
    const args = [
      'reducers',
      'check',
      '--path',
      '/agents/upgraded',
      '--hash',
      upgradedHash,
      '--run',
      log.run.run_id,
    ];
    const human = await cli(args);
    expect(human.code).toBe(1);
    expect(human.out).toContain(
      `${log.run.run_id}  diverged at seq ${expected.event_seq} (answer seq ${expected.answer_seq}, delivery ${expected.deliveries})`,
    );
    const json = await cli(['--json', ...args]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({
      artifact: { kind: 'js', hash: upgradedHash },
      runs: [{ run_id: log.run.run_id, result: 'diverged', event_seq: expected.event_seq }],
      totals: { runs: 1, diverged: 1 },
    });
    // Without --hash: the artifact published now (what the reducer_changed hint runs), its hash printed.
    const current = await cli([
      '--json',
      'reducers',
      'check',
      '--path',
      '/agents/upgraded',
      '--run',
      log.run.run_id,
    ]);
    expect(current.code).toBe(1);
    expect(JSON.parse(current.out)).toMatchObject({
      artifact: { hash: upgradedHash },
      totals: { diverged: 1 },
    });
  });

  it('serves an artifact with its bytes to an admin only, and 404 function_not_found for a path with none', async () => {
    const get = (path: string, token: string) =>
      app.fetch(
        new Request(`http://api.test/functions${path}`, { headers: { authorization: `Bearer ${token}` } }),
      );
    const served = await get('/agents/upgraded', TOKEN);
    expect(served.status).toBe(200);
    const body = (await served.json()) as { hash: string; kind: string; bytes_base64: string };
    expect(body).toMatchObject({ function_path: '/agents/upgraded', kind: 'js', hash: upgradedHash });
    expect(Buffer.from(body.bytes_base64, 'base64').toString('utf8')).toBe(
      withCheckpointOnToolResult(readAgentLoopSource()),
    );
    const refused = await get('/agents/upgraded', 'user-token');
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'unauthorized' });
    const missing = await get('/agents/none', TOKEN);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'function_not_found' });
  });

  it('refuses a published artifact whose hash is not the one asked for, and a run log that is not one', async () => {
    const wrong = await cli([
      'reducers',
      'check',
      '--path',
      '/agents/upgraded',
      '--hash',
      'f'.repeat(64),
      '--from',
      '.',
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain('/agents/upgraded has hash');
    writeFileSync(join(dir, 'not-a-log.txt'), '{}');
    const bad = await cli([
      '--json',
      'reducers',
      'check',
      '--artifact',
      'run-0.json',
      '--from',
      'not-a-log.txt',
    ]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.err)).toMatchObject({ error: { code: 'invalid_run_log' } });
    const neither = await cli(['reducers', 'check', '--from', '.']);
    expect(neither).toMatchObject({
      code: 1,
      err: 'error: give either --artifact FILE or --path P [--hash H]',
    });
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
