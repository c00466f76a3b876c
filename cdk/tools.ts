/**
 * The tools a deployment configures (lib/tools/configured.ts): the JSON list in AGENT_RUNS_TOOLS
 * on the control function (discovery, `GET /v1/tools`) and the step function (calls), and
 * `lambda:InvokeFunction` for the step function on exactly the Lambda tools named, never `*`.
 * The list is checked at synth time with the parser the functions run.
 */
import { ArnFormat, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { type ConfiguredTool, parseToolsConfig, TOOLS_ENV } from '../lib/tools/configured.ts';
import { acknowledge } from './nag.ts';

/** Lambda allows 4 KB of environment per function; the rest is left to the stack's own variables. */
export const MAX_TOOLS_CONFIG_BYTES = 3000;

/** Sets AGENT_RUNS_TOOLS on the functions and grants the Lambda tools. Throws ToolConfigError, or when the list is too large. */
export function configureTools(
  tools: readonly ConfiguredTool[],
  functions: { control: LambdaFunction; step: LambdaFunction },
): void {
  if (tools.length === 0) return;
  const text = JSON.stringify(tools);
  const parsed = parseToolsConfig(text);
  if (Buffer.byteLength(text) > MAX_TOOLS_CONFIG_BYTES) {
    throw new Error(
      `the tools configuration is ${Buffer.byteLength(text)} bytes; Lambda environments hold 4 KB, so keep it under ${MAX_TOOLS_CONFIG_BYTES} (shorter descriptions and schemas)`,
    );
  }
  functions.control.addEnvironment(TOOLS_ENV, text);
  functions.step.addEnvironment(TOOLS_ENV, text);
  const stack = Stack.of(functions.step);
  const arns = parsed.flatMap((tool) => {
    if (tool.target.kind !== 'lambda') return [];
    const name = tool.target.function_name;
    const arn = name.startsWith('arn:')
      ? name
      : stack.formatArn({
          service: 'lambda',
          resource: 'function',
          resourceName: name,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        });
    return [tool.target.qualifier !== undefined ? `${arn}:${tool.target.qualifier}` : arn];
  });
  if (arns.length > 0) {
    functions.step.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['lambda:InvokeFunction'], resources: arns }),
    );
  }
}

/** The tag a Lambda function carries (value: the stack name) to be callable as a tool registered as data. */
export const TOOL_FUNCTION_TAG = 'agent-runs-tool';

/** What the step function may reach for tools registered as data (POST /admin/tools). */
export interface DataToolAccess {
  /** Lambda function ARNs (qualified ARNs for a version or alias) tools may target: invoke on exactly these. */
  readonly functionArns?: readonly string[];
  /**
   * Also allow invoking the functions of this account and region tagged
   * `agent-runs-tool = <stack name>` (an ABAC condition, so tagging a function is granting it).
   */
  readonly taggedFunctions?: boolean;
  /** Secrets Manager secret ARNs holding the auth of HTTP and MCP tools: GetSecretValue on exactly these. */
  readonly secretArns?: readonly string[];
  /** SSM parameter names (SecureString) holding such auth: GetParameter on exactly these. */
  readonly parameterNames?: readonly string[];
}

/**
 * Grants the step function what tools registered as data may need, and nothing it was not told
 * about: invoke on the listed functions (and, with `taggedFunctions`, on functions tagged for
 * this stack), reads of the listed secrets and parameters. Never a bare `*`.
 */
export function grantDataTools(access: DataToolAccess, step: LambdaFunction): void {
  const stack = Stack.of(step);
  const functionArns = [...(access.functionArns ?? [])];
  if (functionArns.length > 0) {
    step.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['lambda:InvokeFunction'],
        resources: functionArns,
      }),
    );
  }
  if (access.taggedFunctions === true) {
    const anyFunction = stack.formatArn({
      service: 'lambda',
      resource: 'function',
      resourceName: '*',
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    step.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['lambda:InvokeFunction'],
        resources: [anyFunction],
        conditions: { StringEquals: { [`aws:ResourceTag/${TOOL_FUNCTION_TAG}`]: stack.stackName } },
      }),
    );
    if (step.role !== undefined) {
      acknowledge(
        step.role,
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:lambda:<AWS::Region>:<AWS::AccountId>:function:*]`,
        `Tool functions are chosen by tag: invoke is conditioned on aws:ResourceTag/${TOOL_FUNCTION_TAG} = the stack name.`,
      );
    }
  }
  const secretArns = [...(access.secretArns ?? [])];
  if (secretArns.length > 0) {
    step.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['secretsmanager:GetSecretValue'],
        resources: secretArns,
      }),
    );
  }
  const parameters = (access.parameterNames ?? []).map((name) =>
    stack.formatArn({
      service: 'ssm',
      resource: 'parameter',
      resourceName: name.replace(/^\//, ''),
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    }),
  );
  if (parameters.length > 0) {
    step.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['ssm:GetParameter'], resources: parameters }),
    );
  }
}
