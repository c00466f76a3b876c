/**
 * The sandbox ReducerHost over a FunctionRegistry: resolving a binding to its artifact hash,
 * pinning (reducer_changed), missing artifacts (reducer_unavailable), and the in-memory
 * registry. docs/contracts/reducer.md and "Validation" (last paragraph).
 */
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Artifact,
  createSandboxReducerHost,
  type FunctionRegistry,
  InMemoryFunctionRegistry,
  RegistryError,
} from '../../lib/sandbox/index.ts';
import { compileWatFixture } from '../fixtures/reducers/compile-wat.ts';
import { reducerRequest, runStarted } from '../fixtures/reducers/requests.ts';

const encode = (text: string) => new TextEncoder().encode(text);
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const V1 = encode(`export function reduce(req) { return { version: 1, rev: req.state_rev }; }`);
const V2 = encode(`export function reduce(req) { return { version: 2, rev: req.state_rev }; }`);

const hosts: Array<{ close(): Promise<void> }> = [];
function hostOver(registry: FunctionRegistry) {
  const host = createSandboxReducerHost({ registry });
  hosts.push(host);
  return host;
}
afterAll(async () => {
  for (const host of hosts) await host.close();
});

describe('resolve', () => {
  it('returns the sha256 of the artifact at the function path', async () => {
    const host = hostOver(
      new InMemoryFunctionRegistry([{ function_path: '/lib/app/reducer', kind: 'js', bytes: V1 }]),
    );
    expect(await host.resolve({ function_path: '/lib/app/reducer' })).toEqual({ artifact_hash: sha256(V1) });
  });

  it('returns null when no function is registered at the path', async () => {
    const host = hostOver(new InMemoryFunctionRegistry());
    expect(await host.resolve({ function_path: '/lib/app/none' })).toBeNull();
  });
});

describe('reduce: pinning and missing artifacts', () => {
  it('answers with the artifact hash when the bound hash matches', async () => {
    const host = hostOver(
      new InMemoryFunctionRegistry([{ function_path: '/lib/app/reducer', kind: 'js', bytes: V1 }]),
    );
    const binding = { function_path: '/lib/app/reducer', artifact_hash: sha256(V1) };
    const result = await host.reduce(binding, reducerRequest(runStarted(), null, 3));
    expect(result).toEqual({ kind: 'answered', response: { version: 1, rev: 3 }, artifact_hash: sha256(V1) });
  });

  it('reports changed, without running anything, when the artifact moved since the run bound it', async () => {
    const registry = new InMemoryFunctionRegistry([
      { function_path: '/lib/app/reducer', kind: 'js', bytes: V1 },
    ]);
    const host = hostOver(registry);
    const bound = await host.resolve({ function_path: '/lib/app/reducer' });
    await registry.put('/lib/app/reducer', 'js', V2);
    const result = await host.reduce(
      { function_path: '/lib/app/reducer', artifact_hash: bound?.artifact_hash },
      reducerRequest(runStarted()),
    );
    expect(result).toEqual({ kind: 'changed', bound_hash: sha256(V1), found_hash: sha256(V2) });
  });

  it('runs the current artifact when the binding pins no hash', async () => {
    const registry = new InMemoryFunctionRegistry([
      { function_path: '/lib/app/reducer', kind: 'js', bytes: V1 },
    ]);
    await registry.put('/lib/app/reducer', 'js', V2);
    const result = await hostOver(registry).reduce(
      { function_path: '/lib/app/reducer' },
      reducerRequest(runStarted()),
    );
    expect(result).toMatchObject({ kind: 'answered', response: { version: 2 }, artifact_hash: sha256(V2) });
  });

  it('reports unavailable (artifact_missing) when no function is registered at the path', async () => {
    const result = await hostOver(new InMemoryFunctionRegistry()).reduce(
      { function_path: '/lib/app/gone' },
      reducerRequest(runStarted()),
    );
    expect(result).toEqual({ kind: 'unavailable', reason: 'artifact_missing: no function at /lib/app/gone' });
  });

  it('reports unavailable (artifact_corrupt) when the registry hands out bytes that do not match its hash', async () => {
    const corrupt: FunctionRegistry = {
      get: async (function_path): Promise<Artifact> => ({
        function_path,
        kind: 'js',
        bytes: V2,
        hash: sha256(V1),
      }),
      put: async () => {
        throw new Error('read-only');
      },
      list: async () => [],
    };
    const result = await hostOver(corrupt).reduce(
      { function_path: '/lib/app/reducer' },
      reducerRequest(runStarted()),
    );
    expect(result).toMatchObject({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_corrupt: /),
    });
  });

  it('reports unavailable (request_not_json) for a request that has no JSON form', async () => {
    const host = hostOver(
      new InMemoryFunctionRegistry([{ function_path: '/lib/app/reducer', kind: 'js', bytes: V1 }]),
    );
    const request = { ...reducerRequest(runStarted()), state: { ratio: Number.NaN } };
    const result = await host.reduce({ function_path: '/lib/app/reducer' }, request);
    expect(result).toMatchObject({
      kind: 'unavailable',
      reason: expect.stringMatching(/^request_not_json: /),
    });
  });

  it('reports unavailable (artifact_invalid) for a JavaScript artifact that is not UTF-8', async () => {
    const host = hostOver(
      new InMemoryFunctionRegistry([
        { function_path: '/lib/app/reducer', kind: 'js', bytes: Uint8Array.of(0xff, 0xfe) },
      ]),
    );
    const result = await host.reduce({ function_path: '/lib/app/reducer' }, reducerRequest(runStarted()));
    expect(result).toEqual({
      kind: 'unavailable',
      reason: 'artifact_invalid: the JavaScript artifact is not UTF-8',
    });
  });

  it('lets a registry failure propagate instead of pausing the run', async () => {
    const failing: FunctionRegistry = {
      get: async () => {
        throw new Error('store unreachable');
      },
      put: async () => {
        throw new Error('store unreachable');
      },
      list: async () => [],
    };
    await expect(
      hostOver(failing).reduce({ function_path: '/lib/app/reducer' }, reducerRequest(runStarted())),
    ).rejects.toThrow('store unreachable');
  });

  it('pins WebAssembly artifacts the same way', async () => {
    const wasm = await compileWatFixture('tally.wat');
    const registry = new InMemoryFunctionRegistry([
      { function_path: '/lib/app/wasm', kind: 'wasm', bytes: wasm },
    ]);
    const host = hostOver(registry);
    const answered = await host.reduce(
      { function_path: '/lib/app/wasm', artifact_hash: sha256(wasm) },
      reducerRequest(runStarted()),
    );
    await registry.put('/lib/app/wasm', 'js', V1);
    const changed = await host.reduce(
      { function_path: '/lib/app/wasm', artifact_hash: sha256(wasm) },
      reducerRequest(runStarted()),
    );
    expect(answered).toMatchObject({ kind: 'answered', artifact_hash: sha256(wasm) });
    expect(changed).toEqual({ kind: 'changed', bound_hash: sha256(wasm), found_hash: sha256(V1) });
  });
});

describe('InMemoryFunctionRegistry', () => {
  it('registers built-ins at construction and lists them by path without bytes', async () => {
    const registry = new InMemoryFunctionRegistry([
      { function_path: '/lib/raisin/z', kind: 'js', bytes: V2 },
      { function_path: '/lib/raisin/a', kind: 'js', bytes: V1 },
    ]);
    expect(await registry.list()).toEqual([
      { function_path: '/lib/raisin/a', kind: 'js', hash: sha256(V1), size: V1.byteLength },
      { function_path: '/lib/raisin/z', kind: 'js', hash: sha256(V2), size: V2.byteLength },
    ]);
  });

  it('returns the artifact with its hash from put, and replaces the previous version', async () => {
    const registry = new InMemoryFunctionRegistry();
    const first = await registry.put('/lib/app/r', 'js', V1);
    const second = await registry.put('/lib/app/r', 'js', V2);
    expect(first.hash).toBe(sha256(V1));
    expect(second).toEqual({ function_path: '/lib/app/r', kind: 'js', bytes: V2, hash: sha256(V2) });
    expect((await registry.get('/lib/app/r'))?.hash).toBe(sha256(V2));
  });

  it('keeps its own copy of the bytes, so a caller mutating a buffer cannot change a hashed artifact', async () => {
    const registry = new InMemoryFunctionRegistry();
    const bytes = V1.slice();
    await registry.put('/lib/app/r', 'js', bytes);
    bytes.fill(0);
    const fetched = await registry.get('/lib/app/r');
    fetched?.bytes.fill(0);
    const again = await registry.get('/lib/app/r');
    expect(again?.bytes).toEqual(V1);
    expect(sha256(again?.bytes ?? new Uint8Array())).toBe(again?.hash);
  });

  it.each([
    ['a path without a leading slash', 'lib/app/r', 'js', V1],
    ['an unknown kind', '/lib/app/r', 'python', V1],
    ['empty bytes', '/lib/app/r', 'js', new Uint8Array()],
  ])('refuses %s with invalid_artifact', async (_label, path, kind, bytes) => {
    const registry = new InMemoryFunctionRegistry();
    const attempt = registry.put(path, kind as 'js', bytes);
    await expect(attempt).rejects.toBeInstanceOf(RegistryError);
    await expect(attempt).rejects.toMatchObject({ code: 'invalid_artifact' });
  });
});

describe('limits', () => {
  it('refuses a non-positive limit or an oversized stack at host creation', () => {
    const registry = new InMemoryFunctionRegistry();
    expect(() => createSandboxReducerHost({ registry, limits: { timeoutMs: 0 } })).toThrow(
      expect.objectContaining({ name: 'SandboxLimitError', code: 'invalid_limit', limit: 'timeoutMs' }),
    );
    expect(() => createSandboxReducerHost({ registry, limits: { stackBytes: 64 * 1024 * 1024 } })).toThrow(
      expect.objectContaining({ code: 'invalid_limit', limit: 'stackBytes', retryable: false }),
    );
    expect(() => createSandboxReducerHost({ registry, limits: { steps: 1.5 } })).toThrow(RangeError);
  });

  it('fills unset limits with the defaults (1 s, 64 MiB, 256 KiB, 1M Starlark steps)', async () => {
    const host = hostOver(new InMemoryFunctionRegistry());
    expect(host.limits).toEqual({
      timeoutMs: 1_000,
      memoryBytes: 64 * 1024 * 1024,
      stackBytes: 256 * 1024,
      steps: 1_000_000,
    });
  });
});
