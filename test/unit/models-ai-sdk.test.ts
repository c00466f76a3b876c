/**
 * Model-turn functions over AI SDK providers configured as data (AGENT_RUNS_MODELS), each
 * against a local HTTP server speaking its wire format (no network): OpenAI-compatible chat
 * completions, Bedrock Converse, Anthropic Messages, Gemini generateContent. The contract's output (usage with
 * fidelity, finish reason, call info with attempts) and its error classes are the same as the
 * hand-written adapters'.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CompiledContext, ModelTurnInput } from '../../lib/contracts/index.ts';
import type { SecretReader } from '../../lib/models/api-key.ts';
import { ModelConfigError, modelsFromEnv } from '../../lib/models/configured.ts';
import { createModelHost } from '../../lib/models/host.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';
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

const signal = () => new AbortController().signal;

let server: FakeServer;
beforeAll(async () => {
  server = await startFakeServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.received.length = 0;
});

/** The one function AGENT_RUNS_MODELS configures with `entry`. */
function configured(
  entry: Record<string, unknown>,
  env: NodeJS.ProcessEnv = {},
  secrets?: SecretReader,
): ModelTurnFunction {
  const models = modelsFromEnv(
    { ...env, AGENT_RUNS_MODELS: JSON.stringify([entry]) },
    secrets !== undefined ? { secrets } : {},
  );
  const fn = models.functions[models.defaultPath ?? ''];
  if (fn === undefined) throw new Error('nothing configured');
  return fn;
}

const requestBody = (i = 0): Record<string, unknown> => JSON.parse(server.received[i]?.body ?? '{}');

describe('AI SDK openai-compatible model-turn function', () => {
  const model = () =>
    configured(
      {
        provider: 'openai-compatible',
        model: 'gpt-4o-2024-08-06',
        base_url: `${server.url}/v1`,
        api_key_env: 'MY_KEY',
      },
      { MY_KEY: 'sk-local' },
    );

  it('posts the transcript in chat-completions format and maps the tool calls and usage', async () => {
    server.reply({ status: 200, body: 'fixture:openai-chat-tool-calls.json' });

    const answer = await model()(input, context, signal());

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
      usage_fidelity: 'reported',
      call: {
        model_id: 'gpt-4o-2024-08-06',
        response_id: 'chatcmpl-9xJ8dWm2uNq0bHc7pKsE4LfYt1RgA',
        attempts: 1,
      },
    });
    expect(server.received[0]?.url).toBe('/v1/chat/completions');
    expect(server.received[0]?.headers.authorization).toBe('Bearer sk-local');
    const body = requestBody();
    expect(body.messages).toEqual([
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
    ]);
    expect(body.tools).toMatchObject([{ type: 'function', function: { name: 'get_user_details' } }]);
  });

  it('classifies 429 as rate_limited with Retry-After, and the host retries it visibly', async () => {
    server.reply({ status: 429, headers: { 'retry-after': '0' }, body: 'fixture:openai-rate-limit.json' });
    const first = await model()(input, context, signal());
    expect(first).toMatchObject({
      error_class: 'rate_limited',
      retryable: true,
      http_status: 429,
      retry_after_ms: 0,
    });

    server.reply(
      { status: 500, body: 'fixture:openai-server-error.json' },
      { status: 200, body: 'fixture:openai-chat-tool-calls.json' },
    );
    const host = createModelHost({ functions: { '/m': model() }, default: '/m', sleep: async () => {} });
    const answer = await host.turn(input, context, signal());
    expect(answer).toMatchObject({ finish_reason: 'tool_calls', host_attempts: 2, provider_calls: 2 });
  });

  it('answers cancelled when the caller aborts, and timeout when the deadline passes', async () => {
    server.reply({ status: 200, body: 'fixture:openai-chat-tool-calls.json', delayMs: 2_000 });
    const slow = configured({
      provider: 'openai-compatible',
      model: 'm',
      base_url: `${server.url}/v1`,
      timeout_ms: 100,
    });
    expect(await slow(input, context, signal())).toMatchObject({ error_class: 'timeout', retryable: true });

    const aborted = new AbortController();
    aborted.abort();
    expect(await slow(input, context, aborted.signal)).toMatchObject({
      error_class: 'cancelled',
      retryable: false,
    });
  });
});

describe('AI SDK amazon-bedrock model-turn function', () => {
  const aws = {
    AWS_ACCESS_KEY_ID: 'AKIDLOCAL',
    AWS_SECRET_ACCESS_KEY: 'local-secret',
    AWS_REGION: 'us-east-1',
  };
  const model = () => {
    const saved = { ...process.env };
    Object.assign(process.env, aws); // the SDK's default credential chain reads the environment
    try {
      return configured(
        {
          provider: 'amazon-bedrock',
          model: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
          base_url: server.url,
        },
        aws,
      );
    } finally {
      process.env = saved;
    }
  };

  it('calls Converse signed with SigV4 and maps text, tool use, stop reason and usage', async () => {
    Object.assign(process.env, aws);
    server.reply({ status: 200, body: 'fixture:bedrock-converse-tool-use.json' });

    const answer = await model()(input, context, signal());

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
      usage_fidelity: 'reported',
      raw_finish_reason: 'tool_use',
    });
    const request = server.received[0];
    expect(request?.url).toBe(
      `/model/${encodeURIComponent('anthropic.claude-3-5-sonnet-20240620-v1:0')}/converse`,
    );
    expect(String(request?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDLOCAL\//);
    const body = requestBody();
    expect(body.system).toEqual([{ text: '# Airline Agent Policy' }]);
    expect(body.toolConfig).toMatchObject({ tools: [{ toolSpec: { name: 'get_user_details' } }] });
  });

  it('classifies a ThrottlingException as rate_limited with its provider code', async () => {
    Object.assign(process.env, aws);
    server.reply({
      status: 429,
      headers: {
        'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/',
      },
      body: 'fixture:bedrock-throttling.json',
    });
    const answer = await model()(input, context, signal());
    expect(answer).toMatchObject({
      error_class: 'rate_limited',
      retryable: true,
      http_status: 429,
      provider_code: 'ThrottlingException',
    });
  });
});

describe('AI SDK anthropic model-turn function', () => {
  const secrets = (value: unknown): SecretReader & { reads: string[] } => {
    const reads: string[] = [];
    return {
      reads,
      async get(name) {
        reads.push(name);
        if (value instanceof Error) throw value;
        return value;
      },
    };
  };
  const model = (reader: SecretReader) =>
    configured(
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        base_url: `${server.url}/v1`,
        api_key_secret: 'prod/anthropic',
      },
      {},
      reader,
    );

  it('posts to /v1/messages with the key from the secret and maps tool_use', async () => {
    const reader = secrets('{"api_key":"sk-ant-local"}');
    server.reply({ status: 200, body: 'fixture:anthropic-messages-tool-use.json' });

    const answer = await model(reader)(input, context, signal());

    expect(answer).toMatchObject({
      message: { text: "I'll look up your profile first." },
      tool_calls: [
        {
          call_id: 'toolu_01A09q90qw90lq917835lq9',
          name: 'get_user_details',
          args: { user_id: 'mia_li_3668' },
        },
      ],
      finish_reason: 'tool_calls',
      usage: { input_tokens: 1795, output_tokens: 64 },
      usage_fidelity: 'reported',
      call: { response_id: 'msg_01XFDUDYJgAACzvnptvVoYEL', attempts: 1 },
    });
    expect(reader.reads).toEqual(['prod/anthropic']);
    const request = server.received[0];
    expect(request?.url).toBe('/v1/messages');
    expect(request?.headers['x-api-key']).toBe('sk-ant-local');
    const body = requestBody();
    expect(body.system).toMatchObject([{ type: 'text', text: '# Airline Agent Policy' }]);
    expect(body.messages).toMatchObject([
      { role: 'user' },
      {
        role: 'assistant',
        content: [{ type: 'text' }, { type: 'tool_use', id: 'call_1', input: { user_id: 'mia_li_3668' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1' }] },
    ]);
  });

  it('classifies 429 by its error type, 401 as auth, and a missing secret as auth without a request', async () => {
    server.reply(
      { status: 429, headers: { 'retry-after': '7' }, body: 'fixture:anthropic-rate-limit.json' },
      {
        status: 401,
        body: '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
      },
    );
    const fn = model(secrets('sk-ant-local'));
    expect(await fn(input, context, signal())).toMatchObject({
      error_class: 'rate_limited',
      provider_code: 'rate_limit_error',
      retry_after_ms: 7_000,
    });
    expect(await fn(input, context, signal())).toMatchObject({
      error_class: 'auth',
      retryable: false,
      http_status: 401,
    });

    const missing = Object.assign(new Error('no such secret'), { name: 'ResourceNotFoundException' });
    const before = server.received.length;
    expect(await model(secrets(missing))(input, context, signal())).toMatchObject({
      error_class: 'auth',
      retryable: false,
    });
    expect(server.received.length).toBe(before);
  });
});

describe('AI SDK google model-turn function', () => {
  const model = (entry: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}) =>
    configured(
      { provider: 'google', model: 'gemini-2.5-flash', base_url: `${server.url}/v1beta`, ...entry },
      {
        GOOGLE_GENERATIVE_AI_API_KEY: 'AIza-local',
        ...env,
      },
    );

  it('posts the transcript to generateContent with the key header and maps a text answer', async () => {
    server.reply({ status: 200, body: 'fixture:gemini-generate-text.json' });

    const answer = await model()(input, context, signal());

    expect(answer).toMatchObject({
      message: {
        text: 'Hi Mia! Your profile shows a gold membership. How can I help with your reservation?',
      },
      tool_calls: [],
      finish_reason: 'stop',
      raw_finish_reason: 'STOP',
      usage: { input_tokens: 1812, output_tokens: 19 },
      usage_fidelity: 'reported',
      call: {
        provider: 'google.generative-ai',
        model_id: 'gemini-2.5-flash',
        response_id: 'mK5vaKGxNsW1nvgP3Ky02Ac',
        attempts: 1,
      },
    });
    const request = server.received[0];
    expect(request?.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(request?.headers['x-goog-api-key']).toBe('AIza-local');
    const body = requestBody();
    expect(body.systemInstruction).toEqual({ parts: [{ text: '# Airline Agent Policy' }] });
    expect(body.contents).toMatchObject([
      { role: 'user', parts: [{ text: 'Hi! My user id is mia_li_3668.' }] },
      {
        role: 'model',
        parts: [
          { text: 'Let me check.' },
          { functionCall: { name: 'get_user_details', args: { user_id: 'mia_li_3668' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          {
            functionResponse: {
              name: 'get_user_details',
              response: { name: 'get_user_details', content: '{"name": "Mia"}' },
            },
          },
        ],
      },
    ]);
    expect(body.tools).toMatchObject([{ functionDeclarations: [{ name: 'get_user_details' }] }]);
  });

  it('maps a function call to a tool call, with thinking tokens counted as output', async () => {
    const reads: string[] = [];
    const reader: SecretReader = {
      async get(name) {
        reads.push(name);
        return 'AIza-from-secret';
      },
    };
    server.reply({ status: 200, body: 'fixture:gemini-generate-function-call.json' });
    const fn = configured(
      {
        provider: 'google',
        model: 'gemini-2.5-flash',
        base_url: `${server.url}/v1beta`,
        api_key_secret: 'prod/gemini',
      },
      {},
      reader,
    );

    const answer = await fn(input, context, signal());

    expect(answer).toMatchObject({
      message: { text: "I'll look up your profile first." },
      tool_calls: [{ name: 'get_user_details', args: { user_id: 'mia_li_3668' } }],
      finish_reason: 'tool_calls',
      raw_finish_reason: 'STOP',
      usage: { input_tokens: 1795, output_tokens: 24 + 40 },
      usage_fidelity: 'reported',
    });
    // Gemini's functionCall carries no id here; the provider names the call.
    expect((answer as { tool_calls: { call_id: string }[] }).tool_calls[0]?.call_id).toMatch(/^\S+$/);
    expect(reads).toEqual(['prod/gemini']);
    expect(server.received[0]?.headers['x-goog-api-key']).toBe('AIza-from-secret');
  });

  it('replays a Gemini 3 function call with the skip sentinel, as the transcript keeps no thought signature', async () => {
    server.reply({ status: 200, body: 'fixture:gemini-generate-text.json' });

    const answer = await model({ model: 'gemini-3.1-pro-preview' })(input, context, signal());

    expect(answer).toMatchObject({ finish_reason: 'stop', usage_fidelity: 'reported' });
    expect(server.received[0]?.url).toBe('/v1beta/models/gemini-3.1-pro-preview:generateContent');
    const contents = requestBody().contents as { role: string; parts: Record<string, unknown>[] }[];
    expect(contents[1]?.parts[1]).toMatchObject({
      functionCall: { name: 'get_user_details' },
      thoughtSignature: 'skip_thought_signature_validator',
    });
  });

  it('estimates usage when the answer carries no usageMetadata', async () => {
    const text = JSON.parse(fixture('gemini-generate-text.json')) as Record<string, unknown>;
    delete text.usageMetadata;
    server.reply({ status: 200, body: JSON.stringify(text) });

    const answer = await model()(input, context, signal());

    expect(answer).toMatchObject({ finish_reason: 'stop', usage_fidelity: 'estimated' });
    const { usage } = answer as { usage: { input_tokens: number; output_tokens: number } };
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.output_tokens).toBeGreaterThan(0);
  });

  it('classifies RESOURCE_EXHAUSTED as rate_limited with its RetryInfo delay, and UNAVAILABLE as transient', async () => {
    server.reply(
      { status: 429, body: 'fixture:gemini-resource-exhausted.json' },
      { status: 503, body: 'fixture:gemini-unavailable.json' },
    );
    const fn = model();
    expect(await fn(input, context, signal())).toMatchObject({
      error_class: 'rate_limited',
      retryable: true,
      http_status: 429,
      provider_code: 'RESOURCE_EXHAUSTED',
      retry_after_ms: 37_000,
    });
    expect(await fn(input, context, signal())).toMatchObject({
      error_class: 'transient',
      retryable: true,
      http_status: 503,
      provider_code: 'UNAVAILABLE',
    });

    server.reply(
      { status: 503, body: 'fixture:gemini-unavailable.json' },
      { status: 200, body: 'fixture:gemini-generate-function-call.json' },
    );
    const host = createModelHost({ functions: { '/m': fn }, default: '/m', sleep: async () => {} });
    const answer = await host.turn(input, context, signal());
    expect(answer).toMatchObject({ finish_reason: 'tool_calls', host_attempts: 2, provider_calls: 2 });
  });

  it('classifies a refused key (400 INVALID_ARGUMENT, as Gemini answers) as invalid_request', async () => {
    server.reply({
      status: 400,
      body: '{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}',
    });
    expect(await model()(input, context, signal())).toMatchObject({
      error_class: 'invalid_request',
      retryable: false,
      provider_code: 'INVALID_ARGUMENT',
    });
  });
});

describe('AGENT_RUNS_MODELS', () => {
  it('serves each entry at its path, the first as the default, and names each in models', () => {
    const out = modelsFromEnv({
      AGENT_RUNS_MODELS: JSON.stringify([
        { provider: 'anthropic', model: 'claude-sonnet-4-5' },
        { provider: 'google', model: 'gemini-2.5-flash' },
        {
          provider: 'openai-compatible',
          model: 'llama3',
          base_url: 'http://127.0.0.1:11434/v1',
          path: '/lib/models/ollama',
        },
      ]),
    });
    expect(out.defaultPath).toBe('/lib/models/anthropic/claude-sonnet-4-5');
    expect(Object.keys(out.functions).sort()).toEqual([
      '/lib/models/anthropic/claude-sonnet-4-5',
      '/lib/models/google/gemini-2.5-flash',
      '/lib/models/ollama',
      '/lib/raisin/ai/agent-run-model-turn',
    ]);
    expect(out.models).toEqual([
      {
        path: '/lib/models/anthropic/claude-sonnet-4-5',
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        key: 'environment ANTHROPIC_API_KEY',
      },
      {
        path: '/lib/models/google/gemini-2.5-flash',
        provider: 'google',
        model: 'gemini-2.5-flash',
        key: 'environment GOOGLE_GENERATIVE_AI_API_KEY',
      },
      { path: '/lib/models/ollama', provider: 'openai-compatible', model: 'llama3', key: 'none' },
    ]);
  });

  it('refuses an entry it cannot mean, naming the entry and field', () => {
    const refuse = (models: unknown) => () => modelsFromEnv({ AGENT_RUNS_MODELS: JSON.stringify(models) });
    expect(refuse([{ provider: 'openai-compatible', model: 'm' }])).toThrow(
      /AGENT_RUNS_MODELS: \[0\]\.base_url/,
    );
    expect(refuse([{ provider: 'gemini', model: 'm' }])).toThrow(/\[0\]\.provider/);
    expect(refuse([{ provider: 'anthropic', model: 'm', api_key: 'sk-inline' }])).toThrow(/api_key/);
    expect(
      refuse([
        { provider: 'anthropic', model: 'm' },
        { provider: 'anthropic', model: 'm' },
      ]),
    ).toThrow(/configured twice/);
    expect(() => modelsFromEnv({ AGENT_RUNS_MODELS: '{' })).toThrow(ModelConfigError);
  });
});
