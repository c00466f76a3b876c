/**
 * The model-turn function's input as the engine builds it (docs/contracts/README.md, "The
 * model-turn function"): `agent_ref` names the run's agent, the function its reducer is bound to;
 * the context compiler's manifest is stored with the turn (docs/architecture.md, "The seams of a
 * step": the context compiler returns the model's input and a manifest).
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

  it('stores the compiler’s manifest on the model turn’s event, readable through the events read, and keeps it from the reducer', async () => {
    // Prepare: a reducer that records the data of the model_turn_completed it is given.
    const seen: Record<string, unknown>[] = [];
    const inner = modelOnce();
    const reducer = (raw: Record<string, unknown>) => {
      const event = raw.event as { kind: string; data: Record<string, unknown> };
      if (event.kind === 'model_turn_completed') seen.push(event.data);
      return inner(raw);
    };
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({ '/agents/assistant': reducer }),
      tools: inProcessTools({}),
      models: {
        async turn() {
          return {
            message: { text: 'hi' },
            tool_calls: [],
            finish_reason: 'stop',
            usage: { input_tokens: 1, output_tokens: 1 },
          };
        },
      },
    });

    // Act
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/agents/assistant' }, input: 'hello' },
      alice,
    );
    for (const id of await t.drainMessages()) await t.engine.stepRun(id);

    // Assert
    const events = await t.engine.readEvents(run.run_id, alice, 0, 100);
    const turn = events.find((e) => e.kind === 'model_turn_completed');
    expect(turn?.data.manifest).toEqual({
      from_seq: 1,
      to_seq: 3, // run_started, reducer_answered, operation_started
      included: [[1, 1]], // run_started, as a seq range
      excluded: [],
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).not.toHaveProperty('manifest');
  });
});
