/**
 * Runs Starlark reducer calls in one worker thread (serial-worker.ts): the Starlark runtime
 * (go.starlark.net built for js/wasm, README "Starlark reducers") is compiled once per process
 * and memory bound, with the memory's maximum patched to the bound, and started in the worker
 * behind Go's own wasm_exec.js glue with deterministic globals (starlark-worker-source.ts).
 * Calls are serialized; a call's deadline starts when the worker takes it. When the deadline
 * passes the worker is terminated (every loaded instance goes with it) and the next call starts
 * a new one. docs/contracts/reducer.md, "The deterministic execution policy".
 */
import { MATH_RANDOM_SEED } from './deterministic-prelude.ts';
import { type SandboxLimits, type SandboxOutcome, truncate, unavailable } from './limits.ts';
import { createSerialWorker } from './serial-worker.ts';
import { readStarlarkRuntime } from './starlark/runtime-files.ts';
import { STARLARK_WORKER_SOURCE } from './starlark-worker-source.ts';
import { type CompiledModule, WASM_PAGE_BYTES, wasmApi } from './wasm-api.ts';
import { readMemoryLimits, withMemoryMaximum } from './wasm-module.ts';

/** What one Starlark call produced: the answer's UTF-8 JSON bytes, or a final outcome. */
export type StarlarkCallResult =
  | { kind: 'output'; bytes: Uint8Array }
  | (SandboxOutcome & { kind: 'unavailable' | 'threw' });

export interface StarlarkCall {
  /** The artifact's sha256: the worker keeps one loaded instance per hash. */
  hash: string;
  /** The .star source (UTF-8), loaded when the worker has no instance for `hash`. */
  source: Uint8Array;
  /** A Starlark identifier (the host checks it). */
  handler: string;
  /** The canonical JSON request (UTF-8). */
  request: Uint8Array;
}

export interface StarlarkRunner {
  /** Runs one call. Never throws: every failure comes back as `unavailable` (or `threw`). */
  run(call: StarlarkCall): Promise<StarlarkCallResult>;
  /** Terminates the worker; a later `run` starts a new one. */
  close(): Promise<void>;
}

/** How long a new worker may take to start (compile, instantiate one Go runtime) in ms. */
const WORKER_START_MS = 20_000;
/** Loaded Starlark instances a worker keeps (each is a Go runtime with its own memory). */
const MAX_INSTANCES = 4;

/** The compiled runtime per memory bound (a process normally has one host, hence one entry). */
const compiledRuntimes = new Map<number, Promise<CompiledModule>>();

/**
 * The Starlark runtime compiled with its memory maximum set to its own initial memory plus
 * `memoryBytes`. A failed compile is retried on the next call.
 */
function compiledRuntime(memoryBytes: number): Promise<CompiledModule> {
  const cached = compiledRuntimes.get(memoryBytes);
  if (cached) return cached;
  const promise = (async () => {
    const { wasm } = readStarlarkRuntime();
    const [memory] = readMemoryLimits(wasm) ?? [];
    if (memory === undefined) throw new Error('the Starlark runtime defines no memory');
    const maximum = memory.minimum + Math.ceil(memoryBytes / WASM_PAGE_BYTES);
    return wasmApi.compile(withMemoryMaximum(wasm, Math.min(maximum, 65536)));
  })();
  promise.catch(() => {
    if (compiledRuntimes.get(memoryBytes) === promise) compiledRuntimes.delete(memoryBytes);
  });
  compiledRuntimes.set(memoryBytes, promise);
  return promise;
}

/** Creates a runner for `limits`; the worker starts on the first call and never holds the process open. */
export function createStarlarkRunner(limits: Readonly<SandboxLimits>): StarlarkRunner {
  const argv = ['starlark-runtime', `-memory-limit=${limits.memoryBytes}`, `-max-stack=${limits.stackBytes}`];
  const worker = createSerialWorker({
    name: 'the Starlark worker',
    source: STARLARK_WORKER_SOURCE,
    startMs: WORKER_START_MS,
    workerData: async () => ({
      module: await compiledRuntime(limits.memoryBytes),
      glue: readStarlarkRuntime().glue,
      argv,
      seed: MATH_RANDOM_SEED,
      maxInstances: MAX_INSTANCES,
    }),
  });
  return {
    async run(call) {
      const { hash, source, handler, request } = call;
      const result = await worker.call(
        { hash, source, handler, request, steps: limits.steps },
        [],
        limits.timeoutMs,
      );
      if (result.kind === 'unavailable') return result;
      const { reply } = result;
      if (reply.kind === 'answered' && reply.bytes instanceof Uint8Array)
        return { kind: 'output', bytes: reply.bytes };
      if (reply.kind === 'threw' && typeof reply.message === 'string') {
        return { kind: 'threw', code: 'reducer_threw', message: truncate(reply.message) };
      }
      return typeof reply.reason === 'string'
        ? { kind: 'unavailable', reason: reply.reason }
        : unavailable('sandbox_fault', 'malformed worker reply');
    },
    close: () => worker.close(),
  };
}
