/**
 * Builds an engine on the memory run store (lib/store/memory-run-store.ts, the DynamoDB
 * adapter's semantics without Java) and a memory step queue, with in-process reducers, tools
 * and models: engine, race and property tests of engine logic at unit speed. The store
 * contract suite (test/contract/run-store.contract.ts) keeps the two stores alike; what is
 * about DynamoDB or SQS themselves runs on the real local services (engine.ts).
 */
import { createMemoryBlobStore } from '../../lib/blobs/memory-blob-store.ts';
import { type CrashPoint, createEngine, type Engine, type EngineOptions } from '../../lib/engine/engine.ts';
import type { RunStore } from '../../lib/engine/ports.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { testClock } from './hosts.ts';
import { createMemoryStepQueue, type MemoryStepQueue } from './memory-step-queue.ts';

export interface MemoryTestEngine {
  engine: Engine;
  store: RunStore;
  queue: MemoryStepQueue;
  clock: ReturnType<typeof testClock>;
  /** Builds a second engine (another worker) on the same store, queue and clock. */
  another(overrides?: Partial<EngineOptions>): Engine;
  /** Removes every step message visible now; returns their run ids. */
  drainMessages(): Promise<string[]>;
}

export async function makeMemoryTestEngine(
  parts: Pick<EngineOptions, 'reducers' | 'tools' | 'models'> &
    Partial<EngineOptions> & { crash?: (p: CrashPoint, runId: string) => void | Promise<void> },
): Promise<MemoryTestEngine> {
  const clock = testClock();
  const store = parts.store ?? createMemoryRunStore({ blobs: createMemoryBlobStore() });
  const queue = createMemoryStepQueue(clock);
  const options: EngineOptions = {
    store,
    queue,
    clock,
    heartbeatMs: 1_000,
    wakeGraceMs: 1_000,
    ...parts,
    ...(parts.crash ? { faults: parts.crash } : {}),
  };
  return {
    engine: createEngine(options),
    store,
    queue,
    clock,
    another: (overrides = {}) => createEngine({ ...options, faults: () => {}, ...overrides }),
    drainMessages: () => queue.drainMessages(),
  };
}
