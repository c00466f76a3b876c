/**
 * A reducer check across languages: runs recorded with the JavaScript tally
 * reducer (test/fixtures/reducers/tally.js: one tool call, then complete) and with a variant
 * that refuses tool results are checked against their Starlark and WebAssembly twins, which must
 * answer every delivery alike, the refusal included; a twin changed to miss tool results is
 * reported at the tool_result delivery of each completed run.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReducerRequest, RunEvent } from '../../lib/contracts/index.ts';
import { reducerRequestFor } from '../../lib/core/reducer-outcome.ts';
import type { ReducerHost } from '../../lib/engine/ports.ts';
import { checkRunLog } from '../../lib/engine/upgrade/reducer-check.ts';
import { deliveriesOf } from '../../lib/engine/upgrade/run-at-delivery.ts';
import { parseRunLog, type RunLog, runLogOf } from '../../lib/engine/upgrade/run-log.ts';
import { createCheckHost } from '../../lib/sandbox/check-host.ts';
import {
  type ArtifactKind,
  createSandboxReducerHost,
  InMemoryFunctionRegistry,
} from '../../lib/sandbox/index.ts';
import type { LazyReducerHost } from '../../lib/sandbox/lazy-host.ts';
import { compileWat } from '../fixtures/reducers/compile-wat.ts';
import { alice, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const fixture = (name: string) => readFile(new URL(`../fixtures/reducers/${name}`, import.meta.url), 'utf8');
/** The Starlark cold start (about 0.3 s) fits the default 1 s on a quiet machine; a loaded one needs more. */
const LIMITS = { timeoutMs: 10_000 };

const hosts: { close(): Promise<void> }[] = [];
/** Two completed tally runs, one stopped before its first step, one its reducer refused. */
const logs: RunLog[] = [];
/** Every request the engine sent, by `run_id#seq`. */
const sent = new Map<string, ReducerRequest>();

/** A tally twin that refuses a tool result (as tally refuses a failed operation). */
const refusingJs = (text: string) =>
  text.replace("if (event.kind === 'operation_failed') {", "if (event.kind === 'tool_result') {");
const refusingStar = (text: string) =>
  text.replace('if event["kind"] == "operation_failed":', 'if event["kind"] == "tool_result":');

async function checkHost(kind: ArtifactKind, bytes: Uint8Array): Promise<LazyReducerHost> {
  const host = createCheckHost({ kind, bytes }, LIMITS);
  hosts.push(host);
  return host;
}

beforeAll(async () => {
  const tallyJs = await fixture('tally.js');
  expect(refusingJs(tallyJs)).not.toBe(tallyJs);
  const encode = (text: string) => new TextEncoder().encode(text);
  const registry = new InMemoryFunctionRegistry([
    { function_path: '/tally', kind: 'js', bytes: encode(tallyJs) },
    { function_path: '/tally-refusing', kind: 'js', bytes: encode(refusingJs(tallyJs)) },
  ]);
  const sandbox = createSandboxReducerHost({ registry, limits: LIMITS });
  hosts.push(sandbox);
  const reducers: ReducerHost = {
    resolve: (binding) => sandbox.resolve(binding),
    reduce: (binding, request) => {
      const r = request as ReducerRequest;
      sent.set(`${r.run.run_id}#${r.event.seq}`, structuredClone(r));
      return sandbox.reduce(binding, request);
    },
  };
  const tools = inProcessTools({ count: async () => ({ counted: true }) });
  const t = await makeMemoryTestEngine({ reducers, tools, models: scriptedModel(async () => ({}) as never) });
  const ids: string[] = [];
  for (const path of ['/tally', '/tally', '/tally', '/tally-refusing']) {
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: path }, input: null },
      alice,
    );
    ids.push(run.run_id);
  }
  await t.engine.applyControl(ids[2] as string, { control_id: 'stop-early', command: 'stop' }, alice);
  for (let round = 0; round < 20; round += 1) {
    const due = await t.drainMessages();
    if (due.length === 0) break;
    for (const id of due) await t.engine.stepRun(id);
  }
  for (const id of ids) {
    const run = await t.engine.getRun(id, alice);
    const events: RunEvent[] = await t.engine.readEvents(id, alice, 0, 1000);
    const state = await t.engine.getState(id, alice);
    logs.push(
      parseRunLog(
        JSON.parse(
          JSON.stringify(
            runLogOf({
              run,
              events,
              checkpoints: [],
              states: [{ state_rev: state.state_rev, state: state.state }],
              exportedAt: 0,
            }),
          ),
        ),
      ),
    );
  }
}, 60_000);

afterAll(() => Promise.all(hosts.map((h) => h.close())));

/** The seq of the tool_result a run's reducer answered, or null. */
function toolResultSeq(log: RunLog): number | null {
  return log.events.find((e) => e.kind === 'tool_result')?.seq ?? null;
}

describe('reducer check across JavaScript, Starlark and WebAssembly', () => {
  it('records two completed runs, a stopped one and one its reducer refused (the premise)', () => {
    expect(logs.map((l) => l.run.status)).toEqual(['completed', 'completed', 'stopped', 'failed']);
    expect(logs[3]?.events.find((e) => e.kind === 'run_failed')?.data.code).toBe(
      'reducer_refused:tally_operation_failed',
    );
  });

  it('rebuilds the request the engine sent at every delivery, the refusal and those after the end included', () => {
    let compared = 0;
    for (const log of logs) {
      for (const d of deliveriesOf(log.run, log.events)) {
        const request = sent.get(`${log.run.run_id}#${d.event.seq}`);
        const rebuilt = reducerRequestFor(
          { ...d.run, state_rev: d.state_rev } as never,
          request?.state,
          d.event,
        );
        expect(rebuilt).toEqual(request);
        compared += 1;
      }
    }
    expect(compared).toBe(8);
    expect(deliveriesOf(logs[3]?.run as RunLog['run'], logs[3]?.events ?? []).at(-1)?.recorded.kind).toBe(
      'refused',
    );
  });

  it('reports the Starlark and WebAssembly twins identical on every run', async () => {
    const star = await checkHost('star', new TextEncoder().encode(await fixture('tally.star')));
    const wasm = await checkHost('wasm', await compileWat(await fixture('tally.wat'), 'tally.wat'));
    for (const host of [star, wasm]) {
      const checks = [];
      for (const log of logs.slice(0, 3)) checks.push(await checkRunLog(host, log));
      expect(checks.map((c) => c.result)).toEqual(['identical', 'identical', 'identical']);
      expect(checks.map((c) => c.deliveries)).toEqual([2, 2, 2]);
    }
  });

  it('reports a refusal matched by the refusing Starlark twin, and diverged for one that answers', async () => {
    const refused = logs[3] as RunLog;
    const twin = await checkHost('star', new TextEncoder().encode(refusingStar(await fixture('tally.star'))));
    expect(await checkRunLog(twin, refused)).toEqual({
      run_id: refused.run.run_id,
      result: 'identical',
      deliveries: 2,
    });
    const answering = await checkHost('star', new TextEncoder().encode(await fixture('tally.star')));
    expect(await checkRunLog(answering, refused)).toMatchObject({
      result: 'diverged',
      event_seq: toolResultSeq(refused),
      old: { outcome: 'refused', code: 'reducer_refused:tally_operation_failed' },
      new: { outcome: 'answered', effects: [{ effect_id: '2:0', kind: 'complete' }] },
    });
  });

  it('reports a twin that only words its summary differently, from the run_completed the log holds', async () => {
    const starText = await fixture('tally.star');
    const reworded = starText.replace('"tallied %d events"', '"counted %d events"');
    expect(reworded).not.toBe(starText);
    const star = await checkHost('star', new TextEncoder().encode(reworded));
    const log = logs[0] as RunLog;
    const check = await checkRunLog(star, log);
    expect(check).toMatchObject({ result: 'diverged', event_seq: toolResultSeq(log) });
    if (check.result === 'diverged')
      expect(check.diff).toEqual(['effects.0.detail.summary: "tallied 2 events" → "counted 2 events"']);
  });

  it('reports a Starlark or WebAssembly twin that misses tool results at each tool_result delivery', async () => {
    const starText = await fixture('tally.star');
    const watText = await fixture('tally.wat');
    const changedStar = starText.replace('if kind == "tool_result":', 'if kind == "tool_resulx":');
    const changedWat = watText.replace('"\\"tool_result\\"\\00"', '"\\"tool_resulx\\"\\00"');
    expect(changedStar).not.toBe(starText);
    expect(changedWat).not.toBe(watText);
    const star = await checkHost('star', new TextEncoder().encode(changedStar));
    const wasm = await checkHost('wasm', await compileWat(changedWat, 'tally-changed.wat'));
    for (const host of [star, wasm]) {
      for (const log of logs.slice(0, 2)) {
        const check = await checkRunLog(host, log);
        expect(check).toMatchObject({ result: 'diverged', event_seq: toolResultSeq(log), deliveries: 2 });
        if (check.result === 'diverged')
          expect(check.diff).toEqual([
            'effects.0: {"effect_id":"2:0","kind":"complete","detail":{"outcome":"succeeded","summary":"tallied 2 events"}} → (absent)',
          ]);
      }
      // The stopped run never delivered a tool result: still identical.
      expect((await checkRunLog(host, logs[2] as RunLog)).result).toBe('identical');
    }
  });
});
