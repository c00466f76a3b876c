/**
 * A StartReplayStack on the memory engine (memory store and queue, the default reducer in the
 * QuickJS sandbox, the replay's recorded tools and model behind the real catalogue and model
 * hosts): the airline replay at unit speed, no HTTP. Each API call first runs every step
 * message due (advancing the test clock to wake delayed ones), so a long poll never waits.
 * Every reducer request is kept (by run and delivered seq) for tests that compare what the
 * engine sent with what a check rebuilds from the log. With `kills`, workers are killed at random
 * crash points (seeded): the killed step's message is gone, so the clock moves past the lease and
 * the sweeper takes the run over, as in AWS (no duplicated or delayed messages here).
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
import { alice as aliceUser } from './hosts.ts';
import { type MemoryTestEngine, makeMemoryTestEngine } from './memory-engine.ts';

/** The replay's caller: an admin, as the local stack's default user is (it may use the replay's workspace). */
const alice = { ...aliceUser, admin: true };

export interface MemoryReplayStack {
  start: StartReplayStack;
  /** The engine of the last started stack (kept after the replay stops it). */
  engine(): MemoryTestEngine;
  /** The request the engine sent for the delivery of event `seq` of `runId` (the last one, if repeated). */
  requests: Map<string, ReducerRequest>;
  /** How many workers were killed. */
  kills(): number;
  close(): Promise<void>;
}

/** Past the default lease (90 s) and its clock-skew allowance (30 s). */
const LEASE_TAKEOVER_MS = 125_000;

/** The key of {@link MemoryReplayStack.requests}. */
export const requestKey = (runId: string, seq: number): string => `${runId}#${seq}`;

/** Options: kill the worker at each crash point with probability `probability` (seeded PRNG). */
export interface MemoryReplayChaos {
  kills?: { probability: number; seed: number };
}

/** A small seeded PRNG (mulberry32), as lib/replay/chaos.ts uses. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function memoryReplayStack(chaos: MemoryReplayChaos = {}): MemoryReplayStack {
  const random = prng(chaos.kills?.seed ?? 1);
  let killed = 0;
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
    const kills = chaos.kills;
    const t = await makeMemoryTestEngine({
      reducers,
      tools,
      models,
      registries,
      ...(kills !== undefined
        ? {
            crash: (point: string) => {
              if (random() < kills.probability) {
                killed += 1;
                throw new Error(`killed at ${point}`);
              }
            },
          }
        : {}),
    });
    current = t;
    const drive = async () => {
      let sweeps = 0;
      for (let round = 0; round < 200; round += 1) {
        let ids = await t.drainMessages();
        if (ids.length === 0 && t.queue.pending().length > 0) {
          t.clock.advance(1_000);
          ids = await t.drainMessages();
        }
        if (ids.length === 0 && kills !== undefined && sweeps < 3) {
          // A killed worker's lease expires (or its wake-up was never sent): the sweeper takes
          // its runs over. A sweep's own commits may be killed too, so try a few passes.
          sweeps += 1;
          t.clock.advance(LEASE_TAKEOVER_MS);
          await t.engine.sweep();
          ids = await t.drainMessages();
        }
        if (ids.length === 0) return;
        for (const id of ids) {
          try {
            await t.engine.stepRun(id);
          } catch (err) {
            if (kills === undefined) throw err;
          }
        }
      }
    };
    // A kill after a control's or a create's commit: the caller retries (both are idempotent, by
    // control_id and create_key), as the replay's HTTP client retries a server error.
    const retrying = async <T>(call: () => Promise<T>): Promise<T> => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await call();
        } catch (err) {
          if (
            kills === undefined ||
            !(err instanceof Error) ||
            !err.message.startsWith('killed at') ||
            attempt >= 5
          )
            throw err;
        }
      }
    };
    const api: ReplayApi = {
      async createRun(body) {
        const out = await retrying(() => t.engine.createRun(body, alice));
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
        const ack = await retrying(() => t.engine.applyControl(runId, control, alice));
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
    kills: () => killed,
    close: () => sandbox.close(),
  };
}
