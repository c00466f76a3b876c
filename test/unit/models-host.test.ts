import { describe, expect, it } from 'vitest';
import type { CompiledContext } from '../../lib/contracts/index.ts';
import { DEFAULT_MODEL_TURN_FUNCTION, type ModelTurnInput } from '../../lib/contracts/index.ts';
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
      retry: { attempts: 1 },
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
      host_attempts: 1,
      provider_calls: 1,
    });
  });

  it('retries a retryable fault after a backoff (Retry-After first), and returns the last answer with host_attempts', async () => {
    const waits: number[] = [];
    let calls = 0;
    const host = createModelHost({
      sleep: async (ms) => {
        waits.push(ms);
      },
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
          calls += 1;
          return { error_class: 'rate_limited', message: 'slow down', retryable: true, retry_after_ms: 700 };
        },
      },
    });

    const answer = await host.turn(inputWith({}), context, signal);

    expect(calls).toBe(3);
    expect(waits).toEqual([700, 700]);
    expect(answer).toMatchObject({ error_class: 'rate_limited', retryable: true, host_attempts: 3 });
  });

  it('stops retrying once a call succeeds, never retries a non-retryable fault, and stops on abort', async () => {
    let calls = 0;
    const flaky = createModelHost({
      sleep: async () => {},
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
          calls += 1;
          return calls === 1
            ? { error_class: 'transient', message: 'HTTP 502', retryable: true }
            : {
                message: { text: 'ok' },
                tool_calls: [],
                finish_reason: 'stop',
                usage: { input_tokens: 1, output_tokens: 1 },
              };
        },
      },
    });
    expect(await flaky.turn(inputWith({}), context, signal)).toMatchObject({ message: { text: 'ok' } });
    expect(calls).toBe(2);

    let denied = 0;
    const auth = createModelHost({
      sleep: async () => {},
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
          denied += 1;
          return { error_class: 'auth', message: 'HTTP 401', retryable: false };
        },
      },
    });
    await auth.turn(inputWith({}), context, signal);
    expect(denied).toBe(1);

    const abort = new AbortController();
    let aborted = 0;
    const stopping = createModelHost({
      sleep: async () => abort.abort(),
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
          aborted += 1;
          return { error_class: 'transient', message: 'HTTP 503', retryable: true };
        },
      },
    });
    await stopping.turn(inputWith({}), context, abort.signal);
    expect(aborted).toBe(1);
  });

  it('refuses an answer nested deeper than MAX_JSON_DEPTH as output_invalid, not retryable', async () => {
    let args: Record<string, unknown> = {};
    for (let i = 0; i < 5_000; i += 1) args = { a: args };
    const host = createModelHost({
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => ({
          message: { text: null },
          tool_calls: [{ call_id: 'c1', name: 'deep', args }],
          finish_reason: 'tool_calls',
          usage: { input_tokens: 1, output_tokens: 1 },
        }),
      },
    });
    expect(await host.turn(inputWith({}), context, signal)).toMatchObject({
      error_class: 'output_invalid',
      retryable: false,
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
      host_attempts: 1,
      provider_calls: 1,
    });
  });

  it('counts provider calls on a success too, summing each answer’s own call.attempts', async () => {
    let calls = 0;
    const host = createModelHost({
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
          calls += 1;
          const call = { provider: 'bedrock', model_id: 'm', attempts: 2 };
          return calls === 1
            ? { error_class: 'transient', message: 'busy', retryable: true, call }
            : ({ message: { text: 'ok' }, tool_calls: [], finish_reason: 'stop', usage: {}, call } as never);
        },
      },
      sleep: async () => {},
    });
    expect(await host.turn(inputWith({}), context, signal)).toMatchObject({
      message: { text: 'ok' },
      host_attempts: 2,
      provider_calls: 4,
    });
  });

  it('makes no more calls than limits.maxCalls allows (what max_model_calls leaves)', async () => {
    let calls = 0;
    const host = createModelHost({
      functions: {
        [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
          calls += 1;
          return { error_class: 'transient', message: 'busy', retryable: true };
        },
      },
      sleep: async () => {},
    });
    expect(await host.turn(inputWith({}), context, signal, { maxCalls: 2 })).toMatchObject({
      host_attempts: 2,
      provider_calls: 2,
    });
    expect(calls).toBe(2);
  });
});
