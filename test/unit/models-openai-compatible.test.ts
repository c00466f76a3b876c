import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CompiledContext, ModelTurnInput } from '../../lib/contracts/index.ts';
import { createOpenAiCompatibleModel } from '../../lib/models/openai-compatible.ts';
import { type FakeServer, fixture, startFakeServer } from '../fixtures/models/fake-server.ts';

const input: ModelTurnInput = {
  run_id: 'r1',
  operation_id: 'r1/op/2',
  attempt: 1,
  subject: { workspace: 'ai', path: '/chats/c1' },
  executor_config: {},
  request: {
    tools_offered: [
      {
        name: 'get_user_details',
        kind: 'function',
        description: 'Get the details of an user.',
        schema: { type: 'object', properties: { user_id: { type: 'string' } }, required: ['user_id'] },
      },
    ],
    tool_results: [],
  },
};

const context: CompiledContext = {
  messages: [
    { role: 'system', content: '# Airline Agent Policy' },
    { role: 'user', content: 'Hi! My user id is mia_li_3668.' },
    {
      role: 'assistant',
      content: 'Let me check.',
      tool_calls: [{ call_id: 'call_1', name: 'get_user_details', args: { user_id: 'mia_li_3668' } }],
    },
    { role: 'tool', call_id: 'call_1', name: 'get_user_details', content: '{"name": "Mia"}' },
  ],
  manifest: { from_seq: 1, to_seq: 3, included: [] },
};

describe('OpenAI-compatible model-turn function', () => {
  let server: FakeServer;
  const model = (timeoutMs = 5_000) =>
    createOpenAiCompatibleModel({
      baseUrl: `${server.url}/v1/`,
      apiKey: 'sk-test',
      model: 'gpt-4o-2024-08-06',
      timeoutMs,
      params: { temperature: 0 },
    });

  beforeAll(async () => {
    server = await startFakeServer();
  });
  afterAll(async () => {
    await server.close();
  });
  beforeEach(() => {
    server.received.length = 0;
  });

  it('posts messages and tools in OpenAI format to {base}/chat/completions and answers a text turn', async () => {
    server.reply({ status: 200, body: 'fixture:openai-chat-text.json' });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      message: {
        text: "To assist you with booking a flight, I'll need your user ID. Could you please provide that?",
      },
      tool_calls: [],
      finish_reason: 'stop',
      usage: { input_tokens: 1804, output_tokens: 21 },
      usage_fidelity: 'reported',
      call: {
        provider: 'openai-compatible',
        model_id: 'gpt-4o-2024-08-06',
        response_id: 'chatcmpl-9xJ8bT0fLq2m4ZkQwV1cRr7yHn3aP',
        attempts: 1,
      },
    });
    const request = server.received[0];
    expect(request?.url).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(JSON.parse(request?.body ?? '{}')).toEqual({
      temperature: 0,
      model: 'gpt-4o-2024-08-06',
      messages: [
        { role: 'system', content: '# Airline Agent Policy' },
        { role: 'user', content: 'Hi! My user id is mia_li_3668.' },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_user_details', arguments: '{"user_id":"mia_li_3668"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"name": "Mia"}' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_user_details',
            description: 'Get the details of an user.',
            parameters: input.request.tools_offered[0]?.schema,
          },
        },
      ],
    });
  });

  it('answers a tool-calls turn with parsed arguments and the provider call ids', async () => {
    server.reply({ status: 200, body: 'fixture:openai-chat-tool-calls.json' });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      message: { text: null },
      tool_calls: [
        {
          call_id: 'call_oIHazX6yQrB8hUwl4cRilFKj',
          name: 'get_user_details',
          args: { user_id: 'mia_li_3668' },
        },
      ],
      finish_reason: 'tool_calls',
      usage: { input_tokens: 1890, output_tokens: 19 },
    });
  });

  it('classifies HTTP 429 as rate_limited, retryable, keeping Retry-After and the provider code', async () => {
    server.reply({ status: 429, headers: { 'retry-after': '4' }, body: 'fixture:openai-rate-limit.json' });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      error_class: 'rate_limited',
      retryable: true,
      http_status: 429,
      retry_after_ms: 4000,
      provider_code: 'rate_limit_exceeded',
      call: { attempts: 1 },
    });
    expect((answer as { message: string }).message).toMatch(/^HTTP 429: Rate limit reached for gpt-4o/);
    expect(server.received).toHaveLength(1);
  });

  it('classifies HTTP 500 as transient, retryable, without retrying itself', async () => {
    server.reply({ status: 500, body: 'fixture:openai-server-error.json' });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'transient', retryable: true, http_status: 500 });
    expect(server.received).toHaveLength(1);
  });

  it('classifies HTTP 400 as invalid_request, not retryable', async () => {
    server.reply({
      status: 400,
      body: '{"error":{"message":"Invalid \'messages[3].tool_call_id\'","type":"invalid_request_error","code":null}}',
    });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'invalid_request', retryable: false, http_status: 400 });
  });

  it('gives up at the per-call deadline with timeout, retryable', async () => {
    server.reply({ status: 200, body: 'fixture:openai-chat-text.json', delayMs: 2_000 });

    const answer = await model(150)(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'timeout', retryable: true });
  });

  it('fails closed with invalid_response when tool call arguments are not a JSON object', async () => {
    const body = JSON.parse(fixture('openai-chat-tool-calls.json')) as {
      choices: { message: { tool_calls: { function: { arguments: string } }[] } }[];
    };
    const toolCall = body.choices[0]?.message.tool_calls[0];
    if (toolCall) toolCall.function.arguments = '{"user_id": "mia_li_3668"';
    server.reply({ status: 200, body: JSON.stringify(body) });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'invalid_response', retryable: true });
  });

  it('reports an unreachable server as transient, retryable', async () => {
    const unreachable = createOpenAiCompatibleModel({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm' });

    const answer = await unreachable(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'transient', retryable: true });
  });
});
