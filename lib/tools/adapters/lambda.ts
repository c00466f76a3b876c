/**
 * The AWS Lambda handler kind: one synchronous `Invoke` (RequestResponse) of the tool's function
 * with the JSON payload `{args, context}` where `context` is {run_id, operation_id,
 * idempotency_key?, principal, attempt, timeout_ms}. The function answers with its result
 * (ideally a raisin.tool-result/1 envelope). docs/contracts/tool-result.md, "Tool calls".
 *
 * Error mapping (messages are generic; the function's errorMessage never leaves this module):
 * - FunctionError with errorType `Sandbox.Timedout` → timeout; errorType naming a tool error class
 *   (for example a thrown error whose name is `conflict`), or an `error_class` field → that class;
 *   any other FunctionError → tool_error.
 * - Service errors: ResourceNotFoundException → not_found; AccessDenied*, 401/403 → permission_denied;
 *   TooManyRequestsException / throttling → rate_limited; ResourceConflictException → conflict;
 *   InvalidRequestContentException / RequestTooLargeException → invalid_input; 5xx → transient.
 */
import type { InvokeCommandOutput } from '@aws-sdk/client-lambda';
import { isToolErrorClass, ToolError } from '../errors.ts';
import type { InvokeOptions, LambdaHandler, ToolInvocationContext } from '../handler-types.ts';
import { wireContext } from './wire-context.ts';

export async function invokeLambda(
  handler: LambdaHandler,
  args: Readonly<Record<string, unknown>>,
  ctx: ToolInvocationContext,
  options: InvokeOptions,
): Promise<unknown> {
  const client = handler.client ?? options.lambdaClient;
  if (client === undefined) {
    throw new ToolError('unsupported', 'no Lambda client is configured for this tool', {
      code: 'lambda_client_missing',
    });
  }
  const payload = new TextEncoder().encode(JSON.stringify({ args, context: wireContext(ctx) }));
  // Imported here, on the first call: a process that invokes no Lambda tool never loads it.
  const { InvokeCommand } = await import('@aws-sdk/client-lambda');
  const command = new InvokeCommand({
    FunctionName: handler.function_name,
    InvocationType: 'RequestResponse',
    Payload: payload,
    ...(handler.qualifier === undefined ? {} : { Qualifier: handler.qualifier }),
  });
  let output: InvokeCommandOutput;
  try {
    output = await client.send(command, { abortSignal: ctx.signal });
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    throw classifyServiceError(error);
  }
  const bytes = output.Payload ?? new Uint8Array();
  if (bytes.byteLength > options.maxResponseBytes) {
    throw new ToolError('tool_error', 'the tool result exceeds the output bound', {
      code: 'output_too_large',
    });
  }
  const body = parseJson(new TextDecoder().decode(bytes));
  if (output.FunctionError !== undefined) throw classifyFunctionError(body);
  if (!body.ok)
    throw new ToolError('tool_error', 'the Lambda function answered with invalid JSON', {
      code: 'response_not_json',
    });
  return body.value;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text.trim() === '') return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

function classifyFunctionError(body: { ok: true; value: unknown } | { ok: false }): ToolError {
  const value = body.ok && typeof body.value === 'object' && body.value !== null ? body.value : {};
  const { errorType, error_class } = value as { errorType?: unknown; error_class?: unknown };
  if (errorType === 'Sandbox.Timedout') {
    return new ToolError('timeout', 'the Lambda function timed out', { code: 'lambda_timeout' });
  }
  const errorClass = isToolErrorClass(error_class)
    ? error_class
    : isToolErrorClass(errorType)
      ? errorType
      : undefined;
  if (errorClass !== undefined)
    return new ToolError(errorClass, `the Lambda function reported ${errorClass}`);
  return new ToolError('tool_error', 'the Lambda function failed', { code: 'function_error' });
}

/** Socket-level failures (no HTTP response at all): worth a retry. */
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

function classifyServiceError(error: unknown): ToolError {
  const name = error instanceof Error ? error.name : '';
  const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  const options = { cause: error };
  if (name === 'ResourceNotFoundException' || status === 404) {
    return new ToolError('not_found', 'the Lambda function was not found', {
      ...options,
      code: 'lambda_not_found',
    });
  }
  if (name.startsWith('AccessDenied') || status === 401 || status === 403) {
    return new ToolError('permission_denied', 'invoking the Lambda function was denied', options);
  }
  if (name === 'TooManyRequestsException' || name.includes('Throttl') || status === 429) {
    return new ToolError('rate_limited', 'the Lambda function is throttled', options);
  }
  if (name === 'ResourceConflictException' || status === 409) {
    return new ToolError('conflict', 'the Lambda function is not ready', options);
  }
  if (name === 'InvalidRequestContentException' || name === 'RequestTooLargeException' || status === 413) {
    return new ToolError('invalid_input', 'the Lambda function refused the request', options);
  }
  if (status !== undefined && status >= 500) {
    return new ToolError('transient', 'the Lambda service failed', options);
  }
  const networkCode = (error as { code?: unknown } | null)?.code;
  if (name === 'TimeoutError' || (typeof networkCode === 'string' && NETWORK_ERROR_CODES.has(networkCode))) {
    return new ToolError('transient', 'the Lambda service could not be reached', options);
  }
  return new ToolError('tool_error', 'invoking the Lambda function failed', options);
}
