/**
 * The model-turn function's input as the engine builds it (seed agent-run-contracts, "The
 * model-turn function"): `agent_ref` names the run's agent, the function its reducer is bound to.
 * Issue 16, item 5.
 */
import { describe, expect, it } from 'vitest';
import type { ModelTurnInput } from '../../lib/contracts/index.ts';
import type { ModelHost } from '../../lib/engine/ports.ts';
import { alice, inProcessReducers, inProcessTools, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { modelOnce } from '../support/reducers.ts';

describe('model-turn input', () => {
  it('sets agent_ref to functions:{the reducer’s function path}', async () => {
    // Prepare
    const inputs: ModelTurnInput[] = [];
    const models: ModelHost = {
      async turn(input) {
        inputs.push(input as ModelTurnInput);
        return {
          message: { text: 'hi' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 1, output_tokens: 1 },
        };
      },
    };
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/agents/assistant': modelOnce() }),
      tools: inProcessTools({}),
      models,
    });

    // Act
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/agents/assistant' }, input: 'hello' },
      alice,
    );
    for (const id of await t.drainMessages()) await t.engine.stepRun(id);

    // Assert
    expect((await t.store.getRun(run.run_id))?.status).toBe('completed');
    expect(inputs.map((i) => i.agent_ref)).toEqual(['functions:/agents/assistant']);
  });
});
