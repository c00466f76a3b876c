/**
 * The stack's props from CDK context (`cdk synth -c key=value` or cdk.json), as cdk/app.ts
 * reads them. Kept apart from the app so a test can read a context without synthesizing.
 *
 * A deployment without a model is refused: every agent run would fail at its first model turn,
 * long after `cdk deploy` reported success. Give a model (`bedrockModelId`, or `openAiBaseUrl`
 * with `openAiModel`), or say `model=none` (runs that never ask a model: Starlark reducers,
 * client-driven loops; also `cdk destroy`).
 *
 * `toolsFile` names a JSON list of tools (lib/tools/configured.ts). A Lambda tool's target may
 * give `code` (a handler file, relative to the tools file) instead of `function_name`: the
 * stack then bundles that file into a function of its own and registers the tool under its name.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { RemovalPolicy } from 'aws-cdk-lib';
import { ENV } from '../lib/config.ts';
import type { AgentRunsStackProps, LiveBoundsProps } from './stack.ts';
import type { StackTool } from './tools.ts';

/** The context keys that configure a model, in the order the refusal names them. */
export const MODEL_CONTEXT_KEYS = ['bedrockModelId', 'openAiBaseUrl', 'openAiModel'] as const;

/**
 * A context value the app cannot use. `code`: `deploy_model_missing` (no model and no
 * `model=none`), `deploy_model_conflict` (`model=none` beside a model), or
 * `deploy_context_invalid`; `key` names the context key.
 */
export class DeployContextError extends Error {
  override name = 'DeployContextError';
  readonly code: 'deploy_model_missing' | 'deploy_model_conflict' | 'deploy_context_invalid';
  readonly key: string;
  constructor(code: DeployContextError['code'], key: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.key = key;
  }
}

/** Reads one context value; `undefined` when absent. */
export type ContextReader = (key: string) => unknown;

/**
 * The AgentRunsStackProps a context describes. `cwd` resolves a relative `toolsFile` (default
 * the process's). Throws DeployContextError (see its codes); a tool list out of shape is refused
 * later, by the stack (ToolConfigError).
 */
export function stackPropsFromContext(read: ContextReader, cwd: string = process.cwd()): AgentRunsStackProps {
  const context = (key: string): string | undefined => {
    const value = read(key);
    if (value === undefined || value === null || value === '') return undefined;
    return String(value);
  };
  const list = (key: string): string[] | undefined =>
    context(key)
      ?.split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  const integer = (key: string): number | undefined => {
    const text = context(key);
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n))
      throw new DeployContextError(
        'deploy_context_invalid',
        key,
        `context ${key} must be a whole number: ${text}`,
      );
    return n;
  };
  const optional = <K extends keyof AgentRunsStackProps>(
    key: K,
    value: AgentRunsStackProps[K] | undefined,
  ) => (value === undefined ? {} : { [key]: value });

  const stackName = context('stackName') ?? 'AgentRuns';
  const protect = context('deletionProtection') !== 'false';
  const openAiBaseUrl = context('openAiBaseUrl');
  const openAiModel = context('openAiModel');
  if ((openAiBaseUrl === undefined) !== (openAiModel === undefined)) {
    throw new DeployContextError(
      'deploy_context_invalid',
      openAiBaseUrl === undefined ? 'openAiBaseUrl' : 'openAiModel',
      'context openAiBaseUrl and openAiModel go together',
    );
  }
  checkModelGiven(context);
  const openAiApiKeySecret = context('openAiApiKeySecret');
  const toolsFile = context('toolsFile');
  const reserved = context('sweeperReservedConcurrency');
  /** A limit from context: a whole number, `none` for unlimited, absent for the default. */
  const limit = (key: string): number | null | undefined => (context(key) === 'none' ? null : integer(key));
  const riskTierFloor = context('riskTierFloor');
  if (riskTierFloor !== undefined && !['low', 'standard', 'high'].includes(riskTierFloor)) {
    throw new DeployContextError(
      'deploy_context_invalid',
      'riskTierFloor',
      `context riskTierFloor must be low, standard or high: ${riskTierFloor}`,
    );
  }
  const admission = {
    ...(limit('maxLiveRuns') !== undefined ? { maxLiveRuns: limit('maxLiveRuns') } : {}),
    ...(limit('maxCreatesPerMinute') !== undefined
      ? { maxCreatesPerMinute: limit('maxCreatesPerMinute') }
      : {}),
    ...(riskTierFloor !== undefined ? { riskTierFloor: riskTierFloor as 'low' | 'standard' | 'high' } : {}),
    ...(integer('maxChildrenPerRun') !== undefined
      ? { maxChildrenPerRun: integer('maxChildrenPerRun') }
      : {}),
    ...(integer('maxTreeDepth') !== undefined ? { maxTreeDepth: integer('maxTreeDepth') } : {}),
  };
  const liveBounds = Object.fromEntries(
    (
      [
        ['maxConnections', integer('liveMaxConnections')],
        ['maxSubscriptions', integer('liveMaxSubscriptions')],
        ['subscribesPerMinute', integer('liveSubscribesPerMinute')],
        ['replayBytes', integer('liveReplayBytes')],
        ['replayWindowMs', integer('liveReplayWindowMs')],
      ] as const
    ).filter(([, value]) => value !== undefined),
  ) as LiveBoundsProps;
  const issuer = context('consoleOAuthIssuer');
  const domainUrl = context('consoleOAuthDomain');
  const clientId = context('consoleOAuthClientId');
  const consoleOAuth =
    issuer !== undefined && domainUrl !== undefined && clientId !== undefined
      ? { issuer, domainUrl, clientId }
      : undefined;
  return {
    stackName,
    description: 'Agent Runs on AWS: durable, crash-safe runtime for AI agent runs',
    deletionProtection: protect,
    removalPolicy: protect ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    ...optional('jwtIssuer', context('jwtIssuer')),
    ...optional('jwtAudience', list('jwtAudience')),
    ...optional('iamAuth', context('iamAuth') === 'true' ? true : undefined),
    ...optional('bedrockModelIds', list('bedrockModelId')),
    ...optional('bedrockModelArns', list('bedrockModelArns')),
    ...optional(
      'openAi',
      openAiBaseUrl !== undefined && openAiModel !== undefined
        ? {
            baseUrl: openAiBaseUrl,
            model: openAiModel,
            ...(openAiApiKeySecret !== undefined ? { apiKeySecret: openAiApiKeySecret } : {}),
          }
        : undefined,
    ),
    ...optional('defaultModel', context('defaultModel')),
    ...optional('tools', toolsFile !== undefined ? readToolsFile(resolve(cwd, toolsFile)) : undefined),
    dataTools: {
      ...(list('toolFunctionArns') !== undefined ? { functionArns: list('toolFunctionArns') } : {}),
      ...(context('taggedToolFunctions') === 'true' ? { taggedFunctions: true } : {}),
      ...(list('toolSecretArns') !== undefined ? { secretArns: list('toolSecretArns') } : {}),
      ...(list('toolParameterNames') !== undefined ? { parameterNames: list('toolParameterNames') } : {}),
    },
    ...optional('stepMaxConcurrency', integer('stepMaxConcurrency')),
    ...optional(
      'sweeperReservedConcurrency',
      reserved === 'none' ? null : reserved !== undefined ? integer('sweeperReservedConcurrency') : undefined,
    ),
    ...optional('alarmTopicArn', context('alarmTopicArn')),
    ...optional('alarmEmail', context('alarmEmail')),
    ...optional('consoleOAuth', consoleOAuth),
    ...optional('consoleDomainPrefix', context('consoleDomainPrefix')),
    ...optional('environment', tracingEnvironment(context)),
    admission,
    liveBounds,
  };
}

/**
 * The tracing variables of every function (lib/telemetry/otel.ts): `otelEndpoint` becomes
 * OTEL_EXPORTER_OTLP_ENDPOINT (an http(s) URL: a collector, or the collector extension of the
 * ADOT Lambda layer at http://localhost:4318), `otelCaptureContent=true`
 * AGENT_RUNS_OTEL_CAPTURE_CONTENT. Undefined without an endpoint. Throws DeployContextError.
 */
function tracingEnvironment(
  context: (key: string) => string | undefined,
): Record<string, string> | undefined {
  const endpoint = context('otelEndpoint');
  const capture = context('otelCaptureContent');
  if (capture !== undefined && capture !== 'true' && capture !== 'false')
    throw new DeployContextError(
      'deploy_context_invalid',
      'otelCaptureContent',
      `context otelCaptureContent must be true or false: ${capture}`,
    );
  if (endpoint === undefined) {
    if (capture === 'true')
      throw new DeployContextError(
        'deploy_context_invalid',
        'otelEndpoint',
        'context otelCaptureContent=true needs otelEndpoint (where the spans go)',
      );
    return undefined;
  }
  if (!URL.canParse(endpoint) || !['http:', 'https:'].includes(new URL(endpoint).protocol))
    throw new DeployContextError(
      'deploy_context_invalid',
      'otelEndpoint',
      `context otelEndpoint must be an http(s) URL: ${endpoint}`,
    );
  return {
    [ENV.OTEL_EXPORTER_OTLP_ENDPOINT]: endpoint,
    ...(capture === 'true' ? { [ENV.AGENT_RUNS_OTEL_CAPTURE_CONTENT]: 'true' } : {}),
  };
}

/** Refuses a context with no model unless it says `model=none`, and `model=none` beside a model. */
function checkModelGiven(context: (key: string) => string | undefined): void {
  const model = context('model');
  if (model !== undefined && model !== 'none') {
    throw new DeployContextError(
      'deploy_context_invalid',
      'model',
      `context model takes only the value none (a model is given with ${MODEL_CONTEXT_KEYS.join(', ')}): ${model}`,
    );
  }
  const given = MODEL_CONTEXT_KEYS.filter((key) => context(key) !== undefined);
  if (model === 'none' && given.length > 0) {
    throw new DeployContextError(
      'deploy_model_conflict',
      'model',
      `context model=none contradicts ${given.join(', ')}: drop one of them`,
    );
  }
  if (model === undefined && given.length === 0) {
    throw new DeployContextError(
      'deploy_model_missing',
      'model',
      [
        'no model is configured, so every agent run would fail at its first model turn.',
        'Give one with -c bedrockModelId=<model or inference-profile id> (e.g. us.anthropic.claude-sonnet-4-6)',
        'or -c openAiBaseUrl=<url> -c openAiModel=<model>;',
        'or -c model=none to deploy without a model on purpose (Starlark reducers, client-driven loops, cdk destroy).',
      ].join(' '),
    );
  }
}

/**
 * Reads a tools file: a JSON list of tools; a Lambda tool's `target.code` is resolved against
 * the file's folder and must exist. Throws DeployContextError (key `toolsFile`) when the file
 * cannot be read, is not a JSON list, or names a missing handler file.
 */
export function readToolsFile(path: string): StackTool[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new DeployContextError(
      'deploy_context_invalid',
      'toolsFile',
      `context toolsFile ${path}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (!Array.isArray(json)) {
    throw new DeployContextError(
      'deploy_context_invalid',
      'toolsFile',
      `context toolsFile ${path}: not a JSON list`,
    );
  }
  return json.map((entry: unknown, i) => {
    const target = (entry as { target?: { kind?: unknown; code?: unknown } } | null)?.target;
    if (target?.kind !== 'lambda' || target.code === undefined) return entry as StackTool;
    if (typeof target.code !== 'string' || target.code === '') {
      throw new DeployContextError(
        'deploy_context_invalid',
        'toolsFile',
        `context toolsFile ${path}: [${i}].target.code must be a file path`,
      );
    }
    const code = resolve(dirname(path), target.code);
    if (!existsSync(code)) {
      throw new DeployContextError(
        'deploy_context_invalid',
        'toolsFile',
        `context toolsFile ${path}: [${i}].target.code: no file ${code}`,
      );
    }
    return { ...(entry as object), target: { ...target, code } } as StackTool;
  });
}
