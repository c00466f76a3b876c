/**
 * The tools a deployment configures (lib/tools/configured.ts): the JSON list in AGENT_RUNS_TOOLS
 * on the control function (discovery, `GET /v1/tools`) and the step function (calls), and
 * `lambda:InvokeFunction` for the step function on exactly the Lambda tools named, never `*`.
 * The list is checked at synth time with the parser the functions run. A Lambda tool may name
 * its handler's source (`target.code`) instead of a deployed function: the stack bundles it
 * into a function of its own (deployToolFunctions) and registers the tool under that name.
 */
import { ArnFormat, Duration, type RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  Architecture,
  type Function as LambdaFunction,
  LoggingFormat,
  Runtime,
} from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { type ConfiguredTool, parseToolsConfig, TOOLS_ENV } from '../lib/tools/configured.ts';
import { acknowledge } from './nag.ts';

/** A Lambda tool whose function the stack builds: `code` is the handler file (absolute, or relative to the synth's folder), exporting `handler`. */
export type CodeTool = Omit<ConfiguredTool, 'target'> & {
  readonly target: { readonly kind: 'lambda'; readonly code: string };
};

/** A tool of the stack's `tools` prop: as configured, or with the code of its Lambda function. */
export type StackTool = ConfiguredTool | CodeTool;

/** The default `metadata.timeout_ms` of a tool (lib/contracts/tool-registration.ts). */
const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** Lambda function names are at most 64 characters; a name not yet known counts as that long. */
const MAX_FUNCTION_NAME_LENGTH = 64;

function isCodeTool(tool: StackTool): tool is CodeTool {
  return tool.target.kind === 'lambda' && 'code' in tool.target;
}

/**
 * Builds the function of every tool that gives `code` (Node.js 24 on arm64, esbuild ESM bundle,
 * JSON logs into its own log group, a role with no managed policy, the tool's timeout) and returns the tools with
 * `function_name` set to the function's name. Throws when a tool gives both `code` and
 * `function_name` or `qualifier`. `functions` receives each built function by tool name.
 */
export function deployToolFunctions(
  scope: Construct,
  tools: readonly StackTool[],
  options: {
    logRetention: RetentionDays;
    removalPolicy: RemovalPolicy;
    functions?: Map<string, NodejsFunction>;
  },
): ConfiguredTool[] {
  return tools.map((tool, i) => {
    if (!isCodeTool(tool)) return tool;
    const extra = Object.keys(tool.target).filter((k) => k !== 'kind' && k !== 'code');
    if (extra.length > 0) {
      throw new Error(
        `${TOOLS_ENV}[${i}.target]: code builds the function; ${extra.join(', ')} cannot be given with it`,
      );
    }
    const id = `Tool${i}${tool.name.replace(/[^A-Za-z0-9]/g, '')}`;
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: options.logRetention,
      removalPolicy: options.removalPolicy,
    });
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the ${tool.name} tool function`,
    });
    logGroup.grantWrite(role);
    const fn = new NodejsFunction(scope, `${id}Function`, {
      entry: tool.target.code,
      handler: 'handler',
      description: `Agent Runs tool ${tool.name}@${tool.version}`,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: 256,
      // The call's own bound (metadata.timeout_ms, default 30 s): the runtime stops waiting then.
      timeout: Duration.seconds(Math.ceil((tool.metadata.timeout_ms ?? DEFAULT_TOOL_TIMEOUT_MS) / 1000)),
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      bundling: { format: OutputFormat.ESM, target: 'node24', minify: true, forceDockerBundling: false },
    });
    options.functions?.set(tool.name, fn);
    const { target: _code, ...rest } = tool;
    return { ...rest, target: { kind: 'lambda', function_name: fn.functionName } };
  });
}

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
  // A function the stack builds has its name only at deploy time: count it at the longest.
  const bytes =
    Buffer.byteLength(text) +
    parsed.reduce(
      (n, tool) =>
        tool.target.kind === 'lambda' && Token.isUnresolved(tool.target.function_name)
          ? n + MAX_FUNCTION_NAME_LENGTH - Buffer.byteLength(tool.target.function_name)
          : n,
      0,
    );
  if (bytes > MAX_TOOLS_CONFIG_BYTES) {
    throw new Error(
      `the tools configuration is ${bytes} bytes; Lambda environments hold 4 KB, so keep it under ${MAX_TOOLS_CONFIG_BYTES} (shorter descriptions and schemas)`,
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
