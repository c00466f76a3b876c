/**
 * Tools a deployment registers from configuration rather than code: a JSON list of HTTP and
 * Lambda tools, in the environment variable AGENT_RUNS_TOOLS (the CDK stack's `tools` prop
 * sets it on the control and step functions; the local stack reads it from the shell). Each is
 * registered through the same `registerTools` hook of lib/runtime.ts that code uses, so the
 * registry's own checks (name, semver, schema, metadata) apply unchanged.
 *
 * One entry: `{name, version, description?, input_schema, metadata, target}` where target is
 * `{kind: "http", url}` (POST {args, context}; see http-handler.ts) or `{kind: "lambda",
 * function_name, qualifier?}` (a synchronous Invoke; see lambda-handler.ts). Credentials do not
 * belong here: an environment variable is not a secret store.
 *
 * docs/contracts/tool-result.md, "Tool registration" (explicit, opt-in registration).
 */
import { z } from 'zod';
import { ENV } from '../config.ts';
import { ToolMetadata } from '../contracts/index.ts';
import { ToolsModuleError } from './errors.ts';
import type { ToolDefinition, ToolRegistry } from './registry.ts';

/** The environment variable holding the JSON list. */
export const TOOLS_ENV = ENV.AGENT_RUNS_TOOLS;

const HttpTarget = z.strictObject({ kind: z.literal('http'), url: z.url({ protocol: /^https?$/ }) });
const LambdaTarget = z.strictObject({
  kind: z.literal('lambda'),
  /** A function name or ARN (the stack grants invoke on the ARN). */
  function_name: z.string().min(1),
  qualifier: z.string().min(1).optional(),
});

/** One configured tool (the registry validates name, version, schema and metadata again). */
export const ConfiguredTool = z.strictObject({
  name: z.string().min(1),
  version: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
  metadata: ToolMetadata.partial({ risk: true, timeout_ms: true, max_output_bytes: true, approval: true }),
  target: z.discriminatedUnion('kind', [HttpTarget, LambdaTarget]),
});
export type ConfiguredTool = z.input<typeof ConfiguredTool>;
export const ConfiguredTools = z.array(ConfiguredTool);

/** A tool configuration that cannot be read: `path` names the offending field. */
export class ToolConfigError extends ToolsModuleError {
  override name = 'ToolConfigError';
  readonly code = 'tool_config_invalid';
  readonly retryable = false;
  readonly path: string;
  constructor(path: string, message: string) {
    super(`${TOOLS_ENV}${path === '' ? '' : `[${path}]`}: ${message}`);
    this.path = path;
  }
}

/** Parses the JSON list. Throws ToolConfigError (not JSON, or a field out of shape). */
export function parseToolsConfig(text: string): z.infer<typeof ConfiguredTools> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ToolConfigError('', `not JSON: ${(error as Error).message}`);
  }
  const parsed = ConfiguredTools.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ToolConfigError(issue?.path.map(String).join('.') ?? '', issue?.message ?? 'invalid');
  }
  return parsed.data;
}

/** The registry definition of one configured tool. */
export function toolDefinitionOf(tool: z.infer<typeof ConfiguredTool>): ToolDefinition {
  const { target } = tool;
  return {
    name: tool.name,
    version: tool.version,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    input_schema: tool.input_schema,
    metadata: tool.metadata,
    handler:
      target.kind === 'http'
        ? { kind: 'http', url: target.url }
        : {
            kind: 'lambda',
            function_name: target.function_name,
            ...(target.qualifier !== undefined ? { qualifier: target.qualifier } : {}),
          },
  };
}

/**
 * The `registerTools` hook for the tools in `env.AGENT_RUNS_TOOLS` (none when unset). Parses at
 * once, so a malformed list fails the container at start (ToolConfigError); the registry's own
 * ToolRegistrationError surfaces when the hook runs.
 */
export function toolsFromEnv(env: NodeJS.ProcessEnv): ((registry: ToolRegistry) => void) | undefined {
  const text = env[TOOLS_ENV];
  if (text === undefined || text.trim() === '') return undefined;
  const tools = parseToolsConfig(text);
  return (registry) => {
    for (const tool of tools) registry.register(toolDefinitionOf(tool));
  };
}
