/**
 * The CDK app's context (cdk/context.ts, cdk/app.ts): a synth without a model is refused with
 * a message naming the context keys; `model=none` synthesizes; the example tools file
 * (examples/tools/tools.json) deploys its Lambda tool's function, registers the tool on the
 * control and step functions and grants the step function invoke on exactly that function.
 * The app runs as `cdk synth` runs it (a child process given the context in CDK_CONTEXT_JSON,
 * cdk-nag on, asset bundling skipped); the example's own bundle is built and called once.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../cdk/bundling.ts';
import { DeployContextError, stackPropsFromContext } from '../../cdk/context.ts';
import { deployToolFunctions } from '../../cdk/tools.ts';
import { normalizeToolResult } from '../../lib/core/tool-result-validation.ts';

type Resource = { Type: string; Properties?: Record<string, unknown> };

const repoRoot = fileURLToPath(REPO_ROOT);
const cdkJsonContext = JSON.parse(readFileSync(join(repoRoot, 'cdk.json'), 'utf8')).context as Record<
  string,
  unknown
>;
const EXAMPLE_TOOLS = 'examples/tools/tools.json';
const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-runs-deploy-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs cdk/app.ts the way the CDK CLI does, bundling skipped. */
function synth(context: Record<string, unknown>, outdir: string) {
  return spawnSync(process.execPath, [join(repoRoot, 'cdk/app.ts')], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '',
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJsonContext, 'aws:cdk:bundling-stacks': [], ...context }),
    },
  });
}

describe('a synth without a model', () => {
  it('is refused, naming the context keys that give a model and model=none', () => {
    const out = synth({}, tempDir());

    expect(out.status).toBe(1);
    expect(out.stderr).toContain('deploy_model_missing');
    for (const key of ['bedrockModelId', 'openAiBaseUrl', 'openAiModel', 'model=none']) {
      expect(out.stderr).toContain(key);
    }
  });

  it('refuses model=none beside a model, and any other model value (code and key)', () => {
    const refusal = (context: Record<string, unknown>) => {
      try {
        stackPropsFromContext((key) => context[key]);
      } catch (error) {
        return error instanceof DeployContextError ? { code: error.code, key: error.key } : error;
      }
      return undefined;
    };

    expect(refusal({ model: 'none', bedrockModelId: 'us.anthropic.claude-sonnet-4-6' })).toEqual({
      code: 'deploy_model_conflict',
      key: 'model',
    });
    expect(refusal({ model: 'bedrock' })).toEqual({ code: 'deploy_context_invalid', key: 'model' });
    expect(refusal({ openAiBaseUrl: 'https://api.openai.com/v1' })).toEqual({
      code: 'deploy_context_invalid',
      key: 'openAiModel',
    });
    expect(refusal({ bedrockModelId: 'us.anthropic.claude-sonnet-4-6' })).toBeUndefined();
    expect(
      refusal({ openAiBaseUrl: 'https://api.openai.com/v1', openAiModel: 'gpt-5.4-mini' }),
    ).toBeUndefined();
  });

  it('sets the tracing variables of every function from otelEndpoint and otelCaptureContent', () => {
    const model = { bedrockModelId: 'us.anthropic.claude-sonnet-4-6' };
    const props = (context: Record<string, unknown>) => stackPropsFromContext((key) => context[key]);
    expect(props(model).environment).toBeUndefined();
    expect(
      props({ ...model, otelEndpoint: 'http://localhost:4318', otelCaptureContent: 'true' }).environment,
    ).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318',
      AGENT_RUNS_OTEL_CAPTURE_CONTENT: 'true',
    });
    const refusal = (context: Record<string, unknown>) => {
      try {
        props({ ...model, ...context });
      } catch (error) {
        return error instanceof DeployContextError ? { code: error.code, key: error.key } : error;
      }
      return undefined;
    };
    expect(refusal({ otelEndpoint: 'localhost:4318' })).toEqual({
      code: 'deploy_context_invalid',
      key: 'otelEndpoint',
    });
    expect(refusal({ otelCaptureContent: 'true' })).toEqual({
      code: 'deploy_context_invalid',
      key: 'otelEndpoint',
    });
    expect(refusal({ otelEndpoint: 'http://localhost:4318', otelCaptureContent: 'yes' })).toEqual({
      code: 'deploy_context_invalid',
      key: 'otelCaptureContent',
    });
  });

  it("reads the live socket's bounds from liveMaxConnections, liveMaxSubscriptions, liveSubscribesPerMinute and liveReplay*", () => {
    const model = { bedrockModelId: 'us.anthropic.claude-sonnet-4-6' };
    const props = (context: Record<string, unknown>) => stackPropsFromContext((key) => context[key]);
    expect(props(model).liveBounds).toEqual({});
    expect(
      props({
        ...model,
        liveMaxConnections: '4',
        liveMaxSubscriptions: '8',
        liveSubscribesPerMinute: '30',
        liveReplayBytes: '1048576',
        liveReplayWindowMs: '5000',
      }).liveBounds,
    ).toEqual({
      maxConnections: 4,
      maxSubscriptions: 8,
      subscribesPerMinute: 30,
      replayBytes: 1048576,
      replayWindowMs: 5000,
    });
    expect(() => props({ ...model, liveMaxConnections: 'many' })).toThrow(/liveMaxConnections/);
  });

  it('refuses a tools file whose Lambda tool names a handler file that does not exist', () => {
    const dir = tempDir();
    const file = join(dir, 'tools.json');
    const tools = JSON.parse(readFileSync(join(repoRoot, EXAMPLE_TOOLS), 'utf8'));
    tools[0].target.code = 'missing/handler.ts';
    writeFileSync(file, JSON.stringify(tools));

    expect(() => stackPropsFromContext((key) => ({ model: 'none', toolsFile: file })[key])).toThrow(
      /toolsFile .*\[0\]\.target\.code: no file .*missing\/handler\.ts/,
    );
  });
});

describe('a synth with model=none and the example tools file', () => {
  let out: ReturnType<typeof synth>;
  let resources: Record<string, Resource>;
  const fnByService = (service: string) =>
    Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::Lambda::Function' &&
        (r.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables
          ?.POWERTOOLS_SERVICE_NAME === service,
    );
  const envOf = (r: Resource | undefined) =>
    (r?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};

  beforeAll(() => {
    const outdir = tempDir();
    out = synth({ model: 'none', toolsFile: EXAMPLE_TOOLS }, outdir);
    const template = JSON.parse(readFileSync(join(outdir, 'AgentRuns.template.json'), 'utf8'));
    resources = template.Resources;
  }, 120_000);

  it('synthesizes, with cdk-nag on, and configures no model', () => {
    expect(out.stderr).not.toContain('deploy_model_missing');
    expect(out.status).toBe(0);
    expect(envOf(fnByService('agent-runs-step'))).not.toHaveProperty('BEDROCK_MODEL_ID');
    expect(envOf(fnByService('agent-runs-step'))).not.toHaveProperty('OPENAI_MODEL');
  });

  it("deploys the tool's function from its code and registers the tool under that function's name", () => {
    const toolFunctions = Object.entries(resources).filter(
      ([id, r]) => r.Type === 'AWS::Lambda::Function' && id.startsWith('Tool0lookupairport'),
    );
    expect(toolFunctions).toHaveLength(1);
    const [toolId, tool] = toolFunctions[0] as [string, Resource];
    expect(tool.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Handler: 'index.handler',
      Architectures: ['arm64'],
      Timeout: 10,
    });
    for (const service of ['agent-runs-control', 'agent-runs-step']) {
      const text = JSON.stringify(envOf(fnByService(service)).AGENT_RUNS_TOOLS);
      expect(text).toContain('\\"name\\":\\"lookup_airport\\"');
      expect(text).toContain('\\"function_name\\":\\""');
      expect(text).toContain(JSON.stringify({ Ref: toolId }));
      expect(text).not.toContain('handler.ts');
    }
  });

  it('lets the step function invoke exactly that function', () => {
    const stepRole = JSON.stringify(fnByService('agent-runs-step')?.Properties?.Role);
    const roleId = /"Fn::GetAtt":\["([^"]+)"/.exec(stepRole)?.[1];
    const invokes = Object.values(resources)
      .filter(
        (r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles).includes(`"${roleId}"`),
      )
      .flatMap(
        (r) =>
          (r.Properties?.PolicyDocument as { Statement?: Array<Record<string, unknown>> } | undefined)
            ?.Statement ?? [],
      )
      .filter((s) => JSON.stringify(s.Action).includes('lambda:InvokeFunction'));
    const toolId = Object.keys(resources).find(
      (id) => id.startsWith('Tool0lookupairport') && resources[id]?.Type === 'AWS::Lambda::Function',
    );

    expect(invokes).toHaveLength(1);
    expect(JSON.stringify(invokes[0]?.Resource)).toContain(JSON.stringify({ Ref: toolId }));
  });
});

describe('the example tool, bundled as the stack bundles it', () => {
  let handler: (event: unknown) => Promise<unknown>;

  beforeAll(async () => {
    const outdir = tempDir();
    const app = new App({ outdir });
    const stack = new Stack(app, 'ToolBundle');
    const props = stackPropsFromContext(
      (key) => ({ model: 'none', toolsFile: EXAMPLE_TOOLS })[key],
      repoRoot,
    );
    deployToolFunctions(stack, props.tools ?? [], {
      logRetention: RetentionDays.ONE_DAY,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    app.synth();
    const asset = readdirSync(outdir).find((d) => d.startsWith('asset.'));
    if (asset === undefined) throw new Error('no bundled asset');
    handler = (await import(join(outdir, asset, 'index.mjs'))).handler;
  }, 60_000);

  const call = (args: Record<string, unknown>) =>
    handler({
      args,
      context: { run_id: 'r1', operation_id: 'op/1', principal: {}, attempt: 1, timeout_ms: 10_000 },
    });

  it('answers a known code with a succeeded envelope the runtime takes as is', async () => {
    const result = await call({ code: 'lhr' });
    const { envelope, refusal } = normalizeToolResult(result, 'op/1');

    expect(refusal).toBeUndefined();
    expect(envelope.legacy).toBeUndefined();
    expect(envelope.status).toBe('succeeded');
    expect(envelope.payload).toEqual({
      code: 'LHR',
      name: 'Heathrow Airport',
      city: 'London',
      country: 'GB',
      time_zone: 'Europe/London',
    });
  });

  it('answers an unknown code not_found and a malformed one invalid_input, as failed envelopes', async () => {
    const unknown = normalizeToolResult(await call({ code: 'ZZZ' }), 'op/2');
    const malformed = normalizeToolResult(await call({ code: 12 }), 'op/3');

    expect(unknown.refusal).toBeUndefined();
    expect(unknown.envelope).toMatchObject({ status: 'failed', error_class: 'not_found' });
    expect(unknown.envelope.diagnostics[0]?.code).toBe('airport_unknown');
    expect(malformed.refusal).toBeUndefined();
    expect(malformed.envelope).toMatchObject({ status: 'failed', error_class: 'invalid_input' });
    expect(malformed.envelope.diagnostics[0]?.path).toBe('/code');
  });
});
