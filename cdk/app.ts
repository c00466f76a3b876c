/**
 * The CDK app (`cdk.json`: `node cdk/app.ts`): one AgentRunsStack, checked by cdk-nag's
 * AwsSolutions pack during synthesis (a violation that is not acknowledged fails `cdk synth`).
 * Environment-agnostic: no account, region or lookups, so `cdk synth` runs without credentials.
 *
 * Options come from context (`cdk synth -c key=value` or cdk.json):
 * - `stackName`           CloudFormation stack name (default `AgentRuns`)
 * - `jwtIssuer`           JWT issuer URL; with `jwtAudience`, enables the JWT authorizer
 * - `jwtAudience`         comma-separated audiences
 * - `alarmTopicArn`       SNS topic ARN the alarms notify
 * - `deletionProtection`  `false` to turn the table's deletion protection off (default on)
 * - `bedrockModelArns`    comma-separated Bedrock model ARNs the step function may invoke
 */
import { App, Validations } from 'aws-cdk-lib';
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

const stackName = context('stackName') ?? 'AgentRuns';
const jwtIssuer = context('jwtIssuer');
const jwtAudience = list('jwtAudience');
const bedrockModelArns = list('bedrockModelArns');
const alarmTopicArn = context('alarmTopicArn');
const props: AgentRunsStackProps = {
  stackName,
  description: 'Agent Runs on AWS: durable, crash-safe runtime for AI agent runs',
  deletionProtection: context('deletionProtection') !== 'false',
  ...(jwtIssuer !== undefined ? { jwtIssuer } : {}),
  ...(jwtAudience !== undefined ? { jwtAudience } : {}),
  ...(bedrockModelArns !== undefined ? { bedrockModelArns } : {}),
  ...(alarmTopicArn !== undefined ? { alarmTopicArn } : {}),
};
new AgentRunsStack(app, stackName, props);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
