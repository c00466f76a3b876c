/**
 * The handler kinds a tool can be registered with and the context a handler receives: types
 * only, shared by the registry, the dispatcher and the adapters (lib/tools/adapters/), so none
 * of them imports another to learn a shape. docs/contracts/tool-result.md, "Invocation", "Tool
 * calls" (args.__raisin_context, the run's principal, the operation id as idempotency key).
 */
import type { InvokeCommand, InvokeCommandOutput } from '@aws-sdk/client-lambda';
import type { Client } from '@modelcontextprotocol/sdk/client';
import type { Principal, Subject } from '../contracts/index.ts';

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

/** An AWS Lambda function invoked synchronously with payload `{args, context}` (see adapters/lambda.ts). */
export interface LambdaHandler {
  kind: 'lambda';
  function_name: string;
  /** Version or alias to invoke. */
  qualifier?: string;
  /** Client for this tool; otherwise the host's `lambdaClient`. */
  client?: LambdaInvoker;
}

/** An HTTP endpoint that receives `POST {args, context}` as JSON (see adapters/http.ts). */
export interface HttpHandler {
  kind: 'http';
  url: string;
  /** Extra request headers (for example an API key); never listed by discovery nor audited. */
  headers?: Readonly<Record<string, string>>;
  /** Headers resolved at each call (a secret read through a cache); they override `headers`. */
  headersFrom?: () => Promise<Readonly<Record<string, string>>>;
}

/** What the MCP adapter needs of an MCP client: `callTool`. */
export type McpToolClient = Pick<Client, 'callTool'>;

/** A tool of a connected MCP server, called with `client.callTool` (see adapters/mcp.ts). */
export interface McpHandler {
  kind: 'mcp';
  client: McpToolClient;
  /** The tool's name on the MCP server. */
  tool_name: string;
}

/** The part of a LambdaClient the Lambda adapter uses (a real `LambdaClient` fits). */
export interface LambdaInvoker {
  send(command: InvokeCommand, options?: { abortSignal?: AbortSignal }): Promise<InvokeCommandOutput>;
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

/** What the dispatcher hands every adapter besides the handler, args and context. */
export interface InvokeOptions {
  /** The host's Lambda client, used by lambda handlers that bring none. */
  lambdaClient?: LambdaInvoker | undefined;
  /** Adapters stop reading a response larger than this many bytes (the host then refuses it). */
  maxResponseBytes: number;
}
