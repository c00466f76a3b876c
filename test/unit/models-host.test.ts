import { describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_TURN_FUNCTION, type ModelTurnInput } from '../../lib/contracts/index.ts';
import type { CompiledContext } from '../../lib/engine/ports.ts';
import { createModelHost } from '../../lib/models/host.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';

const context: CompiledContext = {
  messages: [{ role: 'user', content: 'hi' }],
  manifest: { from_seq: 1, to_seq: 1, included: [] },
};

function inputWith(executor_config: Record<string, unknown>): ModelTurnInput {
  return {
    run_id: 'r1',
    operation_id: 'r1/op/1',
    attempt: 1,
    subject: { workspace: 'ai', path: '/p' },
    executor_config,
    request: { tools_offered: [], tool_results: [] },
  };
}

const answering =
  (text: string): ModelTurnFunction =>
  async () => ({
    message: { text },
    tool_calls: [],
    finish_reason: 'stop',
    usage: { input_tokens: 1, output_tokens: 1 },
  });

describe('createModelHost', () => {
  const signal = new AbortController().signal;

  it('dispatches on executor_config.model_turn_function, else on the default path', async () => {
    const host = createModelHost({
      functions: {
        '/lib/models/a': answering('from a'),
        [DEFAULT_MODEL_TURN_FUNCTION]: answering('from default'),
      },
    });

    expect(
      await host.turn(inputWith({ model_turn_function: '/lib/models/a' }), context, signal),
    ).toMatchObject({
      message: { text: 'from a' },
    });
    expect(await host.turn(inputWith({}), context, signal)).toMatchObject({
      message: { text: 'from default' },
    });
  });

  it('uses the configured default path when the run names none', async () => {
    const host = createModelHost({
      functions: { '/lib/models/b': answering('b') },
      default: '/lib/models/b',
    });

    expect(await host.turn(inputWith({}), context, signal)).toMatchObject({ message: { text: 'b' } });
  });

  it('returns model_turn_function_not_found for an unknown path, never an inherited property', async () => {
    const host = createModelHost({ functions: {} });

    expect(await host.turn(inputWith({ model_turn_function: 'toString' }), context, signal)).toMatchObject({
      error_class: 'model_turn_function_not_found',
      retryable: false,
    });
  });

  it('returns a function error as is, keeping growth-rule extras', async () => {
    const host = createModelHost({
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => ({
          error_class: 'rate_limited',
          message: 'slow down',
          retryable: true,
          retry_after_ms: 500,
        }),
      },
    });

    expect(await host.turn(inputWith({}), context, signal)).toEqual({
      error_class: 'rate_limited',
      message: 'slow down',
      retryable: true,
      retry_after_ms: 500,
    });
  });

  it('turns a throwing function into function_error and an off-contract answer into output_invalid', async () => {
    const host = createModelHost({
      functions: {
        '/throws': async () => {
          throw new Error('boom');
        },
        '/bad': async () =>
          ({ message: { text: 'x' }, tool_calls: [{ call_id: '', name: 'n', args: {} }] }) as never,
      },
    });

    expect(await host.turn(inputWith({ model_turn_function: '/throws' }), context, signal)).toMatchObject({
      error_class: 'function_error',
      message: expect.stringContaining('boom'),
    });
    expect(await host.turn(inputWith({ model_turn_function: '/bad' }), context, signal)).toMatchObject({
      error_class: 'output_invalid',
      retryable: false,
    });
  });

  it('applies the contract defaults to a sparse answer (tool_calls defaults to [])', async () => {
    const host = createModelHost({
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () =>
          ({
            message: { text: 'ok' },
            finish_reason: 'stop',
            usage: {},
            usage_fidelity: 'estimated',
          }) as never,
      },
    });

    expect(await host.turn(inputWith({}), context, signal)).toEqual({
      message: { text: 'ok' },
      tool_calls: [],
      finish_reason: 'stop',
      usage: { input_tokens: 0, output_tokens: 0 },
      usage_fidelity: 'estimated',
    });
  });
});
