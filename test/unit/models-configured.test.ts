/**
 * The model-turn functions a deployment configures by environment (lib/models/configured.ts):
 * Bedrock Converse and an OpenAI-compatible endpoint wired for real, against local HTTP servers
 * standing in for Bedrock Runtime, the chat-completions endpoint and Secrets Manager (the AWS
 * SDK is pointed at them by its own AWS_ENDPOINT_URL_* variables), and a run choosing among
 * them with executor_config.model_turn_function.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type CompiledContext,
  DEFAULT_MODEL_TURN_FUNCTION,
  type ModelTurnInput,
} from '../../lib/contracts/index.ts';
import { modelBannerLines } from '../../lib/local/banner.ts';
import { MODEL_PATHS, ModelConfigError, modelsFromEnv } from '../../lib/models/configured.ts';
import { createModelHost } from '../../lib/models/host.ts';
import { type FakeServer, startFakeServer } from '../fixtures/models/fake-server.ts';

const SONNET = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const HAIKU = 'anthropic.claude-3-haiku-20240307-v1:0';

const context: CompiledContext = {
  messages: [{ role: 'user', content: 'Hello' }],
  manifest: { from_seq: 1, to_seq: 1, included: [] },
};

function input(executor_config: Record<string, unknown> = {}): ModelTurnInput {
  return {
    run_id: 'r1',
    operation_id: 'r1/op/1',
    attempt: 1,
    subject: { workspace: 'ai', path: '/chats/c1' },
    executor_config,
    request: { tools_offered: [], tool_results: [] },
  };
}

const signal = () => new AbortController().signal;

let bedrock: FakeServer;
let chat: FakeServer;
let secrets: FakeServer;

beforeAll(async () => {
  bedrock = await startFakeServer({ http2: true });
  chat = await startFakeServer();
  secrets = await startFakeServer();
});
afterAll(async () => {
  await Promise.all([bedrock.close(), chat.close(), secrets.close()]);
});
beforeEach(() => {
  for (const server of [bedrock, chat, secrets]) server.received.length = 0;
  // The SDK clients read region, credentials and service endpoints from the process environment.
  vi.stubEnv('AWS_REGION', 'us-east-1');
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'wJalrXUtnFEMI/K7MDENG');
  vi.stubEnv('AWS_ENDPOINT_URL_BEDROCK_RUNTIME', bedrock.url);
  vi.stubEnv('AWS_ENDPOINT_URL_SECRETS_MANAGER', secrets.url);
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('Bedrock from BEDROCK_MODEL_ID', () => {
  it('serves each model id at its own path, the first also at /lib/models/bedrock and as the default', async () => {
    const configured = modelsFromEnv({ BEDROCK_MODEL_ID: `${SONNET}, ${HAIKU}` });
    expect(configured.defaultPath).toBe(MODEL_PATHS.bedrock);
    expect(Object.keys(configured.functions).sort()).toEqual(
      [
        DEFAULT_MODEL_TURN_FUNCTION,
        MODEL_PATHS.bedrock,
        `${MODEL_PATHS.bedrock}/${SONNET}`,
        `${MODEL_PATHS.bedrock}/${HAIKU}`,
      ].sort(),
    );
    const host = createModelHost({ functions: configured.functions, default: configured.defaultPath });
    bedrock.reply(
      { status: 200, body: 'fixture:bedrock-converse-text.json' },
      { status: 200, body: 'fixture:bedrock-converse-text.json' },
    );

    const byDefault = await host.turn(input(), context, signal());
    const chosen = await host.turn(
      input({ model_turn_function: `${MODEL_PATHS.bedrock}/${HAIKU}` }),
      context,
      signal(),
    );

    expect(byDefault).toMatchObject({
      finish_reason: 'stop',
      call: { provider: 'bedrock', model_id: SONNET },
    });
    expect(chosen).toMatchObject({ call: { provider: 'bedrock', model_id: HAIKU } });
    expect(bedrock.received.map((r) => decodeURIComponent(r.url))).toEqual([
      `/model/${SONNET}/converse`,
      `/model/${HAIKU}/converse`,
    ]);
    // Signed with the environment's credentials, as in Lambda.
    expect(String(bedrock.received[0]?.headers.authorization)).toContain('Credential=AKIDEXAMPLE/');
  });

  it('refuses a model id that is not one', () => {
    expect(() => modelsFromEnv({ BEDROCK_MODEL_ID: 'has space' })).toThrow(ModelConfigError);
    expect(() => modelsFromEnv({ BEDROCK_MODEL_ID: 'has space' })).toThrow(/BEDROCK_MODEL_ID/);
  });
});

describe('OpenAI-compatible with its key in Secrets Manager', () => {
  const env = (extra: Record<string, string> = {}) => ({
    OPENAI_BASE_URL: `${chat.url}/v1`,
    OPENAI_MODEL: 'gpt-test',
    OPENAI_API_KEY_SECRET: 'agent-runs/openai-api-key',
    ...extra,
  });

  it('reads the secret through Powertools Parameters on the first turn and caches it', async () => {
    secrets.reply({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ Name: 'agent-runs/openai-api-key', SecretString: 'sk-from-the-secret' }),
    });
    chat.reply(
      { status: 200, body: 'fixture:openai-chat-text.json' },
      { status: 200, body: 'fixture:openai-chat-text.json' },
    );
    const configured = modelsFromEnv(env());
    expect(configured.models).toEqual([
      {
        path: MODEL_PATHS.openai,
        provider: 'openai-compatible',
        model: 'gpt-test',
        key: 'secret agent-runs/openai-api-key',
      },
    ]);
    // Nothing is read before a turn needs the key.
    expect(secrets.received).toHaveLength(0);
    const host = createModelHost({ functions: configured.functions, default: configured.defaultPath });

    const first = await host.turn(input(), context, signal());
    const second = await host.turn(input(), context, signal());

    expect(first).toMatchObject({ call: { provider: 'openai-compatible', model_id: 'gpt-test' } });
    expect(second).toMatchObject({ call: { provider: 'openai-compatible' } });
    expect(secrets.received).toHaveLength(1);
    expect(secrets.received[0]?.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    expect(JSON.parse(secrets.received[0]?.body ?? '{}')).toEqual({ SecretId: 'agent-runs/openai-api-key' });
    expect(chat.received.map((r) => r.headers.authorization)).toEqual([
      'Bearer sk-from-the-secret',
      'Bearer sk-from-the-secret',
    ]);
  });

  it('takes the api_key field of a JSON secret', async () => {
    secrets.reply({
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ SecretString: JSON.stringify({ api_key: 'sk-json' }) }),
    });
    chat.reply({ status: 200, body: 'fixture:openai-chat-text.json' });
    const configured = modelsFromEnv(env());
    await createModelHost({ functions: configured.functions }).turn(input(), context, signal());
    expect(chat.received[0]?.headers.authorization).toBe('Bearer sk-json');
  });

  it('fails the turn as auth, without calling the model, when the secret does not exist', async () => {
    secrets.reply({
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({
        __type: 'ResourceNotFoundException',
        Message: "Secrets Manager can't find the specified secret.",
      }),
    });
    const configured = modelsFromEnv(env());
    const answer = await createModelHost({ functions: configured.functions }).turn(
      input(),
      context,
      signal(),
    );
    expect(answer).toMatchObject({ error_class: 'auth', retryable: false });
    expect((answer as { message: string }).message).toContain('ResourceNotFoundException');
    expect(chat.received).toHaveLength(0);
  });
});

describe('choosing among the configured models', () => {
  it('defaults to Bedrock when both are configured, and a run picks OpenAI through executor_config', async () => {
    bedrock.reply({ status: 200, body: 'fixture:bedrock-converse-text.json' });
    chat.reply({ status: 200, body: 'fixture:openai-chat-text.json' });
    const configured = modelsFromEnv({
      BEDROCK_MODEL_ID: SONNET,
      OPENAI_BASE_URL: chat.url,
      OPENAI_MODEL: 'gpt-test',
      OPENAI_API_KEY: 'sk-plain',
    });
    const host = createModelHost({ functions: configured.functions, default: configured.defaultPath });

    const byDefault = await host.turn(input(), context, signal());
    const chosen = await host.turn(input({ model_turn_function: MODEL_PATHS.openai }), context, signal());
    const unknown = await host.turn(input({ model_turn_function: '/lib/models/none' }), context, signal());

    expect(byDefault).toMatchObject({ call: { provider: 'bedrock' } });
    expect(chosen).toMatchObject({ call: { provider: 'openai-compatible' } });
    expect(unknown).toMatchObject({ error_class: 'model_turn_function_not_found' });
    expect(chat.received[0]?.headers.authorization).toBe('Bearer sk-plain');
  });

  it('makes AGENT_RUNS_DEFAULT_MODEL the default, also at the contract default path', () => {
    const configured = modelsFromEnv({
      BEDROCK_MODEL_ID: SONNET,
      OPENAI_BASE_URL: chat.url,
      OPENAI_MODEL: 'gpt-test',
      AGENT_RUNS_DEFAULT_MODEL: 'openai',
    });
    expect(configured.defaultPath).toBe(MODEL_PATHS.openai);
    expect(configured.functions[DEFAULT_MODEL_TURN_FUNCTION]).toBe(configured.functions[MODEL_PATHS.openai]);
  });

  it('configures nothing from an empty environment', () => {
    expect(modelsFromEnv({})).toEqual({ functions: {}, models: [], defaultPath: undefined });
  });

  it.each([
    [{ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }, 'OPENAI_MODEL'],
    [{ OPENAI_MODEL: 'gpt' }, 'OPENAI_BASE_URL'],
    [{ OPENAI_BASE_URL: 'ftp://x', OPENAI_MODEL: 'gpt' }, 'OPENAI_BASE_URL'],
    [
      { OPENAI_BASE_URL: 'http://x', OPENAI_MODEL: 'gpt', OPENAI_API_KEY: 'k', OPENAI_API_KEY_SECRET: 's' },
      'OPENAI_API_KEY_SECRET',
    ],
    [{ BEDROCK_MODEL_ID: SONNET, AGENT_RUNS_DEFAULT_MODEL: 'openai' }, 'AGENT_RUNS_DEFAULT_MODEL'],
    [
      { OPENAI_BASE_URL: 'http://x', OPENAI_MODEL: 'gpt', OPENAI_API_KEY_MAX_AGE_SECONDS: '-1' },
      'OPENAI_API_KEY_MAX_AGE_SECONDS',
    ],
  ])('refuses the contradictory configuration %j, naming %s', (env, variable) => {
    let thrown: unknown;
    try {
      modelsFromEnv(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ModelConfigError);
    expect(thrown).toMatchObject({ code: 'model_config_invalid', variable });
  });
});

describe('the local stack banner', () => {
  it('names each configured model-turn function and the default', () => {
    const configured = modelsFromEnv({
      BEDROCK_MODEL_ID: SONNET,
      OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
      OPENAI_MODEL: 'llama3',
      AGENT_RUNS_DEFAULT_MODEL: 'openai',
    });
    const lines = modelBannerLines({ models: configured.models, defaultPath: MODEL_PATHS.openai });
    expect(lines).toEqual([
      `  models: /lib/models/bedrock/${SONNET}  bedrock ${SONNET}`,
      `          /lib/models/bedrock  bedrock ${SONNET}`,
      '          /lib/models/openai  openai-compatible llama3 (key: none)',
      '          default (a run that names no executor_config.model_turn_function): /lib/models/openai',
    ]);
  });

  it('says how to configure a model when none is', () => {
    const lines = modelBannerLines({ models: [], defaultPath: DEFAULT_MODEL_TURN_FUNCTION });
    expect(lines.join('\n')).toContain('none configured');
    expect(lines.join('\n')).toContain('BEDROCK_MODEL_ID');
  });
});
