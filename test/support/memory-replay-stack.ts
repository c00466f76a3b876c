/**
 * A StartReplayStack on the memory engine (memory store and queue, the default reducer in the
 * QuickJS sandbox, the replay's recorded tools and model behind the real catalogue and model
 * hosts): the airline replay at unit speed, no HTTP. Each API call first runs every step
 * message due (advancing the test clock to wake delayed ones), so a long poll never waits.
 * Every reducer request is kept (by run and delivered seq) for tests that compare what the
 * engine sent with what a check rebuilds from the log. Not for chaos (no faults are wired).
 */
import type { ReducerRequest, RunEvent } from '../../lib/contracts/index.ts';
import type { ReducerHost } from '../../lib/engine/ports.ts';
import { createModelHost } from '../../lib/models/host.ts';
import { RECORDED_MODEL_PATH, type ReplayApi } from '../../lib/replay/driver.ts';
import type { StartReplayStack } from '../../lib/replay/run-replay.ts';
import { builtInFunctions } from '../../lib/runtime.ts';
import { createSandboxReducerHost } from '../../lib/sandbox/index.ts';
import { createMemoryRegistryStore } from '../../lib/store/memory-registry-store.ts';
import { createAuditLog } from '../../lib/tools/audit-log.ts';
import { createCatalogueToolHost } from '../../lib/tools/catalogue-host.ts';
import { createToolRegistry } from '../../lib/tools/registry.ts';
import { alice } from './hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from './memory-engine.ts';

export interface MemoryReplayStack {
  start: StartReplayStack;
  /** The engine of the last started stack (kept after the replay stops it). */
  engine(): MemoryTestEngine;
  /** The request the engine sent for the delivery of event `seq` of `runId` (the last one, if repeated). */
  requests: Map<string, ReducerRequest>;
  close(): Promise<void>;
}

/** The key of {@link MemoryReplayStack.requests}. */
export const requestKey = (runId: string, seq: number): string => `${runId}#${seq}`;

export function memoryReplayStack(): MemoryReplayStack {
  const sandbox = createSandboxReducerHost({ registry: builtInFunctions() });
  const requests = new Map<string, ReducerRequest>();
  const reducers: ReducerHost = {
    resolve: (binding) => sandbox.resolve(binding),
    reduce: (binding, request) => {
      const r = request as ReducerRequest;
      requests.set(requestKey(r.run.run_id, r.event.seq), structuredClone(r));
      return sandbox.reduce(binding, request);
    },
  };
  let current: MemoryTestEngine | null = null;
  const start: StartReplayStack = async ({ registerTools, modelFunctions }) => {
    const code = createToolRegistry();
    registerTools(code);
    const registries = createMemoryRegistryStore();
    const tools = createCatalogueToolHost({
      code,
      codePolicy: [],
      registries,
      audit: createAuditLog(() => {}),
      secrets: async () => 'unused',
    });
    const models = createModelHost({ functions: modelFunctions, default: RECORDED_MODEL_PATH });
    const t = await makeMemoryTestEngine({ reducers, tools, models, registries });
    current = t;
    const drive = async () => {
      for (let round = 0; round < 200; round += 1) {
        let ids = await t.drainMessages();
        if (ids.length === 0 && t.queue.pending().length > 0) {
          t.clock.advance(1_000);
          ids = await t.drainMessages();
        }
        if (ids.length === 0) return;
        for (const id of ids) await t.engine.stepRun(id);
      }
    };
    const api: ReplayApi = {
      async createRun(body) {
        const out = await t.engine.createRun(body, alice);
        return { run: out.run, created: out.created };
      },
      async getRun(runId) {
        await drive();
        return t.engine.getRun(runId, alice);
      },
      async events(runId, after, limit): Promise<RunEvent[]> {
        await drive();
        return t.engine.readEvents(runId, alice, after, limit);
      },
      async control(runId, control) {
        const ack = await t.engine.applyControl(runId, control, alice);
        await drive();
        return ack;
      },
    };
    return { api, stop: async () => {} };
  };
  return {
    start,
    engine: () => {
      if (current === null) throw new Error('the replay stack was not started');
      return current;
    },
    requests,
    close: () => sandbox.close(),
  };
}
