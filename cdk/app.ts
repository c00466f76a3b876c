/**
 * The CDK app (`cdk.json`: `node cdk/app.ts`): one AgentRunsStack, checked by cdk-nag's
 * AwsSolutions pack during synthesis (a violation that is not acknowledged fails `cdk synth`).
 * Environment-agnostic: no account, region or lookups, so `cdk synth` runs without credentials.
 *
 * Options come from context (`cdk synth -c key=value` or cdk.json; read by cdk/context.ts).
 * A model is required: without one (and without `model=none`) the app refuses to synthesize.
 * - `stackName`            CloudFormation stack name (default `AgentRuns`)
 * - `jwtIssuer`            an existing JWT issuer URL (with `jwtAudience`) instead of the Cognito
 *                          user pool the stack creates by default
 * - `jwtAudience`          comma-separated audiences
 * - `iamAuth`              `true`: also an IAM (SigV4) API for service callers
 * - `bedrockModelId`       comma-separated Bedrock model or inference-profile ids (the first is the default model)
 * - `bedrockModelArns`     comma-separated further Bedrock model ARNs the step function may invoke
 * - `openAiBaseUrl`, `openAiModel`  an OpenAI-compatible endpoint; `openAiApiKeySecret` the
 *                          Secrets Manager secret (name or full ARN) of its key, else one is created
 * - `model`                `none`: deploy without a model on purpose (else one of the above is required)
 * - `defaultModel`         `bedrock`, `openai` or a model path
 * - `toolsFile`            a JSON file with the tools to register (lib/tools/configured.ts); a
 *                          Lambda tool's `target.code` is a handler file the stack deploys
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
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { DeployContextError, stackPropsFromContext } from './context.ts';
import { AgentRunsStack, type AgentRunsStackProps } from './stack.ts';

const app = new App();
let props: AgentRunsStackProps;
try {
  props = stackPropsFromContext((key) => app.node.tryGetContext(key));
} catch (error) {
  if (!(error instanceof DeployContextError)) throw error;
  // One readable line instead of a stack trace: the refusal is the message.
  console.error(`agent-runs: ${error.code} (context ${error.key}): ${error.message}`);
  process.exit(1);
}
new AgentRunsStack(app, props.stackName ?? 'AgentRuns', props);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
