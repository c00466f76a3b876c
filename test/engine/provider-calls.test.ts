/**
 * Usage that survives a takeover: a model turn's dispatch counts its first provider request by
 * its start commit (the takeover of a lost dispatch counts it) and each retry in a fenced commit
 * before it is made (usage.model_calls, the operation's provider_calls), so a worker killed
 * between two requests leaves them counted, and the worker that takes the turn over continues
 * its retry budget instead of starting it again. A turn whose model-turn function is not
 * configured makes no request and counts none. Only failures use the retry budget: a request
 * lost with its worker does not.
 */
import { describe, expect, it } from 'vitest';
import type { ModelTurnInput } from '../../lib/contracts/index.ts';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../../lib/contracts/index.ts';
import { createModelHost } from '../../lib/models/host.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';
import { readAll, SimulatedCrash, scopedStore } from '../support/faults.ts';
import { alice, inProcessReducers, inProcessTools, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { modelOnce } from '../support/reducers.ts';

/** The host's default policy: three calls per turn, retries included. */
const RETRY_BUDGET = 3;

/** A provider that answers every request 429; `requests` counts what reached it. */
function throttledProvider() {
  const seen: ModelTurnInput[] = [];
  const fn: ModelTurnFunction = async (input) => {
    seen.push(input);
    return { error_class: 'rate_limited', message: 'HTTP 429', retryable: true, retry_after_ms: 1 };
  };
  return { fn, requests: () => seen.length, attempts: () => seen.map((i) => i.attempt) };
}

async function modelRun(functions: Record<string, ModelTurnFunction>) {
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ '/r/model': modelOnce() }),
    tools: inProcessTools({}),
    models: createModelHost({ functions, sleep: async () => {} }),
  });
  const store = scopedStore(t.store);
  const { run } = await t
    .another({ store })
    .createRun({ subject: uniqueSubject(), reducer: { function_path: '/r/model' }, input: 'go' }, alice);
  await t.drainMessages();
  return { t, store, runId: run.run_id };
}

describe('provider requests of a model turn', () => {
  it('are counted before each request, and a takeover continues the retry budget', async () => {
    // Prepare: worker A of slot box-1 makes the first request (429) and dies in its backoff.
    const provider = throttledProvider();
    const functions = { [DEFAULT_MODEL_TURN_FUNCTION]: provider.fn };
    const { t, store, runId } = await modelRun(functions);
    const a = t.another({
      store,
      workerSlot: 'box-1',
      // The worker dies in its first backoff, after one 429.
      models: createModelHost({ functions, sleep: () => Promise.reject(new SimulatedCrash('dead')) }),
    });
    await expect(a.stepRun(runId)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(provider.requests()).toBe(1);
    // Its start commit stands for the first request (no commit of its own on the happy path).
    const afterCrash = await store.getRun(runId);
    expect(afterCrash?.operation).toMatchObject({ kind: 'model_turn', attempt: 1 });
    expect(afterCrash?.operation?.started_at).not.toBeNull();

    // Act: its restarted process takes the run over and dispatches the turn again.
    t.clock.advance(1_000);
    const b = t.another({
      store,
      workerSlot: 'box-1',
      models: createModelHost({ functions, sleep: async () => {} }),
    });
    expect(await b.stepRun(runId)).toMatchObject({ kind: 'progressed', status: 'paused' });

    // Assess: three requests in all (the budget), every one counted, the outage logged after them.
    expect(provider.requests()).toBe(RETRY_BUDGET);
    expect(provider.attempts()).toEqual([1, 2, 2]);
    const final = await store.getRun(runId);
    expect(final?.usage).toMatchObject({ model_calls: RETRY_BUDGET, model_retries: RETRY_BUDGET - 1 });
    expect(final).toMatchObject({ status: 'paused', pause_reason: 'provider_outage:rate_limited' });
    const events = await readAll(store, runId);
    expect(events.map((e) => e.kind)).toContain('lease_taken_over');
    expect(events.find((e) => e.kind === 'provider_outage')?.data).toMatchObject({ attempts: RETRY_BUDGET });
  });

  it('makes no request after a takeover when the dead workers used the whole budget', async () => {
    const provider = throttledProvider();
    const functions = { [DEFAULT_MODEL_TURN_FUNCTION]: provider.fn };
    const { t, store, runId } = await modelRun(functions);
    // Worker A makes all three requests and dies before committing the outcome.
    let backoffs = 0;
    const a = t.another({
      store,
      workerSlot: 'box-1',
      models: createModelHost({
        functions,
        sleep: async () => {
          backoffs += 1;
        },
      }),
      faults: (point) => {
        if (point === 'after_dispatch') throw new SimulatedCrash(point);
      },
    });
    await expect(a.stepRun(runId)).rejects.toBeInstanceOf(SimulatedCrash);
    expect([provider.requests(), backoffs]).toEqual([RETRY_BUDGET, RETRY_BUDGET - 1]);
    // Each retry was counted before it was made.
    const afterCrash = await store.getRun(runId);
    expect(afterCrash?.usage).toMatchObject({
      model_calls: RETRY_BUDGET - 1,
      model_retries: RETRY_BUDGET - 2,
    });
    expect(afterCrash?.operation?.provider_calls).toBe(RETRY_BUDGET - 1);

    t.clock.advance(1_000);
    const b = t.another({ store, workerSlot: 'box-1', models: createModelHost({ functions }) });
    expect(await b.stepRun(runId)).toMatchObject({ kind: 'progressed', status: 'paused' });

    expect(provider.requests()).toBe(RETRY_BUDGET);
    const final = await store.getRun(runId);
    expect(final?.usage).toMatchObject({ model_calls: RETRY_BUDGET, model_retries: RETRY_BUDGET - 1 });
    expect(final).toMatchObject({ status: 'paused', pause_reason: 'provider_outage:retries_exhausted' });
    // On resume the owner gives the provider a fresh budget.
    expect(final?.operation?.provider_calls).toBeUndefined();
  });

  it('uses no retry for a request lost with its worker: only failures count against the budget', async () => {
    // A provider that answers at once; each of the first workers dies before committing the answer.
    let requests = 0;
    const fn: ModelTurnFunction = async () => {
      requests += 1;
      return {
        message: { text: 'done' },
        tool_calls: [],
        finish_reason: 'stop',
        usage: { input_tokens: 3, output_tokens: 1 },
      };
    };
    const functions = { [DEFAULT_MODEL_TURN_FUNCTION]: fn };
    const { t, store, runId } = await modelRun(functions);
    for (let dead = 1; dead <= RETRY_BUDGET; dead += 1) {
      const a = t.another({
        store,
        workerSlot: 'box-1',
        models: createModelHost({ functions, sleep: async () => {} }),
        faults: (point) => {
          if (point === 'after_dispatch') throw new SimulatedCrash(point);
        },
      });
      await expect(a.stepRun(runId)).rejects.toBeInstanceOf(SimulatedCrash);
      t.clock.advance(1_000);
    }
    expect(requests).toBe(RETRY_BUDGET);

    // As many lost requests as the budget holds: the next worker still asks, and the turn ends.
    const b = t.another({ store, workerSlot: 'box-1', models: createModelHost({ functions }) });
    expect(await b.stepRun(runId)).toMatchObject({ kind: 'progressed', status: 'completed' });
    expect(requests).toBe(RETRY_BUDGET + 1);
    const final = await store.getRun(runId);
    // Every request made is in usage, the lost ones included.
    expect(final?.usage).toMatchObject({ model_calls: RETRY_BUDGET + 1 });
  });

  it('counts no call for a turn whose model-turn function is not configured', async () => {
    const { t, store, runId } = await modelRun({});
    expect(await t.another({ store }).stepRun(runId)).toMatchObject({ kind: 'progressed' });
    const final = await store.getRun(runId);
    expect(final?.usage).toMatchObject({ model_calls: 0, model_retries: 0, turns: 1 });
    const failed = (await readAll(store, runId)).find((e) => e.kind === 'operation_failed');
    expect(failed?.data).toMatchObject({ error_class: 'model_turn_function_not_found', attempts: 0 });
  });
});
