/**
 * The one dispatch from a handler kind to its adapter: `module` runs in process, `lambda`,
 * `http` and `mcp` go through the adapter beside this file. Nothing else in lib/tools switches
 * on the kind. docs/contracts/tool-result.md, "Invocation".
 */
import type { InvokeOptions, ToolHandler, ToolInvocationContext } from '../handler-types.ts';
import { invokeHttp } from './http.ts';
import { invokeLambda } from './lambda.ts';
import { invokeMcp } from './mcp.ts';

/**
 * Runs one handler and resolves with its raw result (any value; the host bounds and normalizes
 * it). Rejects with ToolError for a classified failure, or with any other error for an
 * unclassified one (the host reports it as a generic tool_error).
 */
export function invokeHandler(
  handler: ToolHandler,
  args: Readonly<Record<string, unknown>>,
  ctx: ToolInvocationContext,
  options: InvokeOptions,
): Promise<unknown> {
  switch (handler.kind) {
    case 'module':
      return handler.fn(args, ctx);
    case 'lambda':
      return invokeLambda(handler, args, ctx, options);
    case 'http':
      return invokeHttp(handler, args, ctx, options);
    case 'mcp':
      return invokeMcp(handler, args, ctx);
  }
}
