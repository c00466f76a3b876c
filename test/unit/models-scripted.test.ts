import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type {
  CompiledContext,
  ContextMessage,
  ModelTurnInput,
  ToolOffered,
} from '../../lib/contracts/index.ts';
import { createScriptedModel, SCRIPTED_QUOTE_CHARS, scriptedArgs } from '../../lib/models/scripted.ts';

function input(tools: ToolOffered[] = [], operation_id = 'r1/op/1'): ModelTurnInput {
  return {
    run_id: 'r1',
    operation_id,
    attempt: 1,
    subject: { workspace: 'demo', path: '/first' },
    executor_config: {},
    request: { tools_offered: tools, tool_results: [] },
  };
}

function context(messages: ContextMessage[]): CompiledContext {
  return { messages, manifest: { from_seq: 1, to_seq: messages.length, included: [] } };
}

const live = () => new AbortController().signal;
const tool = (name: string, schema: Record<string, unknown> = { type: 'object' }): ToolOffered => ({
  name,
  kind: 'function',
  schema,
});
const user = (content: string): ContextMessage => ({ role: 'user', content });

describe('scripted model', () => {
  it('answers plain text, finish stop, when no tool is offered', async () => {
    const answer = await createScriptedModel()(input(), context([user('Say hello.')]), live());
    expect(answer).toMatchObject({
      message: { text: expect.stringContaining('Say hello.') },
      tool_calls: [],
      finish_reason: 'stop',
      usage_fidelity: 'estimated',
      usage: { input_tokens: 3, output_tokens: expect.any(Number) },
      call: { provider: 'local', model_id: 'local/scripted', attempts: 1 },
    });
  });

  it('calls echo (preferred over earlier tools) with the user text when tools are offered', async () => {
    const tools = [tool('wait_for_callback'), tool('lookup'), tool('echo')];
    const answer = await createScriptedModel()(input(tools), context([user('Echo hi.')]), live());
    expect(answer).toMatchObject({
      message: { text: null },
      tool_calls: [{ call_id: 'scripted-r1/op/1', name: 'echo', args: { text: 'Echo hi.' } }],
      finish_reason: 'tool_calls',
    });
  });

  it('without echo, calls the first function tool that does not park', async () => {
    const tools: ToolOffered[] = [
      { name: 'propose_plan', kind: 'domain', schema: { type: 'object' } },
      tool('wait_for_callback'),
      tool('lookup'),
    ];
    const answer = await createScriptedModel()(input(tools), context([user('x')]), live());
    expect(answer).toMatchObject({ tool_calls: [{ name: 'lookup' }] });
  });

  it('answers the tool result with a final text after it, and calls again after a new user message', async () => {
    const model = createScriptedModel();
    const transcript: ContextMessage[] = [
      user('Echo hi.'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ call_id: 'c1', name: 'echo', args: { text: 'hi' } }],
      },
      { role: 'tool', call_id: 'c1', name: 'echo', content: '{"echo":{"text":"hi"}}' },
    ];
    const final = await model(input([tool('echo')], 'r1/op/3'), context(transcript), live());
    expect(final).toMatchObject({
      message: { text: 'The echo tool returned: {"echo":{"text":"hi"}}\nDone.' },
      tool_calls: [],
      finish_reason: 'stop',
    });
    const again = await model(
      input([tool('echo')], 'r1/op/5'),
      context([...transcript, { role: 'assistant', content: 'ok', tool_calls: [] }, user('More.')]),
      live(),
    );
    expect(again).toMatchObject({ tool_calls: [{ call_id: 'scripted-r1/op/5', args: { text: 'More.' } }] });
  });

  it('cuts a long tool result in its answer', async () => {
    const long = 'y'.repeat(SCRIPTED_QUOTE_CHARS + 50);
    const answer = await createScriptedModel()(
      input(),
      context([user('go'), { role: 'tool', call_id: 'c', name: 't', content: long }]),
      live(),
    );
    expect(answer).toMatchObject({
      message: { text: `The t tool returned: ${'y'.repeat(SCRIPTED_QUOTE_CHARS)}…\nDone.` },
    });
  });

  it('builds args valid for the tool schema', () => {
    const ajv = new Ajv({ strict: false });
    const schemas: Record<string, unknown>[] = [
      { type: 'object' },
      { type: 'object', properties: {} },
      { type: 'object', properties: {}, additionalProperties: false },
      { type: 'object', properties: { q: { type: 'string' } } },
      {
        type: 'object',
        required: ['id', 'n', 'mode', 'tags', 'flag', 'inner'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', minLength: 12, maxLength: 20 },
          n: { type: 'integer', minimum: 3 },
          mode: { enum: ['fast', 'slow'] },
          tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
          flag: { type: 'boolean' },
          inner: { type: 'object', required: ['k'], properties: { k: { const: 7 } } },
          unused: { type: 'number' },
        },
      },
    ];
    for (const schema of schemas) {
      const args = scriptedArgs(schema, 'hi');
      expect(ajv.validate(schema, args), `${JSON.stringify(schema)} ← ${JSON.stringify(args)}`).toBe(true);
    }
    expect(scriptedArgs({ type: 'object', properties: { q: { type: 'string' } } }, 'hi')).toEqual({
      q: 'hi',
    });
  });

  it('is deterministic: the same input gives the same answer', async () => {
    const model = createScriptedModel();
    const tools = [tool('echo', { type: 'object', properties: { text: { type: 'string' } } })];
    for (const messages of [
      [user('a')],
      [user('a'), { role: 'tool', call_id: 'c', name: 'echo', content: 'a' }],
    ]) {
      const first = await model(input(tools), context(messages as ContextMessage[]), live());
      const second = await createScriptedModel()(input(tools), context(messages as ContextMessage[]), live());
      expect(second).toEqual(first);
    }
  });

  it('refuses an already aborted turn as cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const answer = await createScriptedModel()(input(), context([user('x')]), controller.signal);
    expect(answer).toMatchObject({ error_class: 'cancelled', retryable: false });
  });
});
