/**
 * Accept with evidence: with requireReducerCheck, a resume accepting a
 * reducer change is applied only when the artifact published now decides every recorded
 * delivery as the old one did; otherwise it is rejected `reducer_check_failed` (an ack, logged).
 * Over the HTTP API, on the memory engine with in-process reducers swapped behind one path.
 */
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { createHttpApp } from '../../lib/http/app.ts';
import { bearerTokenAuth } from '../../lib/http/auth.ts';
import { uniqueSubject } from '../support/engine.ts';
import { alice, inProcessReducers, inProcessTools } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { toolLoop } from '../support/reducers.ts';

type Reducer = (raw: Record<string, unknown>) => unknown;
const base = toolLoop(2);
const other = toolLoop(2, 'lookup_v3');
/** The same reducer under another name: another artifact hash (the source text), the same decisions. */
const sameAsBase = base;

/** A run of toolLoop(2) whose reducer is swapped to `next` after its first tool call is dispatched. */
async function pausedByChange(next: Reducer, requireReducerCheck: boolean) {
  const reducers: Record<string, Reducer> = { '/r/loop': (raw) => base(raw) };
  let swapped = false;
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers(reducers),
    tools: inProcessTools({ lookup: async () => ({ ok: true }), lookup_v3: async () => ({ ok: true }) }),
    models: {
      call: async () => {
        throw new Error('no model');
      },
    } as never,
    requireReducerCheck,
    crash: (point) => {
      if (point === 'after_dispatch' && !swapped) {
        swapped = true;
        reducers['/r/loop'] = next;
      }
    },
  });
  const { run } = await t.engine.createRun(
    { subject: uniqueSubject(), reducer: { function_path: '/r/loop' } },
    alice,
  );
  let current: RunRecord = run;
  for (let i = 0; i < 10 && current.status !== 'paused'; i += 1) {
    await t.drainMessages();
    await t.engine.stepRun(run.run_id);
    current = await t.engine.getRun(run.run_id, alice);
  }
  expect(current).toMatchObject({ status: 'paused', pause_reason: 'reducer_changed' });
  const app = createHttpApp({
    engine: t.engine,
    functions: {
      get: async () => null,
      put: async () => {
        throw new Error('no');
      },
      list: async () => [],
    },
    tools: { list: async () => [] },
    auth: bearerTokenAuth('t', alice.principal),
    log: () => {},
  });
  const resume = async (control_id: string) => {
    const res = await app.request(`/runs/${run.run_id}/controls`, {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify({ control_id, command: 'resume', accept_reducer_change: true }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };
  return { t, runId: run.run_id, resume };
}

describe('resume --accept-reducer-change with a required check', () => {
  it('applies the resume when the new artifact decides the run identically', async () => {
    const { resume } = await pausedByChange((raw) => sameAsBase(raw), true);
    expect(await resume('c1')).toMatchObject({ ack: 'applied' });
  });

  it('rejects it reducer_check_failed when the new artifact diverges, and logs the rejection', async () => {
    const { t, runId, resume } = await pausedByChange((raw) => other(raw), true);
    const ack = await resume('c2');
    expect(ack).toMatchObject({ ack: 'rejected', reason: 'reducer_check_failed' });
    const events = await t.engine.readEvents(runId, alice, 0, 1000);
    expect(events.find((e) => e.seq === ack.seq)).toMatchObject({ kind: 'control_rejected' });
    expect((await t.engine.getRun(runId, alice)).status).toBe('paused');
  });

  it('applies a diverging artifact when the deployment does not require the check', async () => {
    const { resume } = await pausedByChange((raw) => other(raw), false);
    expect(await resume('c3')).toMatchObject({ ack: 'applied' });
  });
});
