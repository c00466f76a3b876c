/**
 * How a JavaScript reducer's faults come back: a throw is `threw` (the run fails), resource
 * exhaustion and an unloadable artifact are `unavailable` (the run pauses), and the handler a
 * binding names is the export that runs. docs/contracts/reducer.md, "Validation" (last
 * paragraph); docs/contracts/tool-result.md.
 */
import { readFile } from 'node:fs/promises';
import canonicalize from 'canonicalize';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReducerBinding } from '../../lib/contracts/index.ts';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { reduce as reduceDirectly } from '../fixtures/reducers/agent-like.js';
import { driveAgentRun, reducerRequest, runStarted } from '../fixtures/reducers/requests.ts';

const registry = new InMemoryFunctionRegistry();
const host = createSandboxReducerHost({ registry });
afterAll(() => host.close());

let counter = 0;
async function callJs(source: string, handler?: string, via = host) {
  counter += 1;
  const function_path = `/lib/test/faults-${counter}`;
  await registry.put(function_path, 'js', new TextEncoder().encode(source));
  const binding: ReducerBinding = handler === undefined ? { function_path } : { function_path, handler };
  return via.reduce(binding, reducerRequest(runStarted()));
}

describe('JavaScript reducer: a throw is threw', () => {
  it('reports the error code and message of a thrown Error with a string code', async () => {
    const result = await callJs(`
      export function reduce() { const e = new Error('order 42 is not ours'); e.code = 'not_our_order'; throw e; }`);
    expect(result).toEqual({ kind: 'threw', code: 'not_our_order', message: 'order 42 is not ours' });
  });

  it('uses reducer_threw and names the error class when the error has no string code', async () => {
    const result = await callJs(`export function reduce(req) { return req.state.missing.field; }`);
    expect(result).toEqual({
      kind: 'threw',
      code: 'reducer_threw',
      message: expect.stringMatching(/^TypeError: /),
    });
  });

  it('reports a thrown non-Error value as its text', async () => {
    const result = await callJs(`export function reduce() { throw 'plain words'; }`);
    expect(result).toEqual({ kind: 'threw', code: 'reducer_threw', message: 'plain words' });
  });

  it('reports a rejected async handler as threw', async () => {
    const result = await callJs(
      `export async function reduce() { await null; throw new RangeError('later'); }`,
    );
    expect(result).toEqual({ kind: 'threw', code: 'reducer_threw', message: 'RangeError: later' });
  });

  it('reports a response that cannot be written as JSON as threw', async () => {
    const result = await callJs(`export function reduce() { return { big: 1n }; }`);
    expect(result).toMatchObject({
      kind: 'threw',
      code: 'reducer_threw',
      message: expect.stringContaining('BigInt'),
    });
  });
});

describe('JavaScript reducer: the artifact or the limits make it unavailable', () => {
  it('is unavailable for a syntax error in the artifact', async () => {
    const result = await callJs(`export function reduce( {`);
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_invalid: SyntaxError/),
    });
  });

  it('is unavailable when the module throws while it loads', async () => {
    const result = await callJs(`throw new Error('no config'); export function reduce() {}`);
    expect(result).toEqual({ kind: 'unavailable', reason: 'artifact_invalid: no config' });
  });

  it('interrupts an infinite loop at the deadline and reports unavailable (timeout)', async () => {
    const quick = createSandboxReducerHost({ registry, limits: { timeoutMs: 100 } });
    const started = performance.now();
    const result = await callJs(`export function reduce() { for (;;) {} }`, undefined, quick);
    const elapsed = performance.now() - started;
    expect(result).toEqual({ kind: 'unavailable', reason: 'timeout: the reducer ran past 100 ms' });
    expect(elapsed).toBeGreaterThanOrEqual(100);
    expect(elapsed).toBeLessThan(1000);
  });

  it('interrupts a loop the reducer tries to survive with try/catch', async () => {
    const quick = createSandboxReducerHost({ registry, limits: { timeoutMs: 50 } });
    const result = await callJs(
      `export function reduce() { for (;;) { try { for (;;) {} } catch (error) { /* keep going */ } } }`,
      undefined,
      quick,
    );
    expect(result).toEqual({ kind: 'unavailable', reason: 'timeout: the reducer ran past 50 ms' });
  });

  it('interrupts a response whose toJSON never returns', async () => {
    const quick = createSandboxReducerHost({ registry, limits: { timeoutMs: 50 } });
    const result = await callJs(
      `export function reduce() { return { toJSON() { for (;;) {} } }; }`,
      undefined,
      quick,
    );
    expect(result).toEqual({ kind: 'unavailable', reason: 'timeout: the reducer ran past 50 ms' });
  });

  it('interrupts an error whose message getter never returns', async () => {
    const quick = createSandboxReducerHost({ registry, limits: { timeoutMs: 50 } });
    const result = await callJs(
      `export function reduce() { throw { get message() { for (;;) {} } }; }`,
      undefined,
      quick,
    );
    expect(result).toEqual({ kind: 'unavailable', reason: 'timeout: the reducer ran past 50 ms' });
  });

  it('stops a memory bomb at the memory limit: unavailable (out_of_memory)', async () => {
    const result = await callJs(
      `export function reduce() { const a = []; for (;;) a.push(new Array(1e4).fill(a.length)); }`,
    );
    expect(result).toEqual({
      kind: 'unavailable',
      reason: `out_of_memory: the reducer exceeded ${64 * 1024 * 1024} bytes`,
    });
  });

  it('keeps a caught out-of-memory unavailable (what fits would depend on earlier calls)', async () => {
    const result = await callJs(`
      export function reduce() {
        try { const a = []; for (;;) a.push('x'.repeat(1e5) + a.length); }
        catch (error) { return { survived: String(error) }; }
      }`);
    expect(result).toMatchObject({ kind: 'unavailable', reason: expect.stringMatching(/^out_of_memory: /) });
  });

  it('reports runaway recursion as unavailable (stack_overflow)', async () => {
    const result = await callJs(
      `function f(n) { return f(n + 1) + 1; } export function reduce() { return f(0); }`,
    );
    expect(result).toMatchObject({ kind: 'unavailable', reason: expect.stringMatching(/^stack_overflow: /) });
  });

  it('reports a promise that can never settle as unavailable (never_settled)', async () => {
    const result = await callJs(`export function reduce() { return new Promise(() => {}); }`);
    expect(result).toMatchObject({ kind: 'unavailable', reason: expect.stringMatching(/^never_settled: /) });
  });

  it('recovers from a fault of the QuickJS module itself: the next call runs in a fresh module', async () => {
    const deep = createSandboxReducerHost({ registry, limits: { stackBytes: 1024 * 1024 } });
    const fault = await callJs(
      `function f(n) { return f(n + 1) + 1; } export function reduce() { return f(0); }`,
      undefined,
      deep,
    );
    const next = await callJs(`export function reduce(req) { return { rev: req.state_rev }; }`);
    expect(fault).toMatchObject({ kind: 'unavailable' });
    expect((fault as { reason: string }).reason).toMatch(/^sandbox_fault: /);
    expect(next).toMatchObject({ kind: 'answered', response: { rev: 0 } });
  });
});

describe('JavaScript reducer: handler selection', () => {
  const source = `
    export function reduce() { return { handler: 'reduce' }; }
    export const triage = (req) => ({ handler: 'triage', kind: req.event.kind });
    export const notAFunction = 42;`;

  it('calls the export named by binding.handler', async () => {
    const result = await callJs(source, 'triage');
    expect(result).toMatchObject({ kind: 'answered', response: { handler: 'triage', kind: 'run_started' } });
  });

  it('calls `reduce` when the binding names no handler', async () => {
    const result = await callJs(source);
    expect(result).toMatchObject({ kind: 'answered', response: { handler: 'reduce' } });
  });

  it.each(['missing', 'notAFunction'])(
    'is unavailable when the handler %s is not an exported function',
    async (name) => {
      const result = await callJs(source, name);
      expect(result).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/^handler_missing: /) });
    },
  );

  it('supports async handlers', async () => {
    const result = await callJs(
      `export async function reduce(req) { await null; return { rev: req.state_rev }; }`,
    );
    expect(result).toMatchObject({ kind: 'answered', response: { rev: 0 } });
  });
});

describe('JavaScript reducer: a realistic reducer', () => {
  it('answers exactly what the same code answers outside the sandbox, over a whole run', async () => {
    const bytes = await readFile(new URL('../fixtures/reducers/agent-like.js', import.meta.url));
    const artifact = await registry.put('/lib/test/agent-like', 'js', bytes);
    const sandboxed = await driveAgentRun(async (request) => {
      const result = await host.reduce({ function_path: '/lib/test/agent-like' }, request);
      if (result.kind !== 'answered') throw new Error(JSON.stringify(result));
      expect(result.artifact_hash).toBe(artifact.hash);
      return result.response;
    });
    const direct = await driveAgentRun((request) => reduceDirectly(request));
    expect(canonicalize(sandboxed.responses)).toBe(canonicalize(direct.responses));
    expect(sandboxed.responses.map((r) => (r.effects as Array<{ kind: string }>).map((e) => e.kind))).toEqual(
      [['request_model_turn'], ['call_tool'], ['call_tool'], ['request_model_turn'], ['complete']],
    );
  });
});
