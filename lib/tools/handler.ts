/**
 * Handler kinds a tool can be registered with, the context a handler receives, and the dispatch
 * to the kind's adapter. Seed: tool-invocation-contract, "Invocation"; agent-run-contracts,
 * "Tool calls" (args.__raisin_context, the run's principal, the operation id as idempotency key).
 */
import type { Client } from '@modelcontextprotocol/sdk/client';
import type { Principal, Subject } from '../contracts/index.ts';
import { invokeHttp } from './http-handler.ts';
import { invokeLambda, type LambdaInvoker } from './lambda-handler.ts';
import { invokeMcp } from './mcp-handler.ts';

/** What a handler learns about the call besides its args. Frozen. */
export interface ToolInvocationContext {
  readonly run_id: string;
  readonly operation_id: string;
  /** The operation id when the call is mutating (use it as the idempotency key), otherwise undefined. */
  readonly idempotency_key: string | undefined;
  /** The run's principal (user, or agent with its own or its user's rights); never system rights by default. */
  readonly principal: Readonly<Principal>;
  /** Aborted when the caller cancels or the deadline passes; cooperative handlers stop on it. */
  readonly signal: AbortSignal;
  /** 1 for the first attempt of the operation. */
  readonly attempt: number;
  /** The call's deadline in milliseconds from the handler's start. */
  readonly timeout_ms: number;
  /** The node the run is about ({workspace, path, node_id?}), when the engine passes it. */
  readonly subject?: Readonly<Subject>;
}

/** The in-process handler: args are frozen and include `__raisin_context: {run_id, operation_id, ...}`. */
export interface ModuleHandler {
  kind: 'module';
  fn: (args: Readonly<Record<string, unknown>>, ctx: ToolInvocationContext) => Promise<unknown>;
}

/** An AWS Lambda function invoked synchronously with payload `{args, context}` (see lambda-handler.ts). */
export interface LambdaHandler {
  kind: 'lambda';
  function_name: string;
  /** Version or alias to invoke. */
  qualifier?: string;
  /** Client for this tool; otherwise the host's `lambdaClient`. */
  client?: LambdaInvoker;
}

/** An HTTP endpoint that receives `POST {args, context}` as JSON (see http-handler.ts). */
export interface HttpHandler {
  kind: 'http';
  url: string;
  /** Extra request headers (for example an API key); never listed by discovery nor audited. */
  headers?: Readonly<Record<string, string>>;
}

/** What the MCP adapter needs of an MCP client: `callTool`. */
export type McpToolClient = Pick<Client, 'callTool'>;

/** A tool of a connected MCP server, called with `client.callTool` (see mcp-handler.ts). */
export interface McpHandler {
  kind: 'mcp';
  client: McpToolClient;
  /** The tool's name on the MCP server. */
  tool_name: string;
}

export type ToolHandler = ModuleHandler | LambdaHandler | HttpHandler | McpHandler;

/** The JSON `context` object sent to out-of-process handlers (Lambda, HTTP). */
export interface WireContext {
  run_id: string;
  operation_id: string;
  idempotency_key?: string;
  principal: Principal;
  attempt: number;
  timeout_ms: number;
}

export function wireContext(ctx: ToolInvocationContext): WireContext {
  return {
    run_id: ctx.run_id,
    operation_id: ctx.operation_id,
    ...(ctx.idempotency_key === undefined ? {} : { idempotency_key: ctx.idempotency_key }),
    principal: { ...ctx.principal },
    attempt: ctx.attempt,
    timeout_ms: ctx.timeout_ms,
  };
}

export interface InvokeOptions {
  /** The host's Lambda client, used by lambda handlers that bring none. */
  lambdaClient?: LambdaInvoker | undefined;
  /** Adapters stop reading a response larger than this many bytes (the host then refuses it). */
  maxResponseBytes: number;
}

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
