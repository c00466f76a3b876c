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
