/**
 * The step worker's own CPU on the peer bench's workload, without the network: the engine on
 * the memory run store and a memory step queue, the QuickJS reducer bench/peers/agent-steps.js,
 * two instant tools (`lookup`, `charge`) through the catalogue tool host. Drives RUNS runs of
 * STEPS steps (one message at a time) and prints CPU per step (user + system of this process).
 * Profile with `node --cpu-prof --cpu-prof-dir=reports bench/step-profile.ts [runs] [steps]`.
 * Issue 24, point 3.
 */
import { readFileSync } from 'node:fs';
import { createMemoryBlobStore } from '../lib/blobs/memory-blob-store.ts';
import { createEngine } from '../lib/engine/engine.ts';
import type { ModelHost } from '../lib/engine/ports.ts';
import { InMemoryFunctionRegistry } from '../lib/sandbox/function-registry.ts';
import { createSandboxReducerHost } from '../lib/sandbox/reducer-host.ts';
import { createMemoryRegistryStore } from '../lib/store/memory-registry-store.ts';
import { createMemoryRunStore } from '../lib/store/memory-run-store.ts';
import { createAuditLog } from '../lib/tools/audit-log.ts';
import { createCatalogueToolHost } from '../lib/tools/catalogue-host.ts';
import { createToolRegistry } from '../lib/tools/registry.ts';
import { alice, uniqueSubject } from '../test/support/hosts.ts';
import { createMemoryStepQueue } from '../test/support/memory-step-queue.ts';

const RUNS = Number(process.argv[2] ?? 40);
const STEPS = Number(process.argv[3] ?? 25);
const PATH = '/bench/agent-steps';

const clock = { now: () => Date.now() };
const functions = new InMemoryFunctionRegistry([
  {
    function_path: PATH,
    kind: 'js',
    bytes: new Uint8Array(readFileSync(new URL('./peers/agent-steps.js', import.meta.url))),
  },
]);
const reducers = createSandboxReducerHost({ registry: functions, limits: { timeoutMs: 5_000 } });
const code = createToolRegistry();
for (const [name, replaySafe] of [
  ['lookup', true],
  ['charge', false],
] as const) {
  code.register({
    name,
    version: '1.0.0',
    input_schema: { type: 'object' },
    metadata: { mutating: !replaySafe, replay_safe: replaySafe },
    handler: { kind: 'module', fn: async (args) => ({ ok: true, n: Number(args.n) }) },
  });
}
const registries = createMemoryRegistryStore();
const tools = createCatalogueToolHost({
  code,
  registries,
  secrets: { resolve: async () => '' } as never,
  audit: createAuditLog(() => {}),
  clock,
});
const models: ModelHost = {
  call: async () => {
    throw new Error('no model in this bench');
  },
} as never;
const store = createMemoryRunStore({ blobs: createMemoryBlobStore() });
const queue = createMemoryStepQueue(clock);
const engine = createEngine({
  store,
  queue,
  clock,
  reducers,
  tools,
  models,
  registries,
  heartbeatMs: 30_000,
});

async function drive(runs: number): Promise<number> {
  let steps = 0;
  const ids: string[] = [];
  for (let i = 0; i < runs; i += 1) {
    const created = await engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: PATH },
        input: { run: `r${i}`, steps: STEPS },
      },
      alice,
    );
    ids.push(created.run.run_id);
  }
  for (;;) {
    const messages = await queue.drainMessages();
    if (messages.length === 0) break;
    for (const runId of messages) {
      const outcome = await engine.stepRun(runId);
      if (outcome.kind === 'progressed') steps += outcome.operations;
    }
  }
  return steps;
}

await drive(5); // warm-up
const before = process.cpuUsage();
const steps = await drive(RUNS);
const cpu = process.cpuUsage(before);
const ms = (cpu.user + cpu.system) / 1_000;
console.log(
  `steps ${steps}; CPU per step ${(ms / steps).toFixed(3)} ms (user ${(cpu.user / 1_000 / steps).toFixed(3)}, system ${(cpu.system / 1_000 / steps).toFixed(3)})`,
);
console.log(`store ${JSON.stringify(store.metrics)}`);
await reducers.close();
