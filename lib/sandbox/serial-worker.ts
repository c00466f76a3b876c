/**
 * One worker thread that takes calls one at a time under a wall-clock deadline: the part the
 * WebAssembly and Starlark runners share. Code running in WebAssembly cannot be interrupted on
 * its own thread, so a call runs on this one and, when its deadline passes, the host terminates
 * the thread (V8 stops the running code) and the next call starts a new one.
 *
 * Protocol with the worker source: it posts `{ready: true}` once it can take calls; for every
 * message `{id, ...}` it posts `{id, started: true}` when it takes the call (the deadline starts
 * there, not while the call waited its turn or the worker was busy between calls), then one
 * reply `{id, ...}`. docs/contracts/reducer.md, "The deterministic execution policy".
 */
import { Worker } from 'node:worker_threads';
import { type SandboxOutcome, unavailable } from './limits.ts';

/** A worker's reply to one call: its own fields, besides the id. */
export type WorkerReply = Record<string, unknown>;

/** A reply, or why there is none (`timeout`, `out_of_memory`, `sandbox_fault`). */
export type WorkerCallResult =
  | { kind: 'reply'; reply: WorkerReply }
  | (SandboxOutcome & { kind: 'unavailable' });

export interface SerialWorkerOptions {
  /** What the worker runs: a name for messages ("the Starlark worker"), its source and its data. */
  name: string;
  source: string;
  /** Computed when a worker starts (each start: after a timeout the next call starts a new one). */
  workerData?: () => Promise<unknown>;
  /** How long a new worker may take to post `ready`, in ms. */
  startMs: number;
}

export interface SerialWorker {
  /**
   * Posts `message` (with `id` added; `transfer` moves its buffers) once every earlier call has
   * ended, and waits for the reply at most `timeoutMs` after the worker took the call. Never
   * throws: a worker that does not start, does not take the call within ACK_MS, exits, fails
   * or runs past the deadline comes back `unavailable` and is terminated.
   */
  call(
    message: Record<string, unknown>,
    transfer: ArrayBuffer[],
    timeoutMs: number,
  ): Promise<WorkerCallResult>;
  /** Terminates the worker; a later call starts a new one. */
  close(): Promise<void>;
}

/** How long a posted call may wait for the worker to take it (it may be finishing other work), in ms. */
const ACK_MS = 10_000;

/** Creates the worker handle; the thread starts on the first call and never holds the process open. */
export function createSerialWorker(options: SerialWorkerOptions): SerialWorker {
  let worker: Promise<Worker> | null = null;
  let tail: Promise<unknown> = Promise.resolve();
  let nextId = 1;

  const discard = async (): Promise<void> => {
    const current = worker;
    worker = null;
    if (current) await current.then((w) => w.terminate()).catch(() => undefined);
  };

  const launch = async (): Promise<Worker> => {
    const workerData = await options.workerData?.();
    return new Promise<Worker>((resolve, reject) => {
      const w = new Worker(options.source, { eval: true, workerData });
      w.unref();
      const timer = setTimeout(() => {
        reject(new Error(`the worker did not start within ${options.startMs} ms`));
        void w.terminate();
      }, options.startMs);
      const onReady = (reply: WorkerReply): void => {
        if (reply.ready !== true) return;
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
  };

  const start = (): Promise<Worker> => {
    worker ??= launch();
    const started = worker;
    started.catch(() => {
      if (worker === started) worker = null;
    });
    return started;
  };

  const execute = async (
    message: Record<string, unknown>,
    transfer: ArrayBuffer[],
    timeoutMs: number,
  ): Promise<WorkerCallResult> => {
    let w: Worker;
    try {
      w = await start();
    } catch (error) {
      return unavailable('sandbox_fault', `${options.name} did not start: ${String(error)}`);
    }
    const id = nextId++;
    return new Promise<WorkerCallResult>((resolve) => {
      const fail = (result: SandboxOutcome & { kind: 'unavailable' }): void => {
        void discard();
        finish(result);
      };
      let timer = setTimeout(
        () => fail(unavailable('sandbox_fault', `${options.name} did not take the call within ${ACK_MS} ms`)),
        ACK_MS,
      );
      const finish = (result: WorkerCallResult): void => {
        clearTimeout(timer);
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
        resolve(result);
      };
      const onMessage = (reply: WorkerReply): void => {
        if (reply.id !== id) return;
        if (reply.started !== true) {
          finish({ kind: 'reply', reply });
          return;
        }
        clearTimeout(timer);
        timer = setTimeout(
          () => fail(unavailable('timeout', `the reducer ran past ${timeoutMs} ms`)),
          timeoutMs,
        );
      };
      const onError = (error: Error): void => {
        const oom = (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
        fail(unavailable(oom ? 'out_of_memory' : 'sandbox_fault', String(error)));
      };
      const onExit = (code: number): void => {
        fail(unavailable('sandbox_fault', `${options.name} exited with code ${code}`));
      };
      w.on('message', onMessage);
      w.once('error', onError);
      w.once('exit', onExit);
      w.postMessage({ ...message, id }, transfer);
    });
  };

  return {
    call(message, transfer, timeoutMs) {
      const result = tail.then(() => execute(message, transfer, timeoutMs));
      tail = result.catch(() => undefined);
      return result;
    },
    close: discard,
  };
}
