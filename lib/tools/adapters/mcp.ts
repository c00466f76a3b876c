/**
 * The MCP handler kind: `client.callTool({name: tool_name, arguments, _meta})` on a connected MCP
 * client. `arguments` are the call's args without `__raisin_context` (MCP servers validate their
 * own input schemas, which do not know it); the context travels in
 * `_meta["raisin/context"] = {run_id, operation_id, idempotency_key?, principal, attempt}`.
 *
 * Result: `structuredContent` if present; else a single text content that parses as JSON gives
 * that value (so a server can answer with a raisin.tool-result/1 envelope); else `{content}`.
 * `isError: true` → ToolError of the class named by `structuredContent.error_class` when it is
 * one; an SDK protocol error reported as a result ("MCP error <code>: ...") → its protocol
 * class ("Tool <name> not found" → not_found); otherwise tool_error. The server's text is never
 * forwarded. Protocol errors: InvalidParams →
 * invalid_input, MethodNotFound → unsupported, RequestTimeout → timeout, ConnectionClosed →
 * transient, others → tool_error. The SDK's McpError is recognized by its shape (a numeric `code`
 * and the SDK's "MCP error <code>:" message), not by importing the SDK's types module, which
 * builds its zod schemas at import. docs/contracts/tool-result.md, "Tool calls".
 */
import { isToolErrorClass, ToolError } from '../errors.ts';
import type { McpHandler, ToolInvocationContext } from '../handler-types.ts';
import { wireContext } from './wire-context.ts';

export async function invokeMcp(
  handler: McpHandler,
  args: Readonly<Record<string, unknown>>,
  ctx: ToolInvocationContext,
): Promise<unknown> {
  const { __raisin_context: _context, ...plainArgs } = args;
  let result: Awaited<ReturnType<McpHandler['client']['callTool']>>;
  try {
    result = await handler.client.callTool(
      { name: handler.tool_name, arguments: plainArgs, _meta: { 'raisin/context': { ...wireContext(ctx) } } },
      undefined,
      { signal: ctx.signal, timeout: ctx.timeout_ms },
    );
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    throw classifyProtocolError(mcpErrorCode(error), error);
  }
  const structured = (result as { structuredContent?: unknown }).structuredContent;
  const content = Array.isArray(result.content) ? result.content : [];
  const [only] = content;
  if (result.isError === true) {
    const claimed = (structured as { error_class?: unknown } | undefined)?.error_class;
    if (isToolErrorClass(claimed)) {
      throw new ToolError(claimed, `the MCP tool reported ${claimed}`, { code: `mcp_${claimed}` });
    }
    // McpServer reports its own protocol errors (unknown tool, invalid arguments) as an isError
    // result whose text starts "MCP error <code>:"; only that code (and the SDK's "Tool <name>
    // not found" wording) is read, never forwarded.
    const protocol =
      content.length === 1 && only?.type === 'text' ? SDK_PROTOCOL_ERROR.exec(only.text) : null;
    if (protocol !== null) {
      if (/^Tool .* not found$/.test(protocol[2] ?? '')) {
        throw new ToolError('not_found', 'the MCP server has no such tool', { code: 'mcp_tool_not_found' });
      }
      throw classifyProtocolError(Number(protocol[1]), new Error(`MCP error ${protocol[1]}: protocol error`));
    }
    throw new ToolError('tool_error', 'the MCP tool reported tool_error', { code: 'mcp_tool_error' });
  }
  if (structured !== undefined) return structured;
  if (content.length === 1 && only?.type === 'text') {
    try {
      return JSON.parse(only.text) as unknown;
    } catch {
      // Plain text: returned as content below.
    }
  }
  return { content };
}

const SDK_PROTOCOL_ERROR = /^MCP error (-\d+): (.*)$/s;

/** The JSON-RPC codes the SDK's ErrorCode enum names (@modelcontextprotocol/sdk/types.js). */
const ErrorCode = {
  ConnectionClosed: -32000,
  RequestTimeout: -32001,
  MethodNotFound: -32601,
  InvalidParams: -32602,
} as const;

/** The code of an SDK McpError (or a subclass), else undefined. */
function mcpErrorCode(error: unknown): number | undefined {
  if (!(error instanceof Error) || !error.message.startsWith('MCP error ')) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

function classifyProtocolError(code: number | undefined, error: unknown): ToolError {
  if (code === undefined) {
    return new ToolError('tool_error', 'calling the MCP tool failed', { cause: error });
  }
  const options = { cause: error, code: `mcp_protocol_${Math.abs(code)}` };
  switch (code) {
    case ErrorCode.InvalidParams:
      return new ToolError('invalid_input', 'the MCP server refused the arguments', options);
    case ErrorCode.MethodNotFound:
      return new ToolError('unsupported', 'the MCP server does not support the call', options);
    case ErrorCode.RequestTimeout:
      return new ToolError('timeout', 'the MCP server did not answer in time', options);
    case ErrorCode.ConnectionClosed:
      return new ToolError('transient', 'the MCP connection closed', options);
    default:
      return new ToolError('tool_error', 'the MCP server reported an error', options);
  }
}
