/**
 * The offline first run: a default-reducer run on the scripted local model,
 * with the local stack's sample tools behind the real catalogue host, calls echo and completes.
 * Memory store and queue; the agent loop runs in the QuickJS sandbox as it does in AWS.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../../lib/contracts/index.ts';
import { registerSampleTools } from '../../lib/local/sample-tools.ts';
import { createModelHost } from '../../lib/models/host.ts';
import { createScriptedModel } from '../../lib/models/scripted.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { builtInFunctions } from '../../lib/runtime.ts';
import { createSandboxReducerHost } from '../../lib/sandbox/index.ts';
import { createMemoryRegistryStore } from '../../lib/store/memory-registry-store.ts';
import { createAuditLog } from '../../lib/tools/audit-log.ts';
import { createCatalogueToolHost } from '../../lib/tools/catalogue-host.ts';
import { createToolRegistry } from '../../lib/tools/registry.ts';
import { alice, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';

const reducers = createSandboxReducerHost({ registry: builtInFunctions() });
afterAll(() => reducers.close());

async function engineWithScriptedModel() {
  const code = createToolRegistry();
  registerSampleTools(code);
  const registries = createMemoryRegistryStore();
  const tools = createCatalogueToolHost({
    code,
    codePolicy: [],
    registries,
    audit: createAuditLog(() => {}),
    secrets: async () => 'unused',
  });
  const models = createModelHost({
    functions: { [DEFAULT_MODEL_TURN_FUNCTION]: createScriptedModel() },
    default: DEFAULT_MODEL_TURN_FUNCTION,
  });
  return makeMemoryTestEngine({ reducers, tools, models, registries });
}

describe('first run on the scripted local model', () => {
  it('calls the echo tool and completes a task-mode default-reducer run', async () => {
    const t = await engineWithScriptedModel();
    const { run } = await t.engine.createRun(
      {
        subject: uniqueSubject(),
        reducer: { function_path: AGENT_LOOP_PATH },
        input: 'Echo hello.',
        context: { mode: 'task', tools: [{ name: 'echo', mutating: false }] },
      },
      alice,
    );
    for (let i = 0; i < 10; i++) {
      const ids = await t.drainMessages();
      if (ids.length === 0) break;
      for (const id of ids) await t.engine.stepRun(id);
    }
    const done = await t.engine.getRun(run.run_id, alice);
    const events = await t.engine.readEvents(run.run_id, alice, 0, 1000);
    expect(done.status, JSON.stringify(events.map((e) => [e.kind, e.data]))).toBe('completed');
    const results = events.filter((e) => e.kind === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]?.data).toMatchObject({
      tool: 'echo',
      envelope: { status: 'succeeded', payload: { echo: { text: 'Echo hello.' } } },
    });
    expect(events.filter((e) => e.kind === 'model_turn_completed')).toHaveLength(2);
    expect(done).toMatchObject({ summary: expect.stringContaining('The echo tool returned') });
    expect(done.usage.tool_calls).toBe(1);
  });
});
