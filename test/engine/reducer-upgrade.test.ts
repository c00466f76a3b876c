/**
 * The upgrade policy over the HTTP API: `POST /admin/reducers/upgrade`
 * resumes each run paused `reducer_changed` on a path whose check against the artifact published
 * now is identical (one control per run), and refuses the others with their first divergence.
 * Tally runs (test/fixtures/reducers/tally.js) on the memory engine with the sandbox host; a new
 * artifact is published at a run's path right after its first tool call is dispatched.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type HttpApp } from '../../lib/http/app.ts';
import { anyOf, bearerTokenAuth } from '../../lib/http/auth.ts';
import {
  createSandboxReducerHost,
  InMemoryFunctionRegistry,
  type SandboxReducerHost,
} from '../../lib/sandbox/index.ts';
import { alice, inProcessTools, scriptedModel, uniqueSubject } from '../support/hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from '../support/memory-engine.ts';

const encode = (text: string) => new TextEncoder().encode(text);
const LIMITS = { timeoutMs: 10_000 };

let sandbox: SandboxReducerHost;
let app: HttpApp;
let t: MemoryTestEngine;
const runs: Record<'same' | 'other', string[]> = { same: [], other: [] };

beforeAll(async () => {
  const tally = await readFile(new URL('../fixtures/reducers/tally.js', import.meta.url), 'utf8');
  /** The next artifact of each path: the same decisions (a comment), or another tool on run_started. */
  const next: Record<string, string> = {
    '/tally-same': `${tally}\n// v2: a comment only\n`,
    '/tally-other': tally.replace("tool: 'count'", "tool: 'count_v2'"),
  };
  expect(next['/tally-other']).not.toBe(tally);
  const registry = new InMemoryFunctionRegistry([
    { function_path: '/tally-same', kind: 'js', bytes: encode(tally) },
    { function_path: '/tally-other', kind: 'js', bytes: encode(tally) },
  ]);
  sandbox = createSandboxReducerHost({ registry, limits: LIMITS });
  const published = new Set<string>();
  const pathOf = new Map<string, string>();
  t = await makeMemoryTestEngine({
    reducers: sandbox,
    tools: inProcessTools({ count: async () => ({ counted: true }) }),
    models: scriptedModel(async () => ({}) as never),
    crash: async (point, runId) => {
      const path = pathOf.get(runId);
      if (point !== 'after_dispatch' || path === undefined || published.has(runId)) return;
      published.add(runId);
      await registry.put(path, 'js', encode(next[path] as string));
    },
  });
  for (const [key, path] of [
    ['same', '/tally-same'],
    ['other', '/tally-other'],
  ] as const) {
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: path }, input: null },
      alice,
    );
    pathOf.set(run.run_id, path);
    runs[key].push(run.run_id);
  }
  for (let round = 0; round < 20; round += 1) {
    const due = await t.drainMessages();
    if (due.length === 0) break;
    for (const id of due) await t.engine.stepRun(id);
  }
  app = createHttpApp({
    engine: t.engine,
    functions: registry,
    tools: { list: async () => [] },
    auth: anyOf(
      bearerTokenAuth('admin', alice.principal),
      bearerTokenAuth('user', alice.principal, { admin: false }),
    ),
    log: () => {},
  });
}, 60_000);

afterAll(() => sandbox?.close());

async function upgrade(token: string, body: unknown) {
  const res = await app.request('/admin/reducers/upgrade', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('POST /admin/reducers/upgrade', () => {
  it('finds each run paused reducer_changed after its first tool call (the premise)', async () => {
    for (const id of [...runs.same, ...runs.other]) {
      expect(await t.engine.getRun(id, alice)).toMatchObject({
        status: 'paused',
        pause_reason: 'reducer_changed',
      });
    }
  });

  it('refuses a caller without admin rights with 403', async () => {
    expect(await upgrade('user', { function_path: '/tally-same' })).toMatchObject({
      status: 403,
      body: { code: 'unauthorized' },
    });
  });

  it('resumes a run the new artifact decides identically, once, and it completes', async () => {
    const first = await upgrade('admin', { function_path: '/tally-same' });
    expect(first).toMatchObject({
      status: 200,
      body: { runs: [{ run_id: runs.same[0], result: 'upgraded' }], truncated: false },
    });
    for (let round = 0; round < 10; round += 1) {
      const due = await t.drainMessages();
      if (due.length === 0) break;
      for (const id of due) await t.engine.stepRun(id);
    }
    expect(await t.engine.getRun(runs.same[0] as string, alice)).toMatchObject({ status: 'completed' });
    // Nothing is paused on the path any more: nothing to upgrade.
    expect(await upgrade('admin', { function_path: '/tally-same' })).toMatchObject({
      status: 200,
      body: { runs: [] },
    });
  });

  it('refuses a run the new artifact decides differently, naming the first divergent seq', async () => {
    const res = await upgrade('admin', { function_path: '/tally-other' });
    const started = (await t.engine.readEvents(runs.other[0] as string, alice, 0, 100)).find(
      (e) => e.kind === 'run_started',
    );
    expect(res).toMatchObject({
      status: 200,
      body: {
        runs: [{ run_id: runs.other[0], result: 'refused', reason: 'diverged', event_seq: started?.seq }],
      },
    });
    const [refused] = res.body.runs as { diff: string[] }[];
    expect(refused?.diff.join('\n')).toContain('count_v2');
    expect(await t.engine.getRun(runs.other[0] as string, alice)).toMatchObject({ status: 'paused' });
  });

  it('answers 404 function_not_found for a path with no artifact', async () => {
    expect(await upgrade('admin', { function_path: '/none' })).toMatchObject({
      status: 404,
      body: { code: 'function_not_found' },
    });
  });
});
