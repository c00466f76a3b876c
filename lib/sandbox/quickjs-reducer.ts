/**
 * Runs a JavaScript reducer in QuickJS under the deterministic execution policy: a fresh
 * runtime and context per call, the deterministic prelude evaluated before the reducer's
 * module, no host function reachable, CPU bounded by an interrupt deadline, memory bounded by
 * the maximum of the QuickJS module's WebAssembly memory, stack by the runtime's stack limit.
 * The QuickJS WebAssembly module is loaded once per process (per memory limit).
 * docs/contracts/reducer.md, "Validation" (last paragraph);
 * docs/contracts/reducer.md, "The deterministic execution policy".
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
import { WASM_PAGE_BYTES, wasmApi } from './wasm-api.ts';

/**
 * Bytes of the QuickJS module's own memory before any reducer allocates (its initial memory:
 * static data, C stack, allocator). The module's memory maximum is this plus `memoryBytes`.
 */
const QUICKJS_BASE_BYTES = 16 * 1024 * 1024;

/**
 * One loaded QuickJS module with a capped memory. `allocationFailed` is set whenever the module
 * asked for more memory than the cap: the call in progress is then out of memory even if the
 * reducer caught the error (what it could allocate would depend on earlier calls' fragmentation).
 */
interface LoadedQuickJS {
  module: QuickJSWASMModule;
  allocationFailed: boolean;
}

/** Loaded modules by memory cap (a process normally has one host, hence one entry). */
const loaded = new Map<number, Promise<LoadedQuickJS>>();

/**
 * The process's QuickJS module for `memoryBytes`, loaded on first use with a WebAssembly memory
 * whose maximum is QUICKJS_BASE_BYTES + memoryBytes. QuickJS's own heap accounting cannot see
 * block sizes in its emscripten build, so this maximum is the memory bound that holds.
 * A failed load is retried on the next call.
 */
function loadQuickJS(memoryBytes: number): Promise<LoadedQuickJS> {
  const cached = loaded.get(memoryBytes);
  if (cached) return cached;
  const pages = (bytes: number) => Math.ceil(bytes / WASM_PAGE_BYTES);
  const memory = new wasmApi.Memory({
    initial: pages(QUICKJS_BASE_BYTES),
    maximum: pages(QUICKJS_BASE_BYTES) + pages(memoryBytes),
  });
  const growth = { allocationFailed: false };
  const grow = memory.grow.bind(memory);
  memory.grow = (delta: number): number => {
    try {
      return grow(delta);
    } catch (error) {
      growth.allocationFailed = true;
      throw error;
    }
  };
  // Emscripten's own prints (an abort message) are dropped: the abort also surfaces as the
  // RuntimeError that makes the call a sandbox_fault, and that carries the same text.
  const emscriptenModule = { wasmMemory: memory, print: () => undefined, printErr: () => undefined };
  const variant = newVariant(RELEASE_SYNC, { wasmMemory: memory, emscriptenModule });
  const promise = newQuickJSWASMModule(variant).then(
    (module): LoadedQuickJS => Object.assign(growth, { module }),
  );
  promise.catch(() => {
    if (loaded.get(memoryBytes) === promise) loaded.delete(memoryBytes);
  });
  loaded.set(memoryBytes, promise);
  return promise;
}

/**
 * Drops every cached QuickJS module so the next call loads a fresh one. Called after a module
 * itself failed (a host stack overflow inside QuickJS, an emscripten abort), whose state can no
 * longer be trusted.
 */
export function resetQuickJS(): void {
  loaded.clear();
}

/**
 * Calls `handler` of the ES module `source` with the request `requestJson` (a JSON text).
 * Returns `answered` with the parsed response; `threw` when the handler threw (code = the
 * error's string `code`, else `reducer_threw`; message = `Name: message`, or the message alone
 * for a plain Error), or when the response cannot be written as JSON; `unavailable` for a
 * module that does not load (`artifact_invalid`), a missing handler (`handler_missing`), a
 * timeout, an out-of-memory or stack overflow, a promise that never settles (`never_settled`)
 * and a fault of the sandbox itself (`sandbox_fault`, after which the module is reloaded).
 * Never throws.
 */
export async function runJsReducer(
  source: string,
  handler: string,
  requestJson: string,
  limits: SandboxLimits,
): Promise<SandboxOutcome> {
  flushDisposal();
  let quickjs: LoadedQuickJS;
  try {
    quickjs = await loadQuickJS(limits.memoryBytes);
  } catch (error) {
    return unavailable('sandbox_fault', `QuickJS did not load: ${errorText(error)}`);
  }
  try {
    flushDisposal();
    quickjs.allocationFailed = false;
    const outcome = runInFreshRuntime(quickjs.module, source, handler, requestJson, limits);
    if (quickjs.allocationFailed && outcome.kind !== 'unavailable') return outOfMemory(limits);
    return outcome;
  } catch (error) {
    resetQuickJS();
    return unavailable('sandbox_fault', errorText(error));
  }
}

/**
 * The previous call's runtime, context and handles, disposed after the answer went out (on the
 * next macrotask, or before the next call starts, whichever comes first): disposal (a full GC
 * of the runtime) stays off the answer path, and two reducer runtimes never coexist.
 */
let pendingDisposal: (() => void) | null = null;

function flushDisposal(): void {
  const dispose = pendingDisposal;
  pendingDisposal = null;
  if (!dispose) return;
  try {
    dispose();
  } catch {
    resetQuickJS();
  }
}

function disposeAfterAnswer(dispose: () => void): void {
  flushDisposal();
  pendingDisposal = dispose;
  setImmediate(flushDisposal);
}

function runInFreshRuntime(
  module: QuickJSWASMModule,
  source: string,
  handler: string,
  requestJson: string,
  limits: SandboxLimits,
): SandboxOutcome {
  const runtime = module.newRuntime();
  const handles: QuickJSHandle[] = [];
  let context: QuickJSContext | null = null;
  const dispose = (): void => {
    for (const handle of handles.reverse()) if (handle.alive) handle.dispose();
    context?.dispose();
    runtime.dispose();
  };
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(limits.stackBytes);
  const deadline = performance.now() + limits.timeoutMs;
  const clock = { interrupted: false };
  runtime.setInterruptHandler(() => {
    if (performance.now() <= deadline) return false;
    clock.interrupted = true;
    return true;
  });
  context = runtime.newContext();
  const outcome = callHandler(runtime, context, handles, { source, handler, requestJson, limits, clock });
  disposeAfterAnswer(dispose);
  return outcome;
}

interface Call {
  source: string;
  handler: string;
  requestJson: string;
  limits: SandboxLimits;
  clock: { interrupted: boolean };
}

function callHandler(
  runtime: QuickJSRuntime,
  context: QuickJSContext,
  handles: QuickJSHandle[],
  call: Call,
): SandboxOutcome {
  const keep = (handle: QuickJSHandle): QuickJSHandle => {
    handles.push(handle);
    return handle;
  };

  const prelude = context.evalCode(DETERMINISTIC_PRELUDE, 'raisin:prelude.js', { type: 'global' });
  if (prelude.error) {
    return unavailable(
      'sandbox_fault',
      `prelude failed: ${describeError(context, keep(prelude.error)).message}`,
    );
  }
  keep(prelude.value);
  // Captured before the reducer's code runs: a reducer replacing JSON changes neither what it
  // receives nor how its answer is written.
  const json = keep(context.getProp(context.global, 'JSON'));
  const parse = keep(context.getProp(json, 'parse'));
  const stringify = keep(context.getProp(json, 'stringify'));

  const loaded = context.evalCode(call.source, 'reducer.js', { type: 'module' });
  if (loaded.error) return loadFailure(call, describeError(context, keep(loaded.error)));
  const namespace = settle(runtime, context, keep(loaded.value), keep);
  if (namespace.kind === 'failed') return loadFailure(call, namespace.error);
  if (namespace.kind === 'pending') return unavailable('artifact_invalid', 'module evaluation never settled');

  const fn = keep(context.getProp(namespace.value, call.handler));
  if (context.typeof(fn) !== 'function') {
    return unavailable(
      'handler_missing',
      `the module exports no function named ${JSON.stringify(call.handler)}`,
    );
  }

  const parsed = context.callFunction(parse, json, keep(context.newString(call.requestJson)));
  if (parsed.error) {
    const thrown = describeError(context, keep(parsed.error));
    return (
      exhaustion(call, thrown) ?? unavailable('sandbox_fault', `the request did not parse: ${thrown.message}`)
    );
  }
  const called = context.callFunction(fn, context.undefined, keep(parsed.value));
  if (called.error) return runFailure(call, describeError(context, keep(called.error)));
  const result = settle(runtime, context, keep(called.value), keep);
  if (result.kind === 'failed') return runFailure(call, result.error);
  if (result.kind === 'pending') {
    return call.clock.interrupted
      ? timeout(call)
      : unavailable('never_settled', 'the handler returned a promise that never settled');
  }

  const encoded = context.callFunction(stringify, json, result.value);
  if (encoded.error) return runFailure(call, describeError(context, keep(encoded.error)));
  const text = keep(encoded.value);
  if (call.clock.interrupted) return timeout(call);
  if (context.typeof(text) !== 'string') return { kind: 'answered', response: null };
  try {
    return { kind: 'answered', response: JSON.parse(context.getString(text)) as unknown };
  } catch (error) {
    return unavailable('sandbox_fault', `the response JSON did not parse: ${errorText(error)}`);
  }
}

type Settled =
  | { kind: 'value'; value: QuickJSHandle }
  | { kind: 'failed'; error: Thrown }
  | { kind: 'pending' };

/** Resolves `handle` if it is a promise by running the runtime's pending jobs (deadline applies). */
function settle(
  runtime: QuickJSRuntime,
  context: QuickJSContext,
  handle: QuickJSHandle,
  keep: (handle: QuickJSHandle) => QuickJSHandle,
): Settled {
  let state = context.getPromiseState(handle);
  if (state.type === 'fulfilled' && state.notAPromise) return { kind: 'value', value: handle };
  if (state.type === 'pending') {
    const jobs = runtime.executePendingJobs();
    if (jobs.error) return { kind: 'failed', error: describeError(context, keep(jobs.error)) };
    state = context.getPromiseState(handle);
  }
  if (state.type === 'fulfilled') return { kind: 'value', value: keep(state.value) };
  if (state.type === 'rejected') return { kind: 'failed', error: describeError(context, keep(state.error)) };
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
