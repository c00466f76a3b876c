/**
 * Runs Starlark reducer calls in one worker thread: the Starlark runtime (go.starlark.net built
 * for js/wasm, see starlark/README.md) is compiled once per process and memory bound, with
 * the memory's maximum patched to the bound, and started in the worker behind Go's own
 * wasm_exec.js glue with deterministic globals (starlark-worker-source.ts). Calls are
 * serialized; a call's deadline starts when the worker acknowledges it. When the deadline
 * passes the worker is terminated (V8 stops the running code, every cached instance goes with
 * it) and the next call starts a new one. DESIGN section 9 ("CPU and memory limits").
 */
import { Worker } from 'node:worker_threads';
import { MATH_RANDOM_SEED } from './deterministic-prelude.ts';
import { type SandboxLimits, type SandboxOutcome, truncate, unavailable } from './limits.ts';
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
/** How long a posted call may wait for the worker to take it (it may be starting a spare) in ms. */
const ACK_MS = 10_000;
/** Loaded Starlark instances a worker keeps (each is a Go runtime with its own memory). */
const MAX_INSTANCES = 4;

interface Reply {
  id?: number;
  ready?: boolean;
  started?: boolean;
  kind?: 'answered' | 'threw' | 'unavailable';
  bytes?: Uint8Array;
  message?: string;
  reason?: string;
}

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
  let worker: Promise<Worker> | null = null;
  let tail: Promise<unknown> = Promise.resolve();
  let nextId = 1;
  const argv = ['starlark-runtime', `-memory-limit=${limits.memoryBytes}`, `-max-stack=${limits.stackBytes}`];

  const discard = async (): Promise<void> => {
    const current = worker;
    worker = null;
    if (current) await current.then((w) => w.terminate()).catch(() => undefined);
  };

  const start = (): Promise<Worker> => {
    worker ??= compiledRuntime(limits.memoryBytes).then(
      (module) =>
        new Promise<Worker>((resolve, reject) => {
          const w = new Worker(STARLARK_WORKER_SOURCE, {
            eval: true,
            workerData: {
              module,
              glue: readStarlarkRuntime().glue,
              argv,
              seed: MATH_RANDOM_SEED,
              maxInstances: MAX_INSTANCES,
            },
          });
          w.unref();
          const timer = setTimeout(() => {
            reject(new Error(`the worker did not start within ${WORKER_START_MS} ms`));
            void w.terminate();
          }, WORKER_START_MS);
          const onReady = (reply: Reply): void => {
            if (!reply.ready) return;
            clearTimeout(timer);
            w.off('message', onReady);
            resolve(w);
          };
          w.on('message', onReady);
          w.once('error', (error) => {
            clearTimeout(timer);
            reject(error);
          });
        }),
    );
    const started = worker;
    started.catch(() => {
      if (worker === started) worker = null;
    });
    return started;
  };

  const execute = async (call: StarlarkCall): Promise<StarlarkCallResult> => {
    let w: Worker;
    try {
      w = await start();
    } catch (error) {
      return unavailable('sandbox_fault', `the Starlark worker did not start: ${String(error)}`);
    }
    const id = nextId++;
    return new Promise<StarlarkCallResult>((resolve) => {
      let timer = setTimeout(() => {
        void discard();
        finish(unavailable('sandbox_fault', `the Starlark worker did not take the call within ${ACK_MS} ms`));
      }, ACK_MS);
      const finish = (result: StarlarkCallResult): void => {
        clearTimeout(timer);
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
        resolve(result);
      };
      const onMessage = (reply: Reply): void => {
        if (reply.id !== id) return;
        if (reply.started) {
          clearTimeout(timer);
          timer = setTimeout(() => {
            void discard();
            finish(unavailable('timeout', `the reducer ran past ${limits.timeoutMs} ms`));
          }, limits.timeoutMs);
          return;
        }
        if (reply.kind === 'answered' && reply.bytes instanceof Uint8Array) {
          finish({ kind: 'output', bytes: reply.bytes });
        } else if (reply.kind === 'threw' && typeof reply.message === 'string') {
          finish({ kind: 'threw', code: 'reducer_threw', message: truncate(reply.message) });
        } else {
          finish({ kind: 'unavailable', reason: reply.reason ?? 'sandbox_fault: malformed worker reply' });
        }
      };
      const onError = (error: Error): void => {
        void discard();
        const oom = (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
        finish(unavailable(oom ? 'out_of_memory' : 'sandbox_fault', String(error)));
      };
      const onExit = (code: number): void => {
        void discard();
        finish(unavailable('sandbox_fault', `the Starlark worker exited with code ${code}`));
      };
      w.on('message', onMessage);
      w.once('error', onError);
      w.once('exit', onExit);
      w.postMessage({
        id,
        hash: call.hash,
        source: call.source,
        handler: call.handler,
        request: call.request,
        steps: limits.steps,
      });
    });
  };

  return {
    run(call) {
      const result = tail.then(() => execute(call));
      tail = result.catch(() => undefined);
      return result;
    },
    close: discard,
  };
}
