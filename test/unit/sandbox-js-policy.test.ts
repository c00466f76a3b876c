/**
 * The deterministic execution policy for JavaScript reducers: no host function reachable,
 * clock at the epoch, a fixed Math.random sequence, a fresh context per call, canonical input.
 * docs/contracts/reducer.md; docs/contracts/tool-result.md.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSandboxReducerHost, InMemoryFunctionRegistry } from '../../lib/sandbox/index.ts';
import { reducerRequest, runStarted } from '../fixtures/reducers/requests.ts';

const registry = new InMemoryFunctionRegistry();
const host = createSandboxReducerHost({ registry });
afterAll(() => host.close());

let counter = 0;
/** Registers `source` as a fresh JS artifact and calls it once with a run_started request. */
async function callJs(source: string, request: unknown = reducerRequest(runStarted())) {
  counter += 1;
  const function_path = `/lib/test/policy-${counter}`;
  await registry.put(function_path, 'js', new TextEncoder().encode(source));
  return host.reduce({ function_path }, request);
}

async function answer(source: string, request?: unknown): Promise<unknown> {
  const result = await callJs(source, request);
  if (result.kind !== 'answered') throw new Error(`expected an answer, got ${JSON.stringify(result)}`);
  return result.response;
}

describe('JavaScript reducer: host functions are unreachable', () => {
  it.each([
    ['fetch', "fetch('https://example.com')"],
    ['require', "require('node:fs')"],
    ['process', 'process.exit(1)'],
    ['raisin', "raisin.functions.call('/lib/x', {})"],
    ['setTimeout', 'setTimeout(() => {}, 0)'],
    ['setInterval', 'setInterval(() => {}, 10)'],
    ['console', "console.log('hi')"],
  ])(
    'calling %s throws ReferenceError inside the reducer, which can catch and report it',
    async (name, call) => {
      const response = await answer(`
      export function reduce() {
        try { ${call}; return { reached: true }; }
        catch (error) { return { caught: error.name, message: error.message, seen: typeof ${name} }; }
      }`);
      expect(response).toEqual({
        caught: 'ReferenceError',
        message: expect.stringContaining(name),
        seen: 'undefined',
      });
    },
  );

  it('fails the call as threw when the reducer does not catch the ReferenceError', async () => {
    const result = await callJs(`export function reduce() { return fetch('https://example.com'); }`);
    expect(result).toEqual({
      kind: 'threw',
      code: 'reducer_threw',
      message: expect.stringMatching(/^ReferenceError: .*fetch/),
    });
  });

  it('refuses a module that imports anything (no module loader): unavailable', async () => {
    const result = await callJs(`import fs from 'node:fs'; export function reduce() { return fs; }`);
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_invalid: .*node:fs/),
    });
  });

  it('rejects a dynamic import inside the reducer', async () => {
    const response = await answer(`
      export async function reduce() {
        try { await import('node:fs'); return { imported: true }; }
        catch (error) { return { caught: error.name }; }
      }`);
    expect(response).toEqual({ caught: expect.any(String) });
  });

  it('exposes only ECMAScript built-ins as globals', async () => {
    const response = (await answer(
      `export function reduce() { return Object.getOwnPropertyNames(globalThis).sort(); }`,
    )) as string[];
    const allowed = new Set([
      ...[
        'Object',
        'Function',
        'Array',
        'Number',
        'Boolean',
        'String',
        'Symbol',
        'BigInt',
        'Math',
        'JSON',
        'Reflect',
      ],
      ...['Date', 'RegExp', 'Proxy', 'Map', 'Set', 'WeakMap', 'WeakSet', 'Promise', 'Iterator', 'globalThis'],
      ...['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError'],
      ...['InternalError', 'AggregateError', 'parseInt', 'parseFloat', 'isNaN', 'isFinite', 'eval'],
      ...['decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'escape', 'unescape'],
      ...['Infinity', 'NaN', 'undefined', 'ArrayBuffer', 'SharedArrayBuffer', 'DataView'],
      ...['Uint8ClampedArray', 'Int8Array', 'Uint8Array', 'Int16Array', 'Uint16Array', 'Int32Array'],
      ...['Uint32Array', 'BigInt64Array', 'BigUint64Array', 'Float16Array', 'Float32Array', 'Float64Array'],
      ...['Atomics', 'Symbol'],
    ]);
    expect(response.filter((name) => !allowed.has(name))).toEqual([]);
    expect(response).not.toContain('WeakRef');
    expect(response).not.toContain('FinalizationRegistry');
  });
});

describe('JavaScript reducer: the answer is written by the host', () => {
  it('writes the response with the JSON.stringify captured before the module ran', async () => {
    const response = await answer(`
      JSON.stringify = () => '{"forged":true}';
      export function reduce() { return { honest: true }; }`);
    expect(response).toEqual({ honest: true });
  });

  it('answers null when the handler returns nothing (core then refuses the response)', async () => {
    expect(await callJs(`export function reduce() {}`)).toMatchObject({ kind: 'answered', response: null });
  });
});

describe('JavaScript reducer: the clock reads the epoch', () => {
  it('answers Date.now(), new Date() and Date() with the epoch', async () => {
    const response = await answer(`
      export function reduce() {
        return { now: Date.now(), iso: new Date().toISOString(), time: new Date().getTime(), text: Date(),
                 isDate: new Date() instanceof Date, ctor: new Date().constructor === Date };
      }`);
    expect(response).toEqual({
      now: 0,
      iso: '1970-01-01T00:00:00.000Z',
      time: 0,
      text: 'Thu, 01 Jan 1970 00:00:00 GMT',
      isDate: true,
      ctor: true,
    });
  });

  it('keeps explicit dates and reads local-time fields as UTC', async () => {
    const response = await answer(`
      export function reduce() {
        const d = new Date(2020, 0, 2, 3, 4, 5);
        return { ms: d.getTime(), hours: d.getHours(), offset: d.getTimezoneOffset(),
                 parsed: new Date('2021-06-01T12:00:00Z').getTime(), text: String(new Date(86400000)) };
      }`);
    expect(response).toEqual({
      ms: Date.UTC(2020, 0, 2, 3, 4, 5),
      hours: 3,
      offset: 0,
      parsed: Date.UTC(2021, 5, 1, 12),
      text: 'Fri, 02 Jan 1970 00:00:00 GMT',
    });
  });
});

describe('JavaScript reducer: Math.random is a fixed sequence', () => {
  const source = `export function reduce() { return Array.from({ length: 5 }, () => Math.random()); }`;

  it('returns the same sequence on every call', async () => {
    const first = (await answer(source)) as number[];
    const second = (await answer(source)) as number[];
    expect(second).toEqual(first);
    expect(new Set(first).size).toBe(5);
    for (const value of first) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
    }
  });
});

describe('JavaScript reducer: every call gets a fresh context', () => {
  it('does not let a global set in one call be seen by the next', async () => {
    const source = `
      export function reduce() {
        const seen = globalThis.leftover ?? null;
        globalThis.leftover = 'from an earlier call';
        Math.random = () => 0.5;
        return { seen, random: Math.random() };
      }`;
    await registry.put('/lib/test/stateful', 'js', new TextEncoder().encode(source));
    const binding = { function_path: '/lib/test/stateful' };
    const request = reducerRequest(runStarted());
    const first = await host.reduce(binding, request);
    const second = await host.reduce(binding, request);
    expect(first).toMatchObject({ kind: 'answered', response: { seen: null, random: 0.5 } });
    expect(second).toMatchObject({ kind: 'answered', response: { seen: null, random: 0.5 } });
  });

  it('hands the request over as canonical JSON (sorted keys), whatever its insertion order', async () => {
    const source = `export function reduce(req) { return { top: Object.keys(req), state: Object.keys(req.state) }; }`;
    const request = { ...reducerRequest(runStarted(), { zeta: 1, alpha: 2, mid: 3 }, 4) };
    const response = await answer(source, request);
    expect(response).toEqual({
      top: ['accept', 'contract', 'event', 'run', 'state', 'state_rev'],
      state: ['alpha', 'mid', 'zeta'],
    });
  });

  it('parses the request with the JSON captured before the reducer module ran, so replacing JSON.parse forges nothing', async () => {
    const response = await answer(`
      JSON.parse = () => ({ forged: true });
      export function reduce(req) { return { rev: req.state_rev, forged: req.forged ?? false }; }`);
    expect(response).toEqual({ rev: 0, forged: false });
  });
});
