/**
 * WebAssembly reducers: the core-module ABI (lib/sandbox/README.md), built from WAT at test
 * time with wabt; no imports; traps, timeouts and ABI violations are unavailable.
 * docs/contracts/reducer.md and "Validation"; docs/contracts/tool-result.md.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReducerResponse } from '../../lib/contracts/index.ts';
import {
  createSandboxReducerHost,
  DEFAULT_SANDBOX_LIMITS,
  InMemoryFunctionRegistry,
  readMemoryLimits,
} from '../../lib/sandbox/index.ts';
import { compileWasmReducer } from '../../lib/sandbox/wasm-module.ts';
import { compileWat, compileWatFixture } from '../fixtures/reducers/compile-wat.ts';
import { reducerRequest, runStarted, toolResult } from '../fixtures/reducers/requests.ts';

const registry = new InMemoryFunctionRegistry();
const host = createSandboxReducerHost({ registry, limits: { timeoutMs: 150 } });
afterAll(() => host.close());

/** A module with the ABI's memory and alloc, plus `body` (more exports). */
const abiModule = (body: string, memory = '(memory (export "memory") 1 16)') => `(module
  ${memory}
  (global $heap (mut i32) (i32.const 1024))
  (func (export "alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $len)))
    (local.get $ptr))
  ${body})`;

let counter = 0;
async function callWasm(wat: string, handler?: string, request: unknown = reducerRequest(runStarted())) {
  counter += 1;
  const function_path = `/lib/test/wasm-${counter}`;
  await registry.put(function_path, 'wasm', await compileWat(wat));
  return host.reduce(handler === undefined ? { function_path } : { function_path, handler }, request);
}

describe('WebAssembly reducer built from source at test time', () => {
  beforeAll(async () => {
    await registry.put('/lib/test/tally', 'wasm', await compileWatFixture('tally.wat'));
  });

  it('calls the count tool on run_started with state_rev + 1 and effect id "{state_rev}:0"', async () => {
    const result = await host.reduce(
      { function_path: '/lib/test/tally' },
      reducerRequest(runStarted(), null, 6),
    );
    expect(result.kind).toBe('answered');
    const response = ReducerResponse.parse((result as { response: unknown }).response);
    expect(response).toMatchObject({
      contract: 'raisin.agent-run.reducer/1',
      state: { events: 1, last_event_seq: 1 },
      state_rev: 7,
      effects: [{ effect_id: '7:0', kind: 'call_tool', tool: 'count', args: { events: 1 } }],
      refused: null,
    });
  });

  it('reads only top-level keys: a state and an event data that nest the same keys earlier', async () => {
    const state = {
      a_notes: [{ events: 50, last_event_seq: 99, text: 'a "quoted" } brace' }],
      events: 2,
      last_event_seq: 3,
    };
    const payload = { event: { kind: 'stopped', seq: 1 }, state_rev: 99 };
    const request = reducerRequest(toolResult(9, '7:0', 'call_1', payload), state, 41);
    const result = await host.reduce({ function_path: '/lib/test/tally' }, request);
    expect(result).toMatchObject({
      kind: 'answered',
      response: {
        state: { events: 3, last_event_seq: 9 },
        state_rev: 42,
        effects: [{ effect_id: '42:0', kind: 'complete', summary: 'tallied 3 events' }],
      },
    });
  });

  it('answers identically on every call (a fresh instance per call)', async () => {
    const request = reducerRequest(runStarted(), null, 0);
    const first = await host.reduce({ function_path: '/lib/test/tally' }, request);
    const second = await host.reduce({ function_path: '/lib/test/tally' }, request);
    expect(second).toEqual(first);
  });

  it('is unavailable when the selected handler is not an exported function', async () => {
    const result = await host.reduce(
      { function_path: '/lib/test/tally', handler: 'triage' },
      reducerRequest(runStarted()),
    );
    expect(result).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/^handler_missing: /) });
  });
});

describe('WebAssembly reducer: admission', () => {
  it('refuses a module that declares imports', async () => {
    const wat = `(module
      (import "env" "now" (func $now (result i64)))
      (memory (export "memory") 1 16)
      (func (export "alloc") (param i32) (result i32) (i32.const 1024))
      (func (export "reduce") (param i32 i32) (result i64) (call $now)))`;
    const result = await callWasm(wat);
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_imports_refused: .*env\.now/),
    });
  });

  it('refuses a memory without a maximum, or with one above the memory limit', async () => {
    const unbounded = await callWasm(abiModule('', '(memory (export "memory") 1)'));
    const tooLarge = await callWasm(abiModule('', '(memory (export "memory") 1 65536)'));
    expect(unbounded).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_memory_unbounded: .*no maximum/),
    });
    expect(tooLarge).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_memory_unbounded: .*65536 pages/),
    });
  });

  it('refuses a module without the ABI exports', async () => {
    const result = await callWasm(
      '(module (func (export "reduce") (param i32 i32) (result i64) (i64.const 0)))',
    );
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_abi_violation: .*memory/),
    });
  });

  it('refuses bytes that are not a core module', async () => {
    await registry.put('/lib/test/not-wasm', 'wasm', new TextEncoder().encode('export function reduce() {}'));
    const component = Uint8Array.of(0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00);
    await registry.put('/lib/test/component', 'wasm', component);
    const notWasm = await host.reduce({ function_path: '/lib/test/not-wasm' }, reducerRequest(runStarted()));
    const notCore = await host.reduce({ function_path: '/lib/test/component' }, reducerRequest(runStarted()));
    expect(notWasm).toEqual({ kind: 'unavailable', reason: 'artifact_invalid: not a WebAssembly binary' });
    expect(notCore).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_invalid: .*components/),
    });
  });

  it('reads the declared memory limits from the binary', async () => {
    const bytes = await compileWat('(module (memory (export "memory") 2 9))');
    expect(readMemoryLimits(bytes)).toEqual([{ minimum: 2, maximum: 9, shared: false, memory64: false }]);
    expect(readMemoryLimits(await compileWat('(module)'))).toEqual([]);
    const memorySectionEnd = 8 + 2 + 4; // header, section id + size, then count, flags, min, max
    expect(readMemoryLimits(bytes.subarray(0, memorySectionEnd - 1))).toBeNull();
  });

  it('admits the fixture with its exported functions', async () => {
    const compiled = await compileWasmReducer(await compileWatFixture('tally.wat'), DEFAULT_SANDBOX_LIMITS);
    expect('functions' in compiled && [...compiled.functions].sort()).toEqual(['alloc', 'reduce']);
  });
});

describe('WebAssembly reducer: faults are unavailable', () => {
  it('reports a trap as unavailable (wasm_trap)', async () => {
    const result = await callWasm(
      abiModule('(func (export "reduce") (param i32 i32) (result i64) unreachable)'),
    );
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_trap: .*unreachable/),
    });
  });

  it('reports an out-of-bounds memory access as unavailable (wasm_trap)', async () => {
    const body = '(func (export "reduce") (param i32 i32) (result i64) (i64.load (i32.const -8)))';
    const result = await callWasm(abiModule(body));
    expect(result).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/^wasm_trap: /) });
  });

  it('stops an infinite loop at the deadline, and the next call runs in a new worker', async () => {
    const started = performance.now();
    const spin = await callWasm(
      abiModule('(func (export "reduce") (param i32 i32) (result i64) (loop $l (br $l)) (i64.const 0))'),
    );
    const elapsed = performance.now() - started;
    const next = await host.reduce({ function_path: '/lib/test/tally' }, reducerRequest(runStarted()));
    expect(spin).toEqual({ kind: 'unavailable', reason: 'timeout: the reducer ran past 150 ms' });
    expect(elapsed).toBeLessThan(1500);
    expect(next).toMatchObject({ kind: 'answered', response: { state_rev: 1 } });
  });

  it('reports a response range outside memory as unavailable (wasm_abi_violation)', async () => {
    const body = '(func (export "reduce") (param i32 i32) (result i64) (i64.const 0x0000ffff00001000))';
    const result = await callWasm(abiModule(body));
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_abi_violation: .*outside memory/),
    });
  });

  it('reports a response that is not JSON as unavailable (wasm_abi_violation)', async () => {
    const body = `(data (i32.const 16) "not json")
      (func (export "reduce") (param i32 i32) (result i64) (i64.const 0x0000001000000008))`;
    const result = await callWasm(abiModule(body));
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_abi_violation: .*not UTF-8 JSON/),
    });
  });

  it('reports a handler with the wrong result type as unavailable (wasm_abi_violation)', async () => {
    const result = await callWasm(
      abiModule('(func (export "reduce") (param i32 i32) (result i32) (i32.const 0))'),
    );
    expect(result).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^wasm_abi_violation: .*i64/),
    });
  });
});
