/**
 * Runs a JavaScript reducer in QuickJS under the deterministic execution policy: every call
 * starts from the same state (the deterministic prelude evaluated, then the reducer's module,
 * in a runtime and context of their own), no host function reachable, CPU bounded by an
 * interrupt deadline, memory bounded by the maximum of the QuickJS instance's WebAssembly memory,
 * stack by the runtime's stack limit. See docs/contracts/reducer.md, "Validation"
 * (last paragraph) and "The deterministic execution policy".
 *
 * A reducer is loaded once per artifact, handler and limits into a QuickJS instance of its own
 * (at most MAX_LOADED instances, least recently used dropped first); the instance's memory is
 * captured right after the load and written back after every call (lib/sandbox/quickjs-image.ts),
 * so no call sees what an earlier one did: module-level variables, globals, the Math.random
 * sequence, the allocator's state all start where the load left them.
 *
 * Convention (README, "JavaScript reducers"): the artifact is an ES module; the handler is the
 * named export the binding's `handler` selects (default `reduce`), called with the request
 * object and returning the response object (or a promise of it). The host parses the request
 * and writes the response with the JSON.parse/JSON.stringify captured before the module ran.
 */
import {
  newQuickJSWASMModule,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
  RELEASE_SYNC,
} from 'quickjs-emscripten';
import { DETERMINISTIC_PRELUDE } from './deterministic-prelude.ts';
import { type SandboxLimits, type SandboxOutcome, truncate, unavailable } from './limits.ts';
import { captureImage, type ImageLayout, type MemoryImage, probeLayout } from './quickjs-image.ts';
import { WASM_PAGE_BYTES, type WasmMemory, wasmApi } from './wasm-api.ts';

/**
 * Bytes of a QuickJS instance's own memory before any reducer allocates (its initial memory:
 * static data, C stack, allocator). The instance's memory maximum is this plus `memoryBytes`.
 */
const QUICKJS_BASE_BYTES = 16 * 1024 * 1024;

/** Reducers kept loaded (each holds a QuickJS instance: about 1-2 MiB resident plus its image). */
const MAX_LOADED = 8;

/**
 * One QuickJS instance with a capped memory. `allocationFailed` is set whenever the instance
 * asked for more memory than the cap: the call in progress is then out of memory even if the
 * reducer caught the error.
 */
interface QuickJSInstance {
  module: QuickJSWASMModule;
  memory: WasmMemory;
  allocationFailed: boolean;
}

/**
 * A new QuickJS instance whose memory maximum is QUICKJS_BASE_BYTES + memoryBytes. QuickJS's own
 * heap accounting cannot see block sizes in its emscripten build, so this maximum is the memory
 * bound that holds.
 */
async function newInstance(memoryBytes: number): Promise<QuickJSInstance> {
  const pages = (bytes: number) => Math.ceil(bytes / WASM_PAGE_BYTES);
  const memory = new wasmApi.Memory({
    initial: pages(QUICKJS_BASE_BYTES),
    maximum: pages(QUICKJS_BASE_BYTES) + pages(memoryBytes),
  });
  const instance = { memory, allocationFailed: false };
  const grow = memory.grow.bind(memory);
  memory.grow = (delta: number): number => {
    try {
      return grow(delta);
    } catch (error) {
      instance.allocationFailed = true;
      throw error;
    }
  };
  // Emscripten's own prints (an abort message) are dropped: the abort also surfaces as the
  // RuntimeError that makes the call a sandbox_fault, and that carries the same text.
  const emscriptenModule = { wasmMemory: memory, print: () => undefined, printErr: () => undefined };
  const variant = newVariant(RELEASE_SYNC, { wasmMemory: memory, emscriptenModule });
  const module = await newQuickJSWASMModule(variant);
  return Object.assign(instance, { module });
}

/** The layout of this QuickJS build, probed once per process on a throwaway instance. */
let layout: Promise<ImageLayout | null> | undefined;

function imageLayout(): Promise<ImageLayout | null> {
  layout ??= newInstance(QUICKJS_BASE_BYTES).then(
    (probe) => probeLayout(probe.module, probe.memory),
    () => null,
  );
  return layout;
}

/** A reducer loaded into its own instance, with the image its every call starts from. */
interface LoadedReducer {
  instance: QuickJSInstance;
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  handler: QuickJSHandle;
  json: QuickJSHandle;
  parse: QuickJSHandle;
  stringify: QuickJSHandle;
  clock: Clock;
  image: MemoryImage;
}

interface Clock {
  deadline: number;
  interrupted: boolean;
}

/**
 * Loaded reducers by source (the same string object every call for one artifact, so its hash is
 * computed once), then by handler and limits. Map order is recency of use.
 */
const loadedReducers = new Map<string, Map<string, LoadedReducer>>();

function variantKey(handler: string, limits: SandboxLimits): string {
  return `${handler}\u0000${limits.memoryBytes}\u0000${limits.stackBytes}`;
}

function takeLoaded(source: string, key: string): LoadedReducer | undefined {
  const variants = loadedReducers.get(source);
  if (variants === undefined) return undefined;
  loadedReducers.delete(source);
  loadedReducers.set(source, variants);
  return variants.get(key);
}

function keepLoaded(source: string, key: string, reducer: LoadedReducer): void {
  const variants = loadedReducers.get(source) ?? new Map<string, LoadedReducer>();
  variants.set(key, reducer);
  loadedReducers.delete(source);
  loadedReducers.set(source, variants);
  let count = 0;
  for (const each of loadedReducers.values()) count += each.size;
  for (const [oldest, each] of loadedReducers) {
    if (count <= MAX_LOADED) break;
    loadedReducers.delete(oldest);
    count -= each.size;
  }
}

function dropLoaded(source: string, key: string): void {
  loadedReducers.get(source)?.delete(key);
}

/**
 * Calls `handler` of the ES module `source` with the request `requestJson` (a JSON text).
 * Returns `answered` with the parsed response; `threw` when the handler threw (code = the
 * error's string `code`, else `reducer_threw`; message = `Name: message`, or the message alone
 * for a plain Error), or when the response cannot be written as JSON; `unavailable` for a
 * module that does not load (`artifact_invalid`), a missing handler (`handler_missing`), a
 * timeout, an out-of-memory or stack overflow, a promise that never settles (`never_settled`)
 * and a fault of the sandbox itself (`sandbox_fault`, after which the reducer is loaded again).
 * Never throws.
 */
export async function runJsReducer(
  source: string,
  handler: string,
  requestJson: string,
  limits: SandboxLimits,
): Promise<SandboxOutcome> {
  const key = variantKey(handler, limits);
  let reducer = takeLoaded(source, key);
  if (reducer === undefined) {
    const loaded = await loadReducer(source, handler, limits);
    if ('kind' in loaded) return loaded;
    reducer = loaded;
    keepLoaded(source, key, reducer);
  }
  const { instance, image } = reducer;
  reducer.clock.deadline = performance.now() + limits.timeoutMs;
  reducer.clock.interrupted = false;
  instance.allocationFailed = false;
  let outcome: SandboxOutcome;
  try {
    outcome = callLoaded(reducer, requestJson, limits);
  } catch (error) {
    dropLoaded(source, key);
    return unavailable('sandbox_fault', errorText(error));
  }
  if (!image.restore()) dropLoaded(source, key);
  if (instance.allocationFailed && outcome.kind !== 'unavailable') return outOfMemory(limits);
  return outcome;
}

/**
 * Loads `source` into a new instance: the prelude, the module (settled), the handler looked up,
 * JSON.parse/stringify captured; then the image is taken. The load runs under the call's limits
 * (its deadline included); an outcome when it fails.
 */
async function loadReducer(
  source: string,
  handler: string,
  limits: SandboxLimits,
): Promise<LoadedReducer | SandboxOutcome> {
  let instance: QuickJSInstance;
  let found: ImageLayout | null;
  try {
    [instance, found] = await Promise.all([newInstance(limits.memoryBytes), imageLayout()]);
  } catch (error) {
    return unavailable('sandbox_fault', `QuickJS did not load: ${errorText(error)}`);
  }
  try {
    const runtime = instance.module.newRuntime();
    runtime.setMemoryLimit(limits.memoryBytes);
    runtime.setMaxStackSize(limits.stackBytes);
    const clock: Clock = { deadline: performance.now() + limits.timeoutMs, interrupted: false };
    runtime.setInterruptHandler(() => {
      if (performance.now() <= clock.deadline) return false;
      clock.interrupted = true;
      return true;
    });
    const context = runtime.newContext();
    void context.global;
    const parts = loadModule(runtime, context, { source, handler, limits, clock });
    if ('kind' in parts) return parts;
    if (instance.allocationFailed) return outOfMemory(limits);
    return { instance, runtime, context, clock, ...parts, image: captureImage(instance.memory, found) };
  } catch (error) {
    return unavailable('sandbox_fault', errorText(error));
  }
}

interface Load {
  source: string;
  handler: string;
  limits: SandboxLimits;
  clock: Clock;
}

type LoadedParts = Pick<LoadedReducer, 'handler' | 'json' | 'parse' | 'stringify'>;

function loadModule(
  runtime: QuickJSRuntime,
  context: QuickJSContext,
  load: Load,
): LoadedParts | SandboxOutcome {
  const prelude = context.evalCode(DETERMINISTIC_PRELUDE, 'raisin:prelude.js', { type: 'global' });
  if (prelude.error) {
    return unavailable('sandbox_fault', `prelude failed: ${describeError(context, prelude.error).message}`);
  }
  // Captured before the reducer's code runs: a reducer replacing JSON changes neither what it
  // receives nor how its answer is written.
  const json = context.getProp(context.global, 'JSON');
  const parse = context.getProp(json, 'parse');
  const stringify = context.getProp(json, 'stringify');

  const loaded = context.evalCode(load.source, 'reducer.js', { type: 'module' });
  if (loaded.error) return loadFailure(load, describeError(context, loaded.error));
  const namespace = settle(runtime, context, loaded.value);
  if (namespace.kind === 'failed') return loadFailure(load, namespace.error);
  if (namespace.kind === 'pending') return unavailable('artifact_invalid', 'module evaluation never settled');

  const handler = context.getProp(namespace.value, load.handler);
  if (context.typeof(handler) !== 'function') {
    return unavailable(
      'handler_missing',
      `the module exports no function named ${JSON.stringify(load.handler)}`,
    );
  }
  return { handler, json, parse, stringify };
}

/**
 * One call of a loaded reducer. Handles made here are never disposed: writing the image back
 * frees all of them at once.
 */
function callLoaded(reducer: LoadedReducer, requestJson: string, limits: SandboxLimits): SandboxOutcome {
  const { runtime, context, json, clock } = reducer;
  const call = { limits, clock };
  const parsed = context.callFunction(reducer.parse, json, context.newString(requestJson));
  if (parsed.error) {
    const thrown = describeError(context, parsed.error);
    return (
      exhaustion(call, thrown) ?? unavailable('sandbox_fault', `the request did not parse: ${thrown.message}`)
    );
  }
  const called = context.callFunction(reducer.handler, context.undefined, parsed.value);
  if (called.error) return runFailure(call, describeError(context, called.error));
  const result = settle(runtime, context, called.value);
  if (result.kind === 'failed') return runFailure(call, result.error);
  if (result.kind === 'pending') {
    return clock.interrupted
      ? timeout(call)
      : unavailable('never_settled', 'the handler returned a promise that never settled');
  }

  const encoded = context.callFunction(reducer.stringify, json, result.value);
  if (encoded.error) return runFailure(call, describeError(context, encoded.error));
  const text = encoded.value;
  if (clock.interrupted) return timeout(call);
  if (context.typeof(text) !== 'string') return { kind: 'answered', response: null };
  try {
    return { kind: 'answered', response: JSON.parse(context.getString(text)) as unknown };
  } catch (error) {
    return unavailable('sandbox_fault', `the response JSON did not parse: ${errorText(error)}`);
  }
}

/** What the exhaustion checks need of a call or a load. */
interface Call {
  limits: SandboxLimits;
  clock: Clock;
}

type Settled =
  | { kind: 'value'; value: QuickJSHandle }
  | { kind: 'failed'; error: Thrown }
  | { kind: 'pending' };

/** Resolves `handle` if it is a promise by running the runtime's pending jobs (deadline applies). */
function settle(runtime: QuickJSRuntime, context: QuickJSContext, handle: QuickJSHandle): Settled {
  let state = context.getPromiseState(handle);
  if (state.type === 'fulfilled' && state.notAPromise) return { kind: 'value', value: handle };
  if (state.type === 'pending') {
    const jobs = runtime.executePendingJobs();
    if (jobs.error) return { kind: 'failed', error: describeError(context, jobs.error) };
    state = context.getPromiseState(handle);
  }
  if (state.type === 'fulfilled') return { kind: 'value', value: state.value };
  if (state.type === 'rejected') return { kind: 'failed', error: describeError(context, state.error) };
  return { kind: 'pending' };
}

/** An error as read out of QuickJS. */
interface Thrown {
  name: string;
  message: string;
  code: string | null;
}

/**
 * Reads name, message and code of a thrown value. Property reads may run the reducer's getters
 * (still under the deadline); a read that fails counts as absent.
 */
function describeError(context: QuickJSContext, handle: QuickJSHandle): Thrown {
  const type = context.typeof(handle);
  if (type !== 'object' && type !== 'function')
    return { name: 'Thrown', message: dumpText(context, handle), code: null };
  const read = (key: string): string | undefined => {
    try {
      const value = context.getProp(handle, key);
      try {
        return context.typeof(value) === 'string' ? context.getString(value) : undefined;
      } finally {
        value.dispose();
      }
    } catch {
      return undefined;
    }
  };
  const code = read('code');
  return {
    name: read('name') ?? 'Error',
    message: read('message') ?? dumpText(context, handle),
    code: code !== undefined && code.length > 0 ? code : null,
  };
}

function dumpText(context: QuickJSContext, handle: QuickJSHandle): string {
  try {
    const value: unknown = context.dump(handle);
    return typeof value === 'string' ? value : safeJson(value);
  } catch (error) {
    return `[unreadable: ${errorText(error)}]`;
  }
}

/** Resource exhaustion reported by QuickJS, whatever the error's name: `null` when it is not one. */
function exhaustion(call: Call, thrown: Thrown): SandboxOutcome | null {
  if (call.clock.interrupted) return timeout(call);
  if (thrown.message === 'out of memory') return outOfMemory(call.limits);
  if (thrown.message === 'stack overflow') {
    return unavailable('stack_overflow', `the reducer exceeded a ${call.limits.stackBytes}-byte stack`);
  }
  return null;
}

function outOfMemory(limits: SandboxLimits): SandboxOutcome {
  return unavailable('out_of_memory', `the reducer exceeded ${limits.memoryBytes} bytes`);
}

function timeout(call: Call): SandboxOutcome {
  return unavailable('timeout', `the reducer ran past ${call.limits.timeoutMs} ms`);
}

/** A module that did not evaluate: the artifact is unusable until it is redeployed. */
function loadFailure(call: Call, thrown: Thrown): SandboxOutcome {
  return exhaustion(call, thrown) ?? unavailable('artifact_invalid', formatThrown(thrown));
}

/** A handler that failed: exhaustion makes the reducer unavailable; anything else it threw. */
function runFailure(call: Call, thrown: Thrown): SandboxOutcome {
  return (
    exhaustion(call, thrown) ?? {
      kind: 'threw',
      code: thrown.code ?? 'reducer_threw',
      message: truncate(formatThrown(thrown)),
    }
  );
}

function formatThrown(thrown: Thrown): string {
  return thrown.name === 'Error' || thrown.name === 'Thrown'
    ? thrown.message
    : `${thrown.name}: ${thrown.message}`;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
