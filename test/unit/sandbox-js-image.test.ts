/**
 * A loaded JavaScript reducer's calls all start from the state its load left (the memory image
 * written back after every call, lib/sandbox/quickjs-image.ts): nothing one call does is seen by
 * the next, whatever the call did or how it ended. See docs/contracts/reducer.md, "The
 * deterministic execution policy".
 */
import { newQuickJSWASMModule, newVariant, RELEASE_SYNC } from 'quickjs-emscripten';
import { afterAll, describe, expect, it } from 'vitest';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { captureImage, probeLayout } from '../../lib/sandbox/quickjs-image.ts';
import { wasmApi } from '../../lib/sandbox/wasm-api.ts';
import { reducerRequest, runStarted } from '../fixtures/reducers/requests.ts';

const registry = new InMemoryFunctionRegistry();
const host = createSandboxReducerHost({
  registry,
  limits: { timeoutMs: 200, memoryBytes: 32 * 1024 * 1024 },
});
afterAll(() => host.close());

/** A reducer whose `mode` (from the request's state) picks what the call does. */
const SOURCE = `
let calls = 0;
const made = [];
export function reduce(req) {
  calls += 1;
  const seen = { calls, made: made.length, leftover: globalThis.leftover ?? null, random: Math.random() };
  globalThis.leftover = req.state.mode;
  made.push(new Array(1000).fill(req.state.mode));
  const mode = req.state.mode;
  if (mode === 'throw') throw new Error('thrown on purpose');
  if (mode === 'loop') for (;;) {}
  if (mode === 'hog') { const hog = []; for (;;) hog.push(new Array(100000).fill(1)); }
  if (mode === 'big') { const a = new Uint8Array(24 << 20); a.fill(7); seen.big = a.length; }
  if (mode === 'zeros') { const a = new Uint8Array(24 << 20); let sum = 0; for (let i = 0; i < a.length; i += 4096) sum += a[i]; seen.sum = sum; }
  if (mode === 'later') Promise.resolve().then(() => { globalThis.leftover = 'from a job'; });
  return { contract: req.contract, seen };
}`;

let counter = 0;
async function loaded(): Promise<(mode: string) => Promise<unknown>> {
  counter += 1;
  const function_path = `/lib/test/image-${counter}`;
  await registry.put(function_path, 'js', new TextEncoder().encode(SOURCE));
  return (mode) => host.reduce({ function_path }, reducerRequest(runStarted(), { mode }));
}

describe('JavaScript reducer: every call starts from the loaded state', () => {
  it('keeps module variables, globals and Math.random where the load left them', async () => {
    const call = await loaded();
    const answers = [await call('plain'), await call('plain'), await call('plain')];
    expect(answers[0]).toMatchObject({
      kind: 'answered',
      response: { seen: { calls: 1, made: 0, leftover: null } },
    });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('answers the same after calls that threw, timed out, ran out of memory or grew the heap', async () => {
    const call = await loaded();
    const first = await call('plain');
    expect(await call('throw')).toMatchObject({ kind: 'threw', message: 'thrown on purpose' });
    expect(await call('plain')).toEqual(first);
    expect(await call('loop')).toEqual({
      kind: 'unavailable',
      reason: 'timeout: the reducer ran past 200 ms',
    });
    expect(await call('plain')).toEqual(first);
    expect(await call('hog')).toMatchObject({
      kind: 'unavailable',
      reason: expect.stringMatching(/^(out_of_memory|timeout)/),
    });
    expect(await call('plain')).toEqual(first);
    expect(await call('big')).toMatchObject({ kind: 'answered', response: { seen: { big: 24 << 20 } } });
    expect(await call('plain')).toEqual(first);
    expect(await call('later')).toMatchObject({ kind: 'answered' });
    expect(await call('plain')).toEqual(first);
  });

  it('hands out memory a previous call filled as zeros again', async () => {
    const call = await loaded();
    await call('big');
    expect(await call('zeros')).toMatchObject({ kind: 'answered', response: { seen: { sum: 0, calls: 1 } } });
  });
});

describe('QuickJS memory images', () => {
  it('finds the heap break of this QuickJS build, so an image holds the live part only', async () => {
    const memory = new wasmApi.Memory({ initial: 256, maximum: 512 });
    const module = await newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory: memory }));
    const layout = probeLayout(module, memory);
    expect(layout).not.toBeNull();

    const other = new wasmApi.Memory({ initial: 256, maximum: 512 });
    const fresh = await newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory: other }));
    const context = fresh.newRuntime().newContext();
    context.unwrapResult(context.evalCode('globalThis.kept = 1')).dispose();
    const image = captureImage(other, layout);
    expect(image.bytes).toBeLessThan(other.buffer.byteLength / 4);
    context
      .unwrapResult(context.evalCode(`globalThis.kept = 2; globalThis.junk = 'y'.repeat(${2 << 20})`))
      .dispose();
    expect(image.restore()).toBe(true);
    const kept = context.unwrapResult(context.evalCode('[globalThis.kept, typeof globalThis.junk]'));
    expect(context.dump(kept)).toEqual([1, 'undefined']);
  });
});
