/**
 * A tool registered as data (lib/contracts/registry.ts ToolEntry) as the registry's
 * definition: a Lambda target is a synchronous Invoke of the function ARN; an HTTP target a
 * POST whose auth header is read from its secret at call time; an MCP target a tool of a
 * Streamable HTTP MCP server. The registry's own checks (name, semver, schema, metadata) apply
 * unchanged.
 */
import type { ToolEntry, ToolTarget } from '../contracts/index.ts';
import { remoteMcpClient } from './adapters/mcp-remote.ts';
import type { ToolHandler } from './handler-types.ts';
import type { ToolDefinition } from './registry.ts';
import type { SecretResolver } from './secrets.ts';

/** The handler of a target. Does no I/O: secrets are read, and MCP servers connected, at call time. */
export function handlerOfTarget(name: string, target: ToolTarget, secrets: SecretResolver): ToolHandler {
  const auth = target.kind === 'lambda' ? undefined : target.auth;
  const headersFrom =
    auth === undefined
      ? undefined
      : async () => ({ [auth.header]: `${auth.prefix}${await secrets(auth.secret)}` });
  switch (target.kind) {
    case 'lambda':
      return {
        kind: 'lambda',
        function_name: target.function_arn,
        ...(target.qualifier !== undefined ? { qualifier: target.qualifier } : {}),
      };
    case 'http':
      return { kind: 'http', url: target.url, ...(headersFrom !== undefined ? { headersFrom } : {}) };
    case 'mcp':
      return {
        kind: 'mcp',
        client: remoteMcpClient(target.url, headersFrom),
        tool_name: target.tool_name ?? name,
      };
  }
}

/** The registry definition of a published tool entry. */
export function toolDefinitionOfEntry(entry: ToolEntry, secrets: SecretResolver): ToolDefinition {
  return {
    name: entry.name,
    version: entry.version,
    ...(entry.description !== undefined ? { description: entry.description } : {}),
    input_schema: entry.input_schema,
    metadata: entry.metadata,
    handler: handlerOfTarget(entry.name, entry.target, secrets),
  };
}
