/**
 * The HTTP handler kind: `POST url` with the JSON body `{args, context}` (context as for Lambda),
 * headers `Content-Type: application/json`, the tool's own headers, and `Idempotency-Key: <op_id>`
 * when the call is mutating. Redirects are not followed (no hidden network access). A 2xx answer's
 * body is the result (JSON; empty means null); other statuses map to error classes with
 * errorClassForHttpStatus, and their bodies are discarded unread. docs/contracts/tool-result.md,
 * "Tool calls"; docs/contracts/tool-result.md, "Non-goals" (no implicit network access).
 */
import type { ToolErrorClass } from '../../contracts/index.ts';
import { ToolError } from '../errors.ts';
import type { HttpHandler, InvokeOptions, ToolInvocationContext } from '../handler-types.ts';
import { wireContext } from './wire-context.ts';

/**
 * The error class of a non-2xx status: 400/422 invalid_input, 401/403 permission_denied, 404/410
 * not_found, 409/412 conflict, 408/504 timeout, 429 rate_limited, 501 unsupported, other 5xx
 * transient, anything else tool_error.
 */
export function errorClassForHttpStatus(status: number): ToolErrorClass {
  if (status === 400 || status === 422) return 'invalid_input';
  if (status === 401 || status === 403) return 'permission_denied';
  if (status === 404 || status === 410) return 'not_found';
  if (status === 409 || status === 412) return 'conflict';
  if (status === 408 || status === 504) return 'timeout';
  if (status === 429) return 'rate_limited';
  if (status === 501) return 'unsupported';
  if (status >= 500 && status <= 599) return 'transient';
  return 'tool_error';
}

export async function invokeHttp(
  handler: HttpHandler,
  args: Readonly<Record<string, unknown>>,
  ctx: ToolInvocationContext,
  options: InvokeOptions,
): Promise<unknown> {
  const headers = new Headers(handler.headers);
  if (handler.headersFrom !== undefined)
    for (const [name, value] of Object.entries(await handler.headersFrom())) headers.set(name, value);
  headers.set('content-type', 'application/json');
  headers.set('accept', 'application/json');
  if (ctx.idempotency_key !== undefined) headers.set('idempotency-key', ctx.idempotency_key);
  else headers.delete('idempotency-key');
  let response: Response;
  try {
    response = await fetch(handler.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ args, context: wireContext(ctx) }),
      signal: ctx.signal,
      redirect: 'manual',
    });
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    throw new ToolError('transient', 'the tool endpoint could not be reached', {
      cause: error,
      code: 'unreachable',
    });
  }
  if (response.status < 200 || response.status > 299) {
    await response.body?.cancel();
    const errorClass = errorClassForHttpStatus(response.status);
    throw new ToolError(errorClass, `the tool endpoint answered HTTP ${response.status}`, {
      code: `http_${response.status}`,
    });
  }
  const text = await readBounded(response, options.maxResponseBytes);
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ToolError('tool_error', 'the tool endpoint answered with invalid JSON', {
      code: 'response_not_json',
    });
  }
}

/** Reads the body as UTF-8, refusing (output_too_large) once more than `limit` bytes arrived. */
async function readBounded(response: Response, limit: number): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new ToolError('tool_error', 'the tool result exceeds the output bound', {
        code: 'output_too_large',
      });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
