import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CompiledContext, ModelTurnInput } from '../../lib/contracts/index.ts';
import { createBedrockModel, EMPTY_TEXT_PLACEHOLDER, toConverseRequest } from '../../lib/models/bedrock.ts';
import { type FakeServer, startFakeServer } from '../fixtures/models/fake-server.ts';

const MODEL_ID = 'anthropic.claude-3-5-sonnet-20240620-v1:0';

const input: ModelTurnInput = {
  run_id: 'r1',
  operation_id: 'r1/op/3',
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
    { role: 'user', content: 'Hi! I want to book a flight.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ call_id: 'call_1', name: 'get_user_details', args: { user_id: 'mia_li_3668' } }],
    },
    { role: 'tool', call_id: 'call_1', name: 'get_user_details', content: '' },
    { role: 'user', content: 'Anything else you need?' },
  ],
  manifest: { from_seq: 1, to_seq: 4, included: [] },
};

describe('Bedrock Converse model-turn function', () => {
  let server: FakeServer;
  const model = (timeoutMs = 5_000) =>
    createBedrockModel({
      modelId: MODEL_ID,
      region: 'us-east-1',
      endpoint: server.url,
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG' },
      timeoutMs,
    });

  beforeAll(async () => {
    server = await startFakeServer({ http2: true });
  });
  afterAll(async () => {
    await server.close();
  });
  beforeEach(() => {
    server.received.length = 0;
  });

  it('posts the transcript to /model/{modelId}/converse and answers a text turn with reported usage', async () => {
    server.reply({
      status: 200,
      body: 'fixture:bedrock-converse-text.json',
      headers: { 'x-amzn-requestid': 'req-1' },
    });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      message: {
        text: 'Your reservation 4WQ150 is confirmed: one passenger, economy, JFK to SEA on 2024-05-20.',
      },
      tool_calls: [],
      finish_reason: 'stop',
      raw_finish_reason: 'end_turn',
      usage: { input_tokens: 1843, output_tokens: 29 },
      usage_fidelity: 'reported',
      call: { provider: 'bedrock', model_id: MODEL_ID, attempts: 1, response_id: 'req-1' },
    });
    const request = server.received[0];
    expect(request?.method).toBe('POST');
    expect(decodeURIComponent(request?.url ?? '')).toBe(`/model/${MODEL_ID}/converse`);
    expect(request?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\//);
    const body = JSON.parse(request?.body ?? '{}');
    expect(body.system).toEqual([{ text: '# Airline Agent Policy' }]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ text: 'Hi! I want to book a flight.' }] },
      {
        role: 'assistant',
        content: [
          { toolUse: { toolUseId: 'call_1', name: 'get_user_details', input: { user_id: 'mia_li_3668' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'call_1', content: [{ text: EMPTY_TEXT_PLACEHOLDER }] } },
          { text: 'Anything else you need?' },
        ],
      },
    ]);
    expect(body.toolConfig.tools[0].toolSpec).toEqual({
      name: 'get_user_details',
      description: 'Get the details of an user.',
      inputSchema: { json: input.request.tools_offered[0]?.schema },
    });
  });

  it('answers a tool-use turn with the provider call ids and object inputs', async () => {
    server.reply({ status: 200, body: 'fixture:bedrock-converse-tool-use.json' });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      message: { text: "I'll look up your profile first." },
      tool_calls: [
        {
          call_id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q',
          name: 'get_user_details',
          args: { user_id: 'mia_li_3668' },
        },
      ],
      finish_reason: 'tool_calls',
      usage: { input_tokens: 1795, output_tokens: 64 },
    });
  });

  it('classifies a ThrottlingException (HTTP 429) as rate_limited, retryable, after exactly one attempt', async () => {
    server.reply({
      status: 429,
      headers: {
        'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/',
      },
      body: 'fixture:bedrock-throttling.json',
    });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      error_class: 'rate_limited',
      retryable: true,
      http_status: 429,
      provider_code: 'ThrottlingException',
      message: 'Too many requests, please wait before trying again.',
      call: { attempts: 1 },
    });
    expect(server.received).toHaveLength(1);
  });

  it('classifies an InternalServerException (HTTP 500) as transient, retryable', async () => {
    server.reply({
      status: 500,
      headers: { 'x-amzn-errortype': 'InternalServerException' },
      body: 'fixture:bedrock-internal-server.json',
    });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'transient', retryable: true, http_status: 500 });
    expect(server.received).toHaveLength(1);
  });

  it('classifies a ValidationException (HTTP 400) as invalid_request, not retryable', async () => {
    server.reply({
      status: 400,
      headers: { 'x-amzn-errortype': 'ValidationException' },
      body: 'fixture:bedrock-validation.json',
    });

    const answer = await model()(input, context, new AbortController().signal);

    expect(answer).toMatchObject({
      error_class: 'invalid_request',
      retryable: false,
      provider_code: 'ValidationException',
    });
  });

  it('gives up at the per-call deadline with timeout, retryable', async () => {
    server.reply({ status: 200, body: 'fixture:bedrock-converse-text.json', delayMs: 2_000 });

    const answer = await model(150)(input, context, new AbortController().signal);

    expect(answer).toMatchObject({ error_class: 'timeout', retryable: true });
  });

  it('reports a caller abort as cancelled, not retryable', async () => {
    server.reply({ status: 200, body: 'fixture:bedrock-converse-text.json', delayMs: 2_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);

    const answer = await model()(input, context, controller.signal);

    expect(answer).toMatchObject({ error_class: 'cancelled', retryable: false });
  });
});

describe('toConverseRequest', () => {
  it('declares the tools named in the transcript when none is offered (Converse needs a toolConfig)', () => {
    const request = toConverseRequest(MODEL_ID, context, []);
    expect(request.toolConfig?.tools).toEqual([
      { toolSpec: { name: 'get_user_details', inputSchema: { json: { type: 'object' } } } },
    ]);
  });

  it('leaves toolConfig out for a transcript without tools, and sends a blank assistant turn as placeholder text', () => {
    const request = toConverseRequest(
      MODEL_ID,
      {
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: '  ', tool_calls: [] },
          { role: 'user', content: 'hello?' },
        ],
        manifest: { from_seq: 1, to_seq: 3, included: [] },
      },
      [],
    );
    expect(request.toolConfig).toBeUndefined();
    expect(request.system).toBeUndefined();
    expect(request.messages?.[1]).toEqual({ role: 'assistant', content: [{ text: EMPTY_TEXT_PLACEHOLDER }] });
  });
});
