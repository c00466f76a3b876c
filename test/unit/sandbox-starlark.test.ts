/**
 * Starlark reducers: the `.star` artifact kind run by go.starlark.net (built for js/wasm) behind
 * Go's wasm_exec.js glue in a worker. JSON maps to Starlark values and back exactly; no host
 * call, no clock, no randomness; steps, memory, stack and time are bounded, and every bound
 * makes the call `unavailable`; the reducer's own errors are `threw`, as for JavaScript.
 * docs/contracts/reducer.md and "Validation"; docs/contracts/tool-result.md.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { ReducerCallResult } from '../../lib/engine/ports.ts';
import {
  createSandboxReducerHost,
  hashArtifactBytes,
  InMemoryFunctionRegistry,
} from '../../lib/sandbox/index.ts';
import { reducerRequest, runStarted } from '../fixtures/reducers/requests.ts';

const registry = new InMemoryFunctionRegistry();
const host = createSandboxReducerHost({ registry, limits: { timeoutMs: 5_000, steps: 200_000 } });
afterAll(() => host.close());

/** A handler that loops past any step budget and any deadline of a test. */
const SPIN = `def reduce(request):
    n = 0
    for i in range(1 << 40):
        n += 1
    return n
`;

let counter = 0;
/** Registers `source` at a new path and calls `handler` (default reduce) with `request`. */
async function callStar(
  source: string,
  request: unknown = reducerRequest(runStarted()),
  handler?: string,
): Promise<ReducerCallResult> {
  counter += 1;
  const function_path = `/lib/test/star-${counter}`;
  await registry.put(function_path, 'star', new TextEncoder().encode(source));
  return host.reduce(handler === undefined ? { function_path } : { function_path, handler }, request);
}

/** The answered response, or a thrown error naming what came back instead. */
function responseOf(result: ReducerCallResult): unknown {
  if (result.kind !== 'answered') throw new Error(`not answered: ${JSON.stringify(result)}`);
  return result.response;
}

describe('Starlark reducer: the handler', () => {
  it('calls reduce with the request and answers its return value, pinned to the artifact hash', async () => {
    const source = `
def reduce(request):
    return {
        "contract": request["contract"],
        "state": {"seen": request["event"]["seq"]},
        "state_rev": request["state_rev"] + 1,
        "effects": [],
        "diagnostics": [],
        "refused": None,
    }
`;
    const result = await callStar(source, reducerRequest(runStarted(3), null, 4));
    expect(result).toEqual({
      kind: 'answered',
      artifact_hash: hashArtifactBytes(new TextEncoder().encode(source)),
      response: {
        contract: 'raisin.agent-run.reducer/1',
        state: { seen: 3 },
        state_rev: 5,
        effects: [],
        diagnostics: [],
        refused: null,
      },
    });
  });

  it('calls the handler the binding names', async () => {
    const source = 'def reduce(r):\n    return "default"\ndef triage(r):\n    return "triage"\n';
    expect(responseOf(await callStar(source, {}, 'triage'))).toBe('triage');
  });

  it('is unavailable (handler_missing) for an undefined name, a non-function, a function without parameters or a non-identifier', async () => {
    const source = 'NOT_A_FUNCTION = 3\ndef nothing():\n    return 1\ndef reduce(r):\n    return 1\n';
    const results = await Promise.all(
      ['absent', 'NOT_A_FUNCTION', 'nothing', 'reduce; x'].map((handler) => callStar(source, {}, handler)),
    );
    expect(results.map((r) => (r.kind === 'unavailable' ? r.reason.split(':')[0] : r.kind))).toEqual([
      'handler_missing',
      'handler_missing',
      'handler_missing',
      'handler_missing',
    ]);
  });

  it('loads the module once: its globals are frozen, so no call can leave state for the next', async () => {
    const source = `
SEEN = []
def reduce(request):
    SEEN.append(request)
    return len(SEEN)
def count(request):
    return len(SEEN)
`;
    counter += 1;
    const function_path = `/lib/test/star-${counter}`;
    await registry.put(function_path, 'star', new TextEncoder().encode(source));
    const appended = await host.reduce({ function_path }, {});
    const counted = await host.reduce({ function_path, handler: 'count' }, {});
    expect(appended).toEqual({
      kind: 'threw',
      code: 'reducer_threw',
      message: expect.stringContaining('frozen list'),
    });
    expect(responseOf(counted)).toBe(0);
  });
});

describe('Starlark reducer: JSON in and out', () => {
  const echo = 'def reduce(request):\n    return request\n';

  it("maps objects to dicts in canonical key order, and keeps a dict's insertion order on the way out", async () => {
    const keysIn = `
def reduce(request):
    return {"z": 1, "keys": list(request.keys()), "nested": list(request["m"].keys()), "a": 2}
`;
    const result = responseOf(await callStar(keysIn, { m: { b: 1, a: 2, é: 3, A: 4 }, c: 1, B: 2 }));
    expect(result).toEqual({ z: 1, keys: ['B', 'c', 'm'], nested: ['A', 'a', 'b', 'é'], a: 2 });
    expect(Object.keys(result as object)).toEqual(['z', 'keys', 'nested', 'a']);
  });

  it('maps lists, strings, bools and None to their Starlark types and back unchanged', async () => {
    const types = `
def reduce(request):
    return {k: [type(v), v] for k, v in request.items()}
`;
    const request = {
      list: [1, 'two', [3]],
      text: 'é "quoted" \\ back\nslash\u0001 ✓ 😀',
      yes: true,
      no: false,
      nothing: null,
      empty: {},
    };
    expect(responseOf(await callStar(types, request))).toEqual({
      empty: ['dict', {}],
      list: ['list', [1, 'two', [3]]],
      no: ['bool', false],
      nothing: ['NoneType', null],
      text: ['string', request.text],
      yes: ['bool', true],
    });
    expect(responseOf(await callStar(echo, request))).toEqual(request);
  });

  it('maps integral numbers to ints, of any size, and the others to floats', async () => {
    const numbers = `
def reduce(request):
    return [[type(v), str(v)] for v in request["n"]]
`;
    const n = [0, -7, 2 ** 53, 12345678901234567000, 0.5, -1.25e-7, 1e21];
    expect(responseOf(await callStar(numbers, { n }))).toEqual([
      ['int', '0'],
      ['int', '-7'],
      ['int', '9007199254740992'],
      ['int', '12345678901234567000'],
      ['float', '0.5'],
      ['float', '-1.25e-07'],
      ['float', '1e+21'],
    ]);
    expect(responseOf(await callStar(echo, { n }))).toEqual({ n });
  });

  it('answers big ints a double holds exactly, and refuses one the host would read back as another number', async () => {
    const big = `
def reduce(request):
    return {"pow": 1 << 60, "passed": request["x"], "neg": -(1 << 70)}
def off_by_one(request):
    return (1 << 60) + 1
def too_big(request):
    return 1 << 1100
`;
    expect(responseOf(await callStar(big, { x: 12345678901234567000 }))).toEqual({
      pow: 2 ** 60,
      passed: 12345678901234567000,
      neg: -(2 ** 70),
    });
    const offByOne = await callStar(big, {}, 'off_by_one');
    const tooBig = await callStar(big, {}, 'too_big');
    expect(offByOne).toEqual({
      kind: 'threw',
      code: 'reducer_threw',
      message: expect.stringContaining('1152921504606846977 would be read back as 1152921504606847000'),
    });
    expect(tooBig).toMatchObject({ kind: 'threw', message: expect.stringContaining('too large') });
  });

  it('writes tuples as arrays and floats the host reads back exactly', async () => {
    const out = 'def reduce(r):\n    return {"t": (1, "a"), "f": [0.1, 1e300, -0.0, 3.0]}\n';
    const result = responseOf(await callStar(out, {})) as { t: unknown; f: number[] };
    expect(result).toEqual({ t: [1, 'a'], f: [0.1, 1e300, -0, 3] });
  });

  it('refuses a response JSON cannot carry: a non-string key, a non-finite float, a function, a set, bytes that are not UTF-8', async () => {
    const bad = `
def key(r):
    return {1: "one"}
def nan(r):
    return float("nan")
def inf(r):
    return {"x": [float("inf")]}
def function(r):
    return key
def a_set(r):
    return set([1])
def bytes(r):
    return "\\xff"
`;
    const results = await Promise.all(
      ['key', 'nan', 'inf', 'function', 'a_set', 'bytes'].map((handler) => callStar(bad, {}, handler)),
    );
    for (const result of results) {
      expect(result).toMatchObject({
        kind: 'threw',
        code: 'reducer_threw',
        message: expect.stringMatching(/^the response cannot be written as JSON: /),
      });
    }
    expect(results.map((r) => (r.kind === 'threw' ? r.message : '')).join('\n')).toMatch(
      /dict key is int[\s\S]*nan[\s\S]*at key "x": at index 0: the float \+inf[\s\S]*function[\s\S]*set[\s\S]*not UTF-8/,
    );
  });
});

describe('Starlark reducer: the deterministic policy', () => {
  it('provides json.star and refuses to load any other module (artifact_invalid)', async () => {
    const withJson =
      'load("json.star", "json")\ndef reduce(r):\n    return json.encode({"b": 1, "a": [True]})\n';
    const withTime = 'load("time.star", "time")\ndef reduce(r):\n    return time.now()\n';
    expect(responseOf(await callStar(withJson, {}))).toBe('{"a":[true],"b":1}');
    expect(await callStar(withTime, {})).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_invalid: .*the sandbox provides no module "time.star"/),
    });
  });

  it('has no host builtins: naming one (fetch, time, random) fails the module before it runs (artifact_invalid)', async () => {
    const results = await Promise.all(
      ['fetch("https://example.com")', 'time.now()', 'random.random()'].map((expression) =>
        callStar(`def reduce(r):\n    return ${expression}\n`, {}),
      ),
    );
    expect(results.map((r) => (r.kind === 'unavailable' ? r.reason : r.kind))).toEqual([
      expect.stringMatching(/^artifact_invalid: reducer.star:2:12: undefined: fetch/),
      expect.stringMatching(/^artifact_invalid: .*undefined: time/),
      expect.stringMatching(/^artifact_invalid: .*undefined: random/),
    ]);
  });

  it('answers the same request identically on every call, print() going nowhere', async () => {
    const source = `
def reduce(request):
    print("hello from the reducer")
    return {"h": hash("abc"), "keys": sorted({"b": 1, "a": 2, "c": 3}.keys()), "id": "%d" % len(dir(request))}
`;
    const first = await callStar(source, { x: 1 });
    const second = await host.reduce({ function_path: `/lib/test/star-${counter}` }, { x: 1 });
    expect(first.kind).toBe('answered');
    expect(second).toEqual(first);
  });

  it('fails a syntax error or a module that fails at load time (artifact_invalid)', async () => {
    const syntax = await callStar('def reduce(r)\n    return 1\n', {});
    const failing = await callStar('fail("not today")\ndef reduce(r):\n    return 1\n', {});
    expect(syntax).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_invalid: reducer.star:2:1: got newline, want ':'/),
    });
    expect(failing).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^artifact_invalid: .*not today/),
    });
  });

  it('refuses an artifact that is not UTF-8 (artifact_invalid)', async () => {
    counter += 1;
    const function_path = `/lib/test/star-${counter}`;
    await registry.put(function_path, 'star', new Uint8Array([0x64, 0x65, 0x66, 0xff]));
    expect(await host.reduce({ function_path }, {})).toEqual({
      kind: 'unavailable',
      reason: 'artifact_invalid: the Starlark artifact is not UTF-8',
    });
  });
});

describe('Starlark reducer: errors and bounds', () => {
  it("reports fail() and a runtime error of the reducer's own code as threw (reducer_threw), like a JavaScript throw", async () => {
    const source = `
def reduce(request):
    fail("cannot tally", request["n"])
def missing_key(request):
    return request["absent"]
def missing_method(request):
    return request.tally()
`;
    const results = await Promise.all(
      ['reduce', 'missing_key', 'missing_method'].map((handler) => callStar(source, { n: 7 }, handler)),
    );
    expect(results).toEqual([
      { kind: 'threw', code: 'reducer_threw', message: 'fail: cannot tally 7' },
      { kind: 'threw', code: 'reducer_threw', message: 'key "absent" not in dict' },
      { kind: 'threw', code: 'reducer_threw', message: 'dict has no .tally field or method' },
    ]);
  });

  it('stops a loop at the step budget, at the same step every time (steps_exhausted), and keeps serving', async () => {
    const source = `
${SPIN}def quick(request):
    return "still here"
`;
    const first = await callStar(source, {});
    const again = await host.reduce({ function_path: `/lib/test/star-${counter}` }, {});
    const quick = await host.reduce({ function_path: `/lib/test/star-${counter}`, handler: 'quick' }, {});
    expect(first).toEqual({
      kind: 'unavailable',
      reason: 'steps_exhausted: the reducer ran past 200000 steps',
    });
    expect(again).toEqual(first);
    expect(responseOf(quick)).toBe('still here');
  });

  it('bounds the steps of loading the module too (steps_exhausted)', async () => {
    const source = `
def spin():
    n = 0
    for i in range(1 << 40):
        n += 1
    return n
N = spin()
def reduce(request):
    return N
`;
    expect(await callStar(source, {})).toEqual({
      kind: 'unavailable',
      reason: 'steps_exhausted: loading the module ran past 200000 steps',
    });
  });

  it('stops a call that runs past the memory bound (out_of_memory); the next call starts a fresh runtime', async () => {
    const source = `
def reduce(request):
    chunk = "x" * (1 << 20)
    kept = []
    for i in range(1000):
        kept.append(chunk + str(i))
    return len(kept)
def small(request):
    return "fresh"
`;
    const bomb = await callStar(source, {});
    const next = await host.reduce({ function_path: `/lib/test/star-${counter}`, handler: 'small' }, {});
    expect(bomb).toEqual({ kind: 'unavailable', reason: expect.stringMatching(/^out_of_memory: /) });
    expect(responseOf(next)).toBe('fresh');
  });

  it('stops a value nested past the stack bound (stack_overflow)', async () => {
    const source = `
load("json.star", "json")
def reduce(request):
    return json.decode("[" * 100000 + "]" * 100000)
`;
    expect(await callStar(source, {})).toEqual({
      kind: 'unavailable',
      reason: expect.stringMatching(/^stack_overflow: .*262144-byte limit/),
    });
  });

  it('stops a call at the deadline when the step budget is larger (timeout), and the next call runs in a new worker', async () => {
    const slow = createSandboxReducerHost({ registry, limits: { timeoutMs: 300, steps: 1e15 } });
    try {
      const source = `
${SPIN}def quick(request):
    return "after the timeout"
`;
      counter += 1;
      const function_path = `/lib/test/star-${counter}`;
      await registry.put(function_path, 'star', new TextEncoder().encode(source));
      const spin = await slow.reduce({ function_path }, {});
      const next = await slow.reduce({ function_path, handler: 'quick' }, {});
      expect(spin).toEqual({ kind: 'unavailable', reason: 'timeout: the reducer ran past 300 ms' });
      expect(responseOf(next)).toBe('after the timeout');
    } finally {
      await slow.close();
    }
  });

  it('pauses on a changed artifact before running anything (changed)', async () => {
    const v1 = new TextEncoder().encode('def reduce(r):\n    return 1\n');
    const v2 = new TextEncoder().encode('def reduce(r):\n    return 2\n');
    await registry.put('/lib/test/star-pinned', 'star', v1);
    const pinned = { function_path: '/lib/test/star-pinned', artifact_hash: hashArtifactBytes(v1) };
    const before = await host.reduce(pinned, {});
    await registry.put('/lib/test/star-pinned', 'star', v2);
    const after = await host.reduce(pinned, {});
    expect(before).toMatchObject({ kind: 'answered', response: 1 });
    expect(after).toEqual({
      kind: 'changed',
      bound_hash: hashArtifactBytes(v1),
      found_hash: hashArtifactBytes(v2),
    });
  });
});
