/**
 * The committed Starlark runtime is the one its manifest names: lib/sandbox/starlark/runtime.json
 * records the sha256 of main.go (the source it was built from), of the built module and of Go's
 * wasm_exec.js, as bin/build-starlark-runtime.ts wrote them. A module edited by hand, or a main.go
 * changed without a rebuild, fails here; `npm run build:starlark -- --check` (with Go 1.19 and
 * golang-starlark-dev installed) rebuilds it and compares byte for byte. Also: the memory patch
 * that caps the runtime's memory. docs/guides/who-may-do-what.md.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { readMemoryLimits, withMemoryMaximum } from '../../lib/sandbox/wasm-module.ts';
import { compileWat } from '../fixtures/reducers/compile-wat.ts';

/** Node's WebAssembly global (the project's TypeScript libs declare none). */
const wasm = (
  globalThis as unknown as {
    WebAssembly: {
      Module: new (bytes: Uint8Array) => object;
      Instance: new (module: object) => { exports: { grow: (pages: number) => number } };
    };
  }
).WebAssembly;

const DIR = new URL('../../lib/sandbox/starlark/', import.meta.url);
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const read = async (name: string) => new Uint8Array(await readFile(new URL(name, DIR)));

const Manifest = z.object({
  toolchain: z.object({ go: z.string(), debian: z.record(z.string(), z.string().nullable()) }),
  build: z.string(),
  sources: z.object({ 'main.go': z.string(), 'go.starlark.net': z.string() }),
  files: z.record(z.string(), z.object({ sha256: z.string(), size: z.number() })),
});

describe('the committed Starlark runtime', () => {
  it('is the module, the glue and the source its manifest names', async () => {
    const manifest = Manifest.parse(JSON.parse(new TextDecoder().decode(await read('runtime.json'))));
    const wasm = await read('starlark-runtime.wasm');
    const glue = await read('wasm_exec.js');
    expect(manifest.toolchain.go).toBe('go1.19.8');
    expect(manifest.files['starlark-runtime.wasm']).toEqual({ sha256: sha256(wasm), size: wasm.byteLength });
    expect(manifest.files['wasm_exec.js']).toEqual({ sha256: sha256(glue), size: glue.byteLength });
    expect(manifest.sources['main.go']).toBe(sha256(await read('main.go')));
  });

  it('defines one memory without a maximum, which the host caps', async () => {
    const wasm = await read('starlark-runtime.wasm');
    const [memory] = readMemoryLimits(wasm) ?? [];
    expect(memory).toMatchObject({ maximum: null, shared: false, memory64: false });
    const capped = withMemoryMaximum(wasm, (memory?.minimum ?? 0) + 1024);
    expect(readMemoryLimits(capped)).toEqual([{ ...memory, maximum: (memory?.minimum ?? 0) + 1024 }]);
  });
});

describe('withMemoryMaximum', () => {
  it('sets the maximum of the one memory, which growth then cannot pass', async () => {
    const bytes = await compileWat(
      '(module (memory (export "memory") 2) (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))',
    );
    const patched = withMemoryMaximum(bytes, 3);
    const { grow } = new wasm.Instance(new wasm.Module(patched)).exports;
    expect(readMemoryLimits(patched)).toEqual([{ minimum: 2, maximum: 3, shared: false, memory64: false }]);
    expect([grow(1), grow(1)]).toEqual([2, -1]);
  });

  it('refuses a module without exactly one memory, or a maximum below the minimum', async () => {
    expect(() => withMemoryMaximum(Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0), 4)).toThrow(RangeError);
    expect(() => withMemoryMaximum(new Uint8Array(0), 4)).toThrow(RangeError);
    const bytes = await compileWat('(module (memory 5))');
    expect(() => withMemoryMaximum(bytes, 4)).toThrow(/out of range/);
  });
});
