/**
 * Starts the local stack wired for a replay (recorded tools, recorded model, chaos hooks) and
 * talks to it over HTTP with the product's client, the way a user's client would.
 */
import { createClient } from '../client/index.ts';
import { startLocalStack } from '../local/stack.ts';
import type { ReplayApi } from './driver.ts';
import type { StartReplayStack } from './run-replay.ts';

export interface LocalReplayStackOptions {
  port?: number;
  /** Parallel step batches (default 8). */
  pollerConcurrency?: number;
}

/** A StartReplayStack over the local stack: in-memory DynamoDB Local + fauxqs, HTTP gateway. */
export function localReplayStack(options: LocalReplayStackOptions = {}): StartReplayStack {
  return async ({ registerTools, modelFunctions, chaos, leaseTtlMs }) => {
    const stack = await startLocalStack({
      port: options.port ?? 0,
      stateDir: false,
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
    const client = createClient({ baseUrl: stack.url, token: stack.token });
    const api: ReplayApi = {
      createRun: (body) => client.createRun(body as Parameters<typeof client.createRun>[0]),
      getRun: (runId) => client.getRun(runId),
      async events(runId, after, limit, waitSeconds) {
        const page = await client.events(runId, { after, limit, wait: waitSeconds });
        return page.events;
      },
      control: (runId, control) => client.control(runId, control as Parameters<typeof client.control>[1]),
    };
    return { api, stop: () => stack.stop() };
  };
}
