/**
 * Runs WebAssembly reducer calls in one worker thread with a wall-clock bound (serial-worker.ts):
 * WebAssembly cannot be interrupted from the thread it runs on, so when the deadline passes the
 * worker is terminated and the next call starts a new one. Calls are serialized; the deadline
 * of a call starts when the worker takes it. docs/contracts/reducer.md, "The deterministic
 * execution policy".
 */
import { unavailable } from './limits.ts';
import { createSerialWorker } from './serial-worker.ts';
import type { CompiledModule } from './wasm-api.ts';
import { WASM_WORKER_SOURCE } from './wasm-worker-source.ts';

/** The UTF-8 bytes the module answered, or why it could not answer. */
export type WasmCallResult = { kind: 'output'; bytes: Uint8Array } | { kind: 'unavailable'; reason: string };

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

/** Creates a runner; the worker thread starts on the first call and never holds the process open. */
export function createWasmRunner(): WasmRunner {
  const worker = createSerialWorker({
    name: 'the WebAssembly worker',
    source: WASM_WORKER_SOURCE,
    startMs: WORKER_START_MS,
  });
  return {
    async run(call) {
      const whole =
        call.request.byteOffset === 0 && call.request.byteLength === call.request.buffer.byteLength;
      const request = whole ? call.request : call.request.slice();
      const result = await worker.call(
        { module: call.module, handler: call.handler, request },
        [request.buffer as ArrayBuffer],
        call.timeoutMs,
      );
      if (result.kind === 'unavailable') return result;
      const { reply } = result;
      if (reply.kind === 'output' && reply.bytes instanceof Uint8Array)
        return { kind: 'output', bytes: reply.bytes };
      return typeof reply.reason === 'string'
        ? { kind: 'unavailable', reason: reply.reason }
        : unavailable('sandbox_fault', 'malformed worker reply');
    },
    close: () => worker.close(),
  };
}
