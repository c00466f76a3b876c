/**
 * Every environment variable the CDK stack sets on any function is in the configuration schema
 * (lib/config.ts): the stack is synthesized with every option that sets variables on (models,
 * AI SDK models, tools, tracing, admission, the console, live), and each function's variables
 * are looked up by name.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../cdk/bundling.ts';
import { stackPropsFromContext } from '../../cdk/context.ts';
import { AgentRunsStack } from '../../cdk/stack.ts';
import { configFromEnv, NAMES } from '../../lib/config.ts';

const cdkJson = JSON.parse(readFileSync(join(fileURLToPath(REPO_ROOT), 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown>;
};
const outdir = mkdtempSync(join(tmpdir(), 'agent-runs-config-env-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** Each Lambda function's environment variables of a stack with every variable-setting option on. */
function functionEnvironments(): Array<Record<string, unknown>> {
  const context: Record<string, string> = {
    model: 'none',
    otelEndpoint: 'http://localhost:4318',
    otelCaptureContent: 'true',
  };
  const fromContext = stackPropsFromContext((key) => context[key]);
  const app = new App({
    outdir: join(outdir, 'cdk.out'),
    builtinCloudFormationValidation: false,
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] },
  });
  const stack = new AgentRunsStack(app, 'ConfigEnvTest', {
    ...fromContext,
    bedrockModelIds: ['anthropic.claude-3-5-sonnet-20240620-v1:0'],
    openAi: { baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini' },
    aiSdkModels: [{ provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_secret: 'prod/anthropic' }],
    defaultModel: 'bedrock',
    tools: [
      {
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        target: { kind: 'lambda', function_name: 'lookup' },
      },
    ],
    admission: { maxChildrenPerRun: 8, maxTreeDepth: 3, maxQueuedSteers: 16 },
    liveBounds: { maxConnections: 4, maxSubscriptions: 8, subscribesPerMinute: 30 },
    jwtIssuer: 'https://issuer.example.com/',
    jwtAudience: ['agent-runs-api'],
  });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<
    string,
    { Type: string; Properties?: { Environment?: { Variables?: Record<string, unknown> } } }
  >;
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::Lambda::Function')
    .map((r) => r.Properties?.Environment?.Variables ?? {});
}

describe('the CDK stack and the configuration schema', () => {
  it('sets no environment variable the schema does not know', { timeout: 120_000 }, () => {
    const environments = functionEnvironments();
    const set = new Set(environments.flatMap((vars) => Object.keys(vars)));

    // The premise: the functions were found and the options did set their variables.
    expect(environments.length).toBeGreaterThanOrEqual(5);
    for (const name of [
      'TABLE_NAME',
      'LIVE_CALLBACK_URL',
      'JWT_AUDIENCES',
      'EVENT_BUS_NAME',
      'CONSOLE_CONFIG',
      'AGENT_RUNS_TOOLS',
      'AGENT_RUNS_MODELS',
      'BEDROCK_MODEL_ID',
      'OPENAI_API_KEY_SECRET',
      'AGENT_RUNS_DEFAULT_MODEL',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'AGENT_RUNS_MAX_QUEUED_STEERS',
      'AGENT_RUNS_SWEEP_INTERVAL_MS',
    ])
      expect(set, name).toContain(name);
    expect([...set].filter((name) => !(NAMES as string[]).includes(name))).toEqual([]);
  });

  it('sets literal values the schema parses, as each function will at start', { timeout: 120_000 }, () => {
    for (const vars of functionEnvironments()) {
      // References (names, URLs of the stack's resources) resolve at deploy time.
      const literal = Object.fromEntries(
        Object.entries(vars).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      );
      expect(() => configFromEnv(literal)).not.toThrow();
    }
  });
});
