/**
 * Runs WebAssembly reducer calls in one worker thread with a wall-clock bound. WebAssembly
 * cannot be interrupted from the thread it runs on, so the host runs it on another thread and,
 * when the deadline passes, terminates that thread (V8 stops the running code) and starts a new
 * one for the next call. Calls are serialized: the deadline of a call starts when the worker
 * receives it, not while it waits its turn. DESIGN section 9 ("CPU and memory limits").
 */
import { Worker } from 'node:worker_threads';
import { type SandboxOutcome, unavailable } from './limits.ts';
import type { CompiledModule } from './wasm-api.ts';
import { WASM_WORKER_SOURCE } from './wasm-worker-source.ts';

/** The UTF-8 bytes the module answered, or why it could not answer. */
export type WasmCallResult =
  | { kind: 'output'; bytes: Uint8Array }
  | (SandboxOutcome & { kind: 'unavailable' });

export interface WasmCall {
  module: CompiledModule;
  handler: string;
  /** UTF-8 request bytes; transferred to the worker (the caller must not reuse the buffer). */
  request: Uint8Array;
  timeoutMs: number;
}

export interface WasmRunner {
  /** Runs one call. Never throws: every failure comes back as `unavailable`. */
  run(call: WasmCall): Promise<WasmCallResult>;
  /** Terminates the worker; a later `run` starts a new one. */
  close(): Promise<void>;
}

/** How long a new worker may take to start before the call is `sandbox_fault`, in ms. */
const WORKER_START_MS = 10_000;

interface Reply {
  id?: number;
  ready?: boolean;
  kind?: 'output' | 'unavailable';
  bytes?: Uint8Array;
  reason?: string;
}

/** Creates a runner; the worker thread starts on the first call and never holds the process open. */
export function createWasmRunner(): WasmRunner {
  let worker: Promise<Worker> | null = null;
  let tail: Promise<unknown> = Promise.resolve();
  let nextId = 1;

  const discard = async (): Promise<void> => {
    const current = worker;
    worker = null;
    if (current) await current.then((w) => w.terminate()).catch(() => undefined);
  };

  const start = (): Promise<Worker> => {
    worker ??= new Promise<Worker>((resolve, reject) => {
      const w = new Worker(WASM_WORKER_SOURCE, { eval: true });
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
    });
    const started = worker;
    started.catch(() => {
      if (worker === started) worker = null;
    });
    return started;
  };

  const execute = async (call: WasmCall): Promise<WasmCallResult> => {
    let w: Worker;
    try {
      w = await start();
    } catch (error) {
      return unavailable('sandbox_fault', `the WebAssembly worker did not start: ${String(error)}`);
    }
    const id = nextId++;
    return new Promise<WasmCallResult>((resolve) => {
      const finish = (result: WasmCallResult): void => {
        clearTimeout(timer);
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
        resolve(result);
      };
      const onMessage = (reply: Reply): void => {
        if (reply.id !== id) return;
        if (reply.kind === 'output' && reply.bytes instanceof Uint8Array)
          finish({ kind: 'output', bytes: reply.bytes });
        else finish({ kind: 'unavailable', reason: reply.reason ?? 'sandbox_fault: malformed worker reply' });
      };
      const onError = (error: Error): void => {
        void discard();
        const oom = (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
        finish(unavailable(oom ? 'out_of_memory' : 'sandbox_fault', String(error)));
      };
      const onExit = (code: number): void => {
        void discard();
        finish(unavailable('sandbox_fault', `the WebAssembly worker exited with code ${code}`));
      };
      const timer = setTimeout(() => {
        void discard();
        finish(unavailable('timeout', `the reducer ran past ${call.timeoutMs} ms`));
      }, call.timeoutMs);
      w.on('message', onMessage);
      w.once('error', onError);
      w.once('exit', onExit);
      const whole =
        call.request.byteOffset === 0 && call.request.byteLength === call.request.buffer.byteLength;
      const request = whole ? call.request : call.request.slice();
      w.postMessage({ id, module: call.module, handler: call.handler, request }, [
        request.buffer as ArrayBuffer,
      ]);
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
