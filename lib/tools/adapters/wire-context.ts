/**
 * The JSON `context` object the out-of-process adapters (Lambda, HTTP, MCP `_meta`) send with
 * the args. docs/contracts/tool-result.md, "Tool calls".
 */
import type { ToolInvocationContext, WireContext } from '../handler-types.ts';

/** `{run_id, operation_id, idempotency_key?, principal, attempt, timeout_ms}` of `ctx` (no signal, no subject). */
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
