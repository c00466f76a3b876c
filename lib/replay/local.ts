/**
 * Starts the local stack wired for a replay (recorded tools, recorded model, chaos hooks) and
 * talks to it over HTTP with the product's client, the way a user's client would.
 */
import { ApiError, createClient } from '../client/index.ts';
import type { RunStore } from '../engine/ports.ts';
import type { LogSink } from '../handlers/observability.ts';
import { startLocalStack } from '../local/stack.ts';
import type { ReplayApi } from './driver.ts';
import type { StartReplayStack } from './run-replay.ts';

export interface LocalReplayStackOptions {
  port?: number;
  /** Parallel step batches (default 8). */
  pollerConcurrency?: number;
  /** Where the stack's own log goes; default: dropped (chaos makes the workers log every kill). */
  logger?: LogSink;
  /**
   * Called once the stack serves, with its URL, the web console's link (to watch the replay) and
   * its run store (whose metrics the write-cost bench reads).
   */
  onReady?: (stack: { url: string; consoleUrl: string | null; store: RunStore }) => void;
}

const SILENT: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

/** A StartReplayStack over the local stack: in-memory DynamoDB Local + fauxqs, HTTP gateway. */
export function localReplayStack(options: LocalReplayStackOptions = {}): StartReplayStack {
  return async ({ registerTools, modelFunctions, chaos, leaseTtlMs }) => {
    const stack = await startLocalStack({
      port: options.port ?? 0,
      stateDir: false,
      logger: options.logger ?? SILENT,
      registerTools,
      modelFunctions,
      leaseTtlMs,
      heartbeatMs: Math.floor(leaseTtlMs / 3),
      wakeGraceMs: chaos ? 1_000 : 5_000,
      sweepIntervalMs: chaos ? 500 : 2_000,
      visibilityTimeoutSeconds: chaos ? 2 : 30,
      pollIntervalMs: 1_000,
      pollerConcurrency: options.pollerConcurrency ?? 8,
      ...(chaos ? { faults: chaos.faults, wrapQueue: chaos.wrapQueue } : {}),
    });
    options.onReady?.({ url: stack.url, consoleUrl: stack.consoleUrl, store: stack.runtime.store });
    const client = createClient({ baseUrl: stack.url, token: stack.token });
    // Every call the replay client makes is idempotent (create_key, control_id, reads), so a
    // server error (e.g. the API process "killed" after its commit) is retried, as a user would.
    const api: ReplayApi = {
      createRun: (body) => retrying(() => client.createRun(body as Parameters<typeof client.createRun>[0])),
      getRun: (runId) => retrying(() => client.getRun(runId)),
      async events(runId, after, limit, waitSeconds) {
        const page = await retrying(() => client.listRunEvents(runId, { after, limit, wait: waitSeconds }));
        return page.events;
      },
      control: (runId, control) =>
        retrying(() => client.applyControl(runId, control as Parameters<typeof client.applyControl>[1])),
    };
    return { api, stop: () => stack.stop() };
  };
}

/** Retries a call that failed with a server error or an unreachable API (5 attempts, backoff). */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (err) {
      const transient = err instanceof ApiError && (err.status >= 500 || err.status === 0);
      if (!transient || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
    }
  }
}
