/**
 * The tool dispatcher: the ToolHost port over a registry, a policy gate and an audit log.
 * docs/contracts/tool-result.md ("Tool calls", "Policy and authorization", "Invocation",
 * "Audit and privacy", "The tool-result envelope"); docs/architecture.md, "The seams of a step"
 * (the dispatcher, the normalizer).
 *
 * execute(request, signal), in order; every failure is a `failed` envelope, never a throw:
 *  1. unknown tool → error_class not_found (code tool_not_registered); audit failed.
 *  2. the gate again (defense in depth): deny → error_class permission_denied with the deny code;
 *     audit denied. require_approval is not re-checked here: core opens the approval and calls
 *     execute only once it is granted.
 *  3. args must be a JSON object (a plain JSON copy is taken). `__raisin_context` is removed BEFORE schema validation (tool
 *     schemas do not describe it and may forbid extra properties); invalid args → error_class
 *     invalid_input with ajv's messages as diagnostics (schema wording only), handler not called.
 *  4. audit accepted. A signal already aborted → cancelled without calling the handler.
 *  5. the handler gets frozen copies: args + `__raisin_context = {...reducer's context, run_id,
 *     operation_id}` (core's two values win) and ctx {run_id, operation_id, idempotency_key (=
 *     op_id when the effect or the tool is mutating), principal (the run's, as given), signal,
 *     attempt, timeout_ms}. audit started.
 *  6. deadline = min(request.timeout_ms, metadata.timeout_ms); ctx.signal = AbortSignal.any of
 *     the caller's signal and AbortSignal.timeout(deadline). On abort the host waits up to
 *     `finalizeGraceMs` for the handler to settle (cooperative cancellation), then answers:
 *     caller abort → status failed, NO error_class (cancellation is not a tool fault), diagnostic
 *     code `cancelled`, retryable false, audit cancelled; deadline → error_class timeout,
 *     retryable true, audit timed_out.
 *  7. a thrown ToolError → its class, code, message and retryable; any other exception →
 *     error_class tool_error, generic message; the exception goes only to `debug`.
 *  8. the result's compact JSON size > metadata.max_output_bytes → error_class tool_error, code
 *     output_too_large, payload dropped. A result without JSON form → tool_error output_not_json.
 *  9. the JSON result goes through lib/core's normalizeToolResult, the one normalizer of every
 *     path (the delivery route uses it too): a valid raisin.tool-result/1 envelope passes with
 *     operation_id set; a value that does not claim the envelope is wrapped succeeded +
 *     legacy: true + payload, its writes and evidence dropped from the envelope's lists; a
 *     claimed envelope refused by any of the 4 refusal codes becomes a failed, not retryable
 *     tool_error stand-in whose diagnostic code and path are the refusal's (never the tool's
 *     writes or evidence). audit completed (outcome = status), or failed with the refusal code
 *     (or the error class) when the envelope's status is failed.
 */
import type { Principal, ToolDescriptor, ToolResultEnvelope } from '../contracts/index.ts';
import { jsonDepth, MAX_JSON_DEPTH } from '../core/canonical.ts';
import { normalizeToolResult } from '../core/tool-result-validation.ts';
import type { Clock, PolicyDecision, ToolCallRequest, ToolHost } from '../engine/ports.ts';
import { invokeHandler } from './adapters/invoke.ts';
import type { AuditEventName, AuditLog } from './audit-log.ts';
import { ToolError } from './errors.ts';
import { diagnosticClassFor, failedEnvelope } from './failed-envelope.ts';
import type { LambdaInvoker, ToolInvocationContext } from './handler-types.ts';
import { deepFreeze, isPlainObject, toJson } from './json.ts';
import type { PolicyGate } from './policy-gate.ts';
import type { RegisteredTool, ToolRegistry } from './registry.ts';

/** An unclassified handler exception, for debugging only (never in envelopes or audit events). */
export interface ToolFault {
  run_id: string;
  operation_id: string;
  tool: string;
  error: unknown;
}

export interface ToolHostOptions {
  /** Sealed by createToolHost: the served catalogue does not change. */
  registry: ToolRegistry;
  gate: PolicyGate;
  audit: AuditLog;
  /** Default client for lambda handlers that bring none. */
  lambdaClient?: LambdaInvoker;
  /** For durations; default Date.now. */
  clock?: Clock;
  /** Milliseconds to wait for a handler to settle after cancellation or timeout; default 1000. */
  finalizeGraceMs?: number;
  /** Receives unclassified exceptions; the only place their text goes. */
  debug?: (fault: ToolFault) => void;
}

const DEFAULT_FINALIZE_GRACE_MS = 1000;
/** HTTP/Lambda adapters stop reading past 2 × max_output_bytes + 4 KiB (room for whitespace); the exact check is on the compact JSON. */
const responseReadLimit = (maxOutputBytes: number): number => maxOutputBytes * 2 + 4096;

type Settled = { kind: 'value'; value: unknown } | { kind: 'error'; error: unknown } | { kind: 'aborted' };

/** One call in progress: its request, the tool it names, and how it records and fails. */
interface Call {
  request: ToolCallRequest;
  tool: RegisteredTool | undefined;
  /** Records an audit event with the call's ids and its duration so far. */
  record(event: AuditEventName, outcome: string, errorCode?: string): void;
  /** Records `event` and answers the call with a failed envelope carrying the error's code. */
  fail(
    event: AuditEventName,
    error: ToolError | { errorClass: undefined; code: string; message: string; retryable: boolean },
    extra?: { message: string; path: string }[],
  ): ToolResultEnvelope;
}

const CANCELLED = {
  errorClass: undefined,
  code: 'cancelled',
  message: 'the call was cancelled',
  retryable: false,
};

function startCall(
  request: ToolCallRequest,
  tool: RegisteredTool | undefined,
  audit: AuditLog,
  clock: Clock,
): Call {
  const startedAt = clock.now();
  const record: Call['record'] = (event, outcome, errorCode) =>
    audit.record({
      event,
      run_id: request.run_id,
      operation_id: request.op_id,
      tool: request.tool,
      tool_version: tool?.descriptor.version ?? null,
      outcome,
      duration_ms: clock.now() - startedAt,
      ...(errorCode === undefined ? {} : { error_code: errorCode }),
    });
  return {
    request,
    tool,
    record,
    fail(event, error, extra = []) {
      record(event, event, error.code);
      const severity = 'error' as const;
      const cls = diagnosticClassFor(error.errorClass);
      return failedEnvelope(request.op_id, error.errorClass, error.retryable, [
        { code: error.code, severity, class: cls, message: error.message },
        ...extra.map((e) => ({ code: error.code, severity, class: cls, message: e.message, path: e.path })),
      ]);
    },
  };
}

/**
 * Admission before any handler runs: the tool is registered, the policy allows the call, and
 * the args are a JSON object matching the tool's input schema. Tool-invocation-contract,
 * "Policy and authorization" (a denied invocation has no handler side effect).
 */
function admit(
  call: Call,
  decide: (request: ToolCallRequest, tool: RegisteredTool | undefined) => PolicyDecision,
):
  | { ok: true; tool: RegisteredTool; plainArgs: Record<string, unknown>; givenContext: unknown }
  | { ok: false; envelope: ToolResultEnvelope } {
  const { request, tool } = call;
  if (tool === undefined) {
    const error = new ToolError('not_found', 'no tool with this name is registered', {
      code: 'tool_not_registered',
    });
    return { ok: false, envelope: call.fail('failed', error) };
  }
  const decision = decide(request, tool);
  if (decision.decision === 'deny') {
    const error = new ToolError('permission_denied', 'the call was denied by policy', {
      code: decision.code,
    });
    return { ok: false, envelope: call.fail('denied', error) };
  }
  // Plain JSON copies: what is validated is exactly what the handler receives.
  const argsJson = isPlainObject(request.args) ? toJson(request.args) : null;
  if (argsJson === null || !isPlainObject(argsJson.value)) {
    return {
      ok: false,
      envelope: call.fail('failed', new ToolError('invalid_input', 'args must be a JSON object')),
    };
  }
  const { __raisin_context: givenContext, ...plainArgs } = argsJson.value;
  const check = tool.validateArgs(plainArgs);
  if (!check.ok) {
    const extra = check.errors.map((e) => ({
      message: `${e.path === '' ? 'args' : e.path} ${e.message}`,
      path: e.path,
    }));
    const error = new ToolError('invalid_input', 'args do not match the tool input schema');
    return { ok: false, envelope: call.fail('failed', error, extra) };
  }
  return { ok: true, tool, plainArgs, givenContext };
}

/** The frozen args (with core's __raisin_context) and invocation context the handler receives. */
function invocationOf(
  request: ToolCallRequest,
  tool: RegisteredTool,
  plainArgs: Record<string, unknown>,
  givenContext: unknown,
  signal: AbortSignal,
  timeoutMs: number,
): { args: Readonly<Record<string, unknown>>; ctx: ToolInvocationContext } {
  const args = deepFreeze({
    ...plainArgs,
    __raisin_context: {
      ...(isPlainObject(givenContext) ? givenContext : {}),
      run_id: request.run_id,
      operation_id: request.op_id,
    },
  });
  const ctx: ToolInvocationContext = Object.freeze({
    run_id: request.run_id,
    operation_id: request.op_id,
    idempotency_key: isMutating(request, tool.descriptor) ? request.op_id : undefined,
    principal: deepFreeze({ ...request.principal }) as Principal,
    signal,
    attempt: request.attempt,
    timeout_ms: timeoutMs,
    ...(request.subject !== undefined ? { subject: deepFreeze({ ...request.subject }) } : {}),
  });
  return { args, ctx };
}

/** The call's answer from what its handler returned: bounded, JSON, and normalized into raisin.tool-result/1. */
function answerOf(call: Call, value: unknown, maxOutputBytes: number): ToolResultEnvelope {
  const json = toJson(value);
  if (json === null) {
    return call.fail(
      'failed',
      new ToolError('tool_error', 'the tool result is not JSON', { code: 'output_not_json' }),
    );
  }
  if (json.bytes > maxOutputBytes) {
    const message = `the tool result exceeds the output bound of ${maxOutputBytes} bytes`;
    return call.fail('failed', new ToolError('tool_error', message, { code: 'output_too_large' }));
  }
  if (jsonDepth(json.value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    const message = `the tool result nests deeper than ${MAX_JSON_DEPTH} levels`;
    return call.fail('failed', new ToolError('tool_error', message, { code: 'output_too_deep' }));
  }
  const { envelope, refusal } = normalizeToolResult(json.value, call.request.op_id);
  if (envelope.status === 'failed')
    call.record('failed', 'failed', refusal?.code ?? envelope.error_class ?? 'tool_reported_failure');
  else call.record('completed', envelope.status);
  return envelope;
}

/** The host over one sealed registry: its catalogue and decisions are at hand, so it answers synchronously. */
export interface SealedToolHost extends ToolHost {
  list(): ToolDescriptor[];
  gate(request: ToolCallRequest): PolicyDecision;
}

export function createToolHost(options: ToolHostOptions): SealedToolHost {
  const { registry, gate, audit } = options;
  const clock = options.clock ?? { now: () => Date.now() };
  const graceMs = options.finalizeGraceMs ?? DEFAULT_FINALIZE_GRACE_MS;
  registry.seal();

  function decide(request: ToolCallRequest, tool: RegisteredTool | undefined): PolicyDecision {
    return gate.decide({
      principal: request.principal,
      tool_name: request.tool,
      tool: tool?.descriptor,
      mutating: isMutating(request, tool?.descriptor),
      args: isPlainObject(request.args) ? request.args : {},
      ...(request.scope !== undefined ? { scope: request.scope } : {}),
      ...(request.subject !== undefined ? { subject: request.subject } : {}),
    });
  }

  async function execute(request: ToolCallRequest, signal: AbortSignal): Promise<ToolResultEnvelope> {
    const call = startCall(request, registry.get(request.tool), audit, clock);
    const admitted = admit(call, decide);
    if (!admitted.ok) return admitted.envelope;
    call.record('accepted', 'accepted');
    if (signal.aborted) return call.fail('cancelled', CANCELLED);
    const { tool } = admitted;
    const { metadata } = tool.descriptor;
    const timeoutMs = Math.max(1, Math.min(request.timeout_ms ?? metadata.timeout_ms, metadata.timeout_ms));
    const callSignal = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    const { args, ctx } = invocationOf(
      request,
      tool,
      admitted.plainArgs,
      admitted.givenContext,
      callSignal,
      timeoutMs,
    );
    call.record('started', 'started');
    const handlerDone: Promise<Settled> = Promise.resolve()
      .then(() =>
        invokeHandler(tool.handler, args, ctx, {
          lambdaClient: options.lambdaClient,
          maxResponseBytes: responseReadLimit(metadata.max_output_bytes),
        }),
      )
      .then(
        (value): Settled => ({ kind: 'value', value }),
        (error: unknown): Settled => ({ kind: 'error', error }),
      );
    const abort = whenAborted(callSignal);
    let settled = await Promise.race([handlerDone, abort.promise]);
    abort.dispose();
    if (settled.kind === 'error' && callSignal.aborted) settled = { kind: 'aborted' };
    if (settled.kind === 'aborted') {
      await settleWithin(handlerDone, graceMs);
      if (signal.aborted) return call.fail('cancelled', CANCELLED);
      const error = new ToolError('timeout', `the tool did not finish within ${timeoutMs} ms`, {
        code: 'timeout',
      });
      return call.fail('timed_out', error);
    }
    if (settled.kind === 'error') {
      const { error } = settled;
      if (error instanceof ToolError) return call.fail('failed', error);
      try {
        options.debug?.({ run_id: request.run_id, operation_id: request.op_id, tool: request.tool, error });
      } catch {
        // A failing debug hook must not change the call's answer.
      }
      return call.fail('failed', new ToolError('tool_error', 'the tool failed', { code: 'tool_error' }));
    }
    return answerOf(call, settled.value, metadata.max_output_bytes);
  }

  return {
    list: () => registry.list(),
    gate(request) {
      const tool = registry.get(request.tool);
      const decision = decide(request, tool);
      if (decision.decision !== 'allow') {
        audit.record({
          event: decision.decision === 'deny' ? 'denied' : 'approval_pending',
          run_id: request.run_id,
          operation_id: request.op_id,
          tool: request.tool,
          tool_version: tool?.descriptor.version ?? null,
          outcome: decision.decision === 'deny' ? 'denied' : 'approval_pending',
          duration_ms: 0,
          ...(decision.decision === 'deny' ? { error_code: decision.code } : {}),
        });
      }
      return decision;
    },
    execute,
  };
}

/** The effect's declaration or the tool's metadata: either one makes the call mutating. */
function isMutating(request: ToolCallRequest, tool: ToolDescriptor | undefined): boolean {
  return request.mutating === true || tool?.metadata.mutating === true;
}

function whenAborted(signal: AbortSignal): { promise: Promise<Settled>; dispose: () => void } {
  let onAbort = (): void => {};
  const promise = new Promise<Settled>((resolve) => {
    onAbort = () => resolve({ kind: 'aborted' });
    if (signal.aborted) resolve({ kind: 'aborted' });
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

async function settleWithin(done: Promise<Settled>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([done, grace]);
  clearTimeout(timer);
}
