/**
 * Executing one started operation: a tool call through the ToolHost, a model turn through the
 * ModelHost (its context compiled from the event log by core, or from the latest compaction), a
 * compaction (compaction.ts), a delegation through delegation.
 * Never throws for a tool or provider fault: the outcome comes back as an OperationResult.
 * docs/contracts/run-lifecycle.md, "Operations"; docs/contracts/tool-result.md, "Tool calls",
 * "Invocation"; docs/contracts/model-turn.md.
 */
import type { ModelTurnInput, Operation, RunRecord, ToolResultEnvelope } from '../contracts/index.ts';
import { treeUsed } from '../core/budgets.ts';
import { storedManifest } from '../core/context-compiler.ts';
import { isDelegateMessage, isDelegation, type OperationResult } from '../core/run-machine.ts';
import { envelopeOf } from '../core/tool-result-validation.ts';
import { noteModelCall, traceOperation } from '../telemetry/otel.ts';
import { compileTurnContext, executeCompaction, type OperationReads } from './compaction.ts';
import type { EngineContext } from './deps.ts';
import type { ModelTurnLimits, ToolCallRequest } from './ports.ts';

/** The ToolHost request of a tool operation of `record`. */
export function toolRequestOf(record: RunRecord, op: Operation): ToolCallRequest {
  const effect = op.effect;
  if (effect.kind !== 'call_tool') throw new Error('not a tool call');
  return {
    run_id: record.run_id,
    op_id: op.op_id,
    tool: effect.tool,
    args: effect.args,
    principal: record.principal,
    subject: record.subject,
    ...(record.pinned !== undefined ? { pinned: record.pinned } : {}),
    ...(record.scope !== undefined ? { scope: record.scope } : {}),
    attempt: op.attempt,
    mutating: effect.mutating,
    replay_safe: effect.replay_safe,
    ...(effect.timeout_ms !== undefined ? { timeout_ms: effect.timeout_ms } : {}),
    ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
  };
}

/**
 * The failed envelope of a tool call the policy gate denied: no handler ran. A safer action the
 * policy offers instead (transform_to_safer_action) is the envelope's suggested next action.
 */
export function deniedEnvelope(
  op: Operation,
  code: string,
  safer?: { tool: string; args?: Record<string, unknown> },
): ToolResultEnvelope {
  const tool = op.effect.kind === 'call_tool' ? op.effect.tool : op.kind;
  return envelopeOf('failed', undefined, {
    operation_id: op.op_id,
    error_class: 'permission_denied',
    diagnostics: [{ code, severity: 'error', message: `the policy denied ${tool}` }],
    suggested_next_actions:
      safer === undefined
        ? []
        : [{ action: safer.tool, ...(safer.args !== undefined ? { args: safer.args } : {}), reason: code }],
    retry_policy: { retryable: false },
  });
}

/** What the worker does around an operation's requests. */
export interface DispatchHooks {
  /**
   * Awaited before each retry (provider request after the first) of a model turn: the worker
   * counts it in a fenced commit (noteProviderCall). Its rejection (the lease lost) ends the dispatch with that error.
   */
  beforeModelCall?: () => Promise<void>;
  /** Awaited after each retryable failure answer of a model turn: the worker notes it (noteProviderFailure). */
  afterModelFailure?: () => Promise<void>;
}

/**
 * Executes the started operation `op` of `record` with `signal` (cancellation), in its span
 * when tracing is on (lib/telemetry/otel.ts). `reads` supplies the log and the domain state (a
 * model turn's transcript, a compaction's plan).
 */
export function executeOperation(
  ctx: EngineContext,
  record: RunRecord,
  op: Operation,
  signal: AbortSignal,
  reads: OperationReads,
  hooks: DispatchHooks = {},
): Promise<OperationResult> {
  return traceOperation(record, op, () => execute(ctx, record, op, signal, reads, hooks));
}

async function execute(
  ctx: EngineContext,
  record: RunRecord,
  op: Operation,
  signal: AbortSignal,
  reads: OperationReads,
  hooks: DispatchHooks,
): Promise<OperationResult> {
  const effect = op.effect;
  if (effect.kind === 'call_tool' && isDelegation(op)) {
    return { kind: 'tool_result', envelope: await ctx.delegation.startChild(record, op) };
  }
  if (effect.kind === 'call_tool' && isDelegateMessage(op)) {
    return { kind: 'tool_result', envelope: await ctx.delegation.sendMessage(record, op) };
  }
  if (effect.kind === 'call_tool') {
    const envelope = await ctx.tools.execute(toolRequestOf(record, op), signal);
    if (envelope.status !== 'waiting') return { kind: 'tool_result', envelope };
    // Nothing waits forever: the result request closes `expired` after the tool's expiry.
    const tool = (await ctx.tools.list(record.pinned)).find((t) => t.name === effect.tool);
    return {
      kind: 'tool_result',
      envelope,
      result_expires_in_ms: tool?.metadata.result_expires_in_ms ?? ctx.resultExpiresInMs,
    };
  }
  if (op.kind === 'compaction') return executeCompaction(ctx, record, op, reads);
  if (effect.kind === 'request_model_turn') return executeModelTurn(ctx, record, op, signal, reads, hooks);
  return {
    kind: 'operation_failed',
    error_class: 'unsupported',
    retryable: false,
    outcome_unknown: false,
    message: `cannot execute ${effect.kind}`,
  };
}

async function executeModelTurn(
  ctx: EngineContext,
  record: RunRecord,
  op: Operation,
  signal: AbortSignal,
  reads: OperationReads,
  hooks: DispatchHooks,
): Promise<OperationResult> {
  const effect = op.effect;
  if (effect.kind !== 'request_model_turn') throw new Error('not a model turn');
  // The reducer's transcript window, compiled from the latest compaction when it covers it.
  const compiled = await compileTurnContext(ctx, record, effect, reads);
  const input: ModelTurnInput = {
    run_id: record.run_id,
    operation_id: op.op_id,
    attempt: op.attempt,
    // The run's agent: the function its reducer is bound to (the contract's `functions:{path}`).
    ...(record.reducer !== null ? { agent_ref: `functions:${record.reducer.function_path}` } : {}),
    subject: record.subject,
    executor_config: record.executor_config,
    request: {
      tools_offered: effect.tools_offered,
      ...(effect.instructions !== undefined ? { instructions: effect.instructions } : {}),
      tool_results: effect.tool_results ?? [],
      ...(effect.output_schema !== undefined ? { output_schema: effect.output_schema } : {}),
      ...(effect.context !== undefined ? { context: effect.context } : {}),
    },
  };
  const limit = record.budgets.max_model_calls;
  // A dispatch's first request is counted by its start commit (a takeover counts it for a lost
  // dispatch, the result commit otherwise); each retry before it is made (hooks.beforeModelCall).
  // The retry budget goes on from op.provider_failures, the failures dispatches before a takeover met.
  let counted = 0;
  let first = true;
  const beforeModelCall = hooks.beforeModelCall;
  const limits: ModelTurnLimits = {
    ...(limit === undefined ? {} : { maxCalls: Math.max(1, limit - treeUsed(record, 'max_model_calls')) }),
    ...(op.provider_failures !== undefined ? { failuresBefore: op.provider_failures } : {}),
    ...(hooks.afterModelFailure !== undefined ? { afterFailure: hooks.afterModelFailure } : {}),
    ...(beforeModelCall !== undefined
      ? {
          beforeCall: async () => {
            if (first) {
              first = false;
              return;
            }
            await beforeModelCall();
            counted += 1;
          },
        }
      : {}),
  };
  const out = await ctx.models.turn(input, compiled, signal, limits);
  noteModelCall(out, compiled);
  const { provider_calls, host_attempts: _attempts, ...answer } = out as typeof out & Record<string, unknown>;
  const calls = {
    ...(typeof provider_calls === 'number' && provider_calls >= 0 ? { calls: provider_calls } : {}),
    ...(counted > 0 ? { counted } : {}),
  };
  if ('error_class' in out) {
    const { error_class, message, retryable, ...detail } = answer as typeof out & Record<string, unknown>;
    return {
      kind: 'operation_failed',
      error_class,
      retryable: retryable ?? false,
      outcome_unknown: false,
      message,
      ...calls,
      ...(Object.keys(detail).length > 0 ? { detail } : {}),
    };
  }
  return {
    kind: 'model_turn_completed',
    message: out.message,
    tool_calls: out.tool_calls,
    finish_reason: out.finish_reason,
    usage: out.usage,
    manifest: storedManifest(compiled.manifest),
    ...calls,
  };
}
