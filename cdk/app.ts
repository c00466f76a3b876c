/**
 * The CDK app (`cdk.json`: `node cdk/app.ts`): one AgentRunsStack, checked by cdk-nag's
 * AwsSolutions pack during synthesis (a violation that is not acknowledged fails `cdk synth`).
 * Environment-agnostic: no account, region or lookups, so `cdk synth` runs without credentials.
 *
 * Options come from context (`cdk synth -c key=value` or cdk.json):
 * - `stackName`            CloudFormation stack name (default `AgentRuns`)
 * - `jwtIssuer`            an existing JWT issuer URL (with `jwtAudience`) instead of the Cognito
 *                          user pool the stack creates by default
 * - `jwtAudience`          comma-separated audiences
 * - `iamAuth`              `true`: also an IAM (SigV4) API for service callers
 * - `bedrockModelId`       comma-separated Bedrock model or inference-profile ids (the first is the default model)
 * - `bedrockModelArns`     comma-separated further Bedrock model ARNs the step function may invoke
 * - `openAiBaseUrl`, `openAiModel`  an OpenAI-compatible endpoint; `openAiApiKeySecret` the
 *                          Secrets Manager secret (name or full ARN) of its key, else one is created
 * - `defaultModel`         `bedrock`, `openai` or a model path
 * - `toolsFile`            a JSON file with the tools to register (lib/tools/configured.ts)
 * - `stepMaxConcurrency`   maximum concurrent step functions (default 10)
 * - `sweeperReservedConcurrency`  `none` to reserve no concurrency for the sweeper (default 1)
 * - `alarmTopicArn`        SNS topic ARN the alarms notify (default: a topic the stack creates)
 * - `alarmEmail`           an email address the created alarm topic notifies
 * - `consoleOAuthIssuer`, `consoleOAuthDomain`, `consoleOAuthClientId`: the web console signs in
 *                          through this Cognito hosted UI (issuer URL, hosted UI base URL, app
 *                          client id); without them the console asks for a pasted token
 * - `consoleDomainPrefix`  instead: give the user pool the stack creates a hosted UI at this
 *                          (free, lowercase) Cognito domain prefix and a console app client
 * - `deletionProtection`   `false` to turn deletion protection off and let the table, buckets,
 *                          user pool and keys go with the stack (default on, retained)
 */
import { readFileSync } from 'node:fs';
import { App, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { AgentRunsStack, type AgentRunsStackProps } from './stack.ts';

const app = new App();
const context = (key: string): string | undefined => {
  const value: unknown = app.node.tryGetContext(key);
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
  if (!Number.isInteger(n)) throw new Error(`context ${key} must be a whole number: ${text}`);
  return n;
};
const optional = <K extends keyof AgentRunsStackProps>(key: K, value: AgentRunsStackProps[K] | undefined) =>
  value === undefined ? {} : { [key]: value };

const stackName = context('stackName') ?? 'AgentRuns';
const protect = context('deletionProtection') !== 'false';
const openAiBaseUrl = context('openAiBaseUrl');
const openAiModel = context('openAiModel');
if ((openAiBaseUrl === undefined) !== (openAiModel === undefined)) {
  throw new Error('context openAiBaseUrl and openAiModel go together');
}
const openAiApiKeySecret = context('openAiApiKeySecret');
const toolsFile = context('toolsFile');
const reserved = context('sweeperReservedConcurrency');
/** A limit from context: a whole number, `none` for unlimited, absent for the default. */
const limit = (key: string): number | null | undefined => (context(key) === 'none' ? null : integer(key));
const riskTierFloor = context('riskTierFloor');
if (riskTierFloor !== undefined && !['low', 'standard', 'high'].includes(riskTierFloor)) {
  throw new Error(`context riskTierFloor must be low, standard or high: ${riskTierFloor}`);
}
const admission = {
  ...(limit('maxLiveRuns') !== undefined ? { maxLiveRuns: limit('maxLiveRuns') } : {}),
  ...(limit('maxCreatesPerMinute') !== undefined
    ? { maxCreatesPerMinute: limit('maxCreatesPerMinute') }
    : {}),
  ...(riskTierFloor !== undefined ? { riskTierFloor: riskTierFloor as 'low' | 'standard' | 'high' } : {}),
  ...(integer('maxChildrenPerRun') !== undefined ? { maxChildrenPerRun: integer('maxChildrenPerRun') } : {}),
  ...(integer('maxTreeDepth') !== undefined ? { maxTreeDepth: integer('maxTreeDepth') } : {}),
};
/** The console's hosted-UI sign-in, when all three context values are given. */
function consoleOAuth(): AgentRunsStackProps['consoleOAuth'] {
  const issuer = context('consoleOAuthIssuer');
  const domainUrl = context('consoleOAuthDomain');
  const clientId = context('consoleOAuthClientId');
  return issuer !== undefined && domainUrl !== undefined && clientId !== undefined
    ? { issuer, domainUrl, clientId }
    : undefined;
}
const props: AgentRunsStackProps = {
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
  ...optional('tools', toolsFile !== undefined ? JSON.parse(readFileSync(toolsFile, 'utf8')) : undefined),
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
  ...optional('consoleOAuth', consoleOAuth()),
  ...optional('consoleDomainPrefix', context('consoleDomainPrefix')),
  admission,
};
new AgentRunsStack(app, stackName, props);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
