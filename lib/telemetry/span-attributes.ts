/**
 * What each span of a run says: its name and attributes, built from the run record, the
 * operation and its result. Pure (no SDK, no I/O): lib/telemetry/otel.ts hands these to the SDK.
 * Attribute names follow the OpenTelemetry GenAI semantic conventions (`gen_ai.*`) plus our own
 * (`agent_runs.*`). Payload text (messages, tool arguments and results, reasons a user wrote)
 * appears only when `capture` is true (AGENT_RUNS_OTEL_CAPTURE_CONTENT).
 */
import type { CompiledContext, ContextMessage, Operation, RunRecord } from '../contracts/index.ts';
import type { OperationResult } from '../core/run-machine.ts';

/** A span attribute value as OTLP carries it. */
export type SpanValue = string | number | boolean | string[];
export type SpanAttributes = Record<string, SpanValue>;

/** A span to start: its name and first attributes. */
export interface SpanPlan {
  name: string;
  attributes: SpanAttributes;
}

/** What a span ends with: more attributes, and an error type when it failed (status ERROR). */
export interface SpanEnd {
  attributes: SpanAttributes;
  error?: string;
}

/** The attributes naming a run, on every span of its trace. */
function runAttributes(record: Pick<RunRecord, 'run_id' | 'epoch' | 'last_seq'>): SpanAttributes {
  return {
    'gen_ai.conversation.id': record.run_id,
    'agent_runs.run_id': record.run_id,
    'agent_runs.epoch': record.epoch,
    'agent_runs.seq': record.last_seq,
  };
}

/** The span of one step invocation (a child of the run span): `agent_runs.step`. */
export function stepSpan(runId: string): SpanPlan {
  return { name: 'agent_runs.step', attributes: { 'agent_runs.run_id': runId } };
}

/** What a step span learns once the lease is taken: the epoch and the seq it starts from. */
export function stepLeased(record: Pick<RunRecord, 'epoch' | 'last_seq'>): SpanAttributes {
  return { 'agent_runs.epoch': record.epoch, 'agent_runs.seq': record.last_seq };
}

/** The end of a step span: `agent_runs.outcome` is the step outcome's kind (progressed, busy, ...). */
export function stepEnd(outcome: { kind: string; status?: string; operations?: number }): SpanEnd {
  return {
    attributes: {
      'agent_runs.outcome': outcome.kind,
      ...(outcome.status !== undefined ? { 'agent_runs.status': outcome.status } : {}),
      ...(outcome.operations !== undefined ? { 'agent_runs.operations': outcome.operations } : {}),
    },
  };
}

/**
 * The span of one operation: `chat` for a model turn (renamed `chat {model}` once the model
 * answered, see modelCall), `execute_tool {tool}` for a tool call, `agent_runs.{kind}` otherwise.
 */
export function operationSpan(record: RunRecord, op: Operation, capture: boolean): SpanPlan {
  const base: SpanAttributes = {
    ...runAttributes(record),
    'agent_runs.op_id': op.op_id,
    'agent_runs.operation.kind': op.kind,
    'agent_runs.attempt': op.attempt,
  };
  const effect = op.effect;
  if (effect.kind === 'call_tool') {
    return {
      name: `execute_tool ${effect.tool}`,
      attributes: {
        ...base,
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': effect.tool,
        'gen_ai.tool.type': 'function',
        'gen_ai.tool.call.id': op.call_id ?? op.op_id,
        'agent_runs.tool.mutating': effect.mutating,
        ...(capture ? { 'gen_ai.tool.call.arguments': JSON.stringify(effect.args) } : {}),
      },
    };
  }
  if (effect.kind === 'request_model_turn' && op.kind !== 'compaction') {
    const fn = record.executor_config.model_turn_function;
    return {
      name: 'chat',
      attributes: {
        ...base,
        'gen_ai.operation.name': 'chat',
        ...(typeof fn === 'string' ? { 'agent_runs.model_turn_function': fn } : {}),
        ...(capture && effect.instructions !== undefined
          ? { 'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: effect.instructions }]) }
          : {}),
      },
    };
  }
  return { name: `agent_runs.${op.kind}`, attributes: base };
}

/** The end of an operation span: its outcome, usage and finish reason; `error.type` when it failed. */
export function operationEnd(result: OperationResult, capture: boolean): SpanEnd {
  const attributes: SpanAttributes = { 'agent_runs.outcome': result.kind };
  if ('usage' in result && result.usage !== undefined) {
    attributes['gen_ai.usage.input_tokens'] = result.usage.input_tokens;
    attributes['gen_ai.usage.output_tokens'] = result.usage.output_tokens;
  }
  switch (result.kind) {
    case 'model_turn_completed':
      attributes['gen_ai.response.finish_reasons'] = [result.finish_reason];
      if (capture) attributes['gen_ai.output.messages'] = JSON.stringify([outputMessage(result)]);
      return { attributes };
    case 'tool_result': {
      const envelope = result.envelope;
      attributes['agent_runs.outcome'] = envelope.status;
      if (capture && envelope.payload !== undefined)
        attributes['gen_ai.tool.call.result'] = JSON.stringify(envelope.payload);
      if (envelope.status !== 'failed') return { attributes };
      const error = envelope.error_class ?? 'tool_failed';
      return { attributes: { ...attributes, 'error.type': error }, error };
    }
    case 'operation_failed':
      return { attributes: { ...attributes, 'error.type': result.error_class }, error: result.error_class };
    default:
      return { attributes };
  }
}

/** The assistant message of a model turn in the GenAI conventions' message shape (captured content only). */
function outputMessage(result: Extract<OperationResult, { kind: 'model_turn_completed' }>): unknown {
  const parts: unknown[] = [];
  if (typeof result.message.text === 'string') parts.push({ type: 'text', content: result.message.text });
  for (const call of result.tool_calls)
    parts.push({ type: 'tool_call', id: call.call_id, name: call.name, arguments: call.args });
  return { role: 'assistant', parts, finish_reason: result.finish_reason };
}

/** A transcript message in the GenAI conventions' message shape (`{role, parts}`; captured content only). */
function inputMessage(message: ContextMessage): unknown {
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        parts: [
          ...(message.content !== null ? [{ type: 'text', content: message.content }] : []),
          ...message.tool_calls.map((c) => ({
            type: 'tool_call',
            id: c.call_id,
            name: c.name,
            arguments: c.args,
          })),
        ],
      };
    case 'tool':
      return {
        role: 'tool',
        parts: [{ type: 'tool_call_response', id: message.call_id, response: message.content }],
      };
    default:
      return { role: message.role, parts: [{ type: 'text', content: message.content }] };
  }
}

/** What the model host says about the provider call it made (ModelTurnResult.call). */
export interface ModelCallInfo {
  provider?: string;
  model_id?: string;
  response_id?: string | undefined;
}

/** The `call` a model host's answer carries, when it has the ModelCallInfo shape; else undefined. */
export function callInfo(out: object): ModelCallInfo | undefined {
  const call: unknown = 'call' in out ? out.call : undefined;
  if (typeof call !== 'object' || call === null) return undefined;
  const field = (name: string): string | undefined => {
    const v: unknown = (call as Record<string, unknown>)[name];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const [provider, model_id, response_id] = [field('provider'), field('model_id'), field('response_id')];
  return {
    ...(provider !== undefined ? { provider } : {}),
    ...(model_id !== undefined ? { model_id } : {}),
    ...(response_id !== undefined ? { response_id } : {}),
  };
}

/**
 * What a model turn's span learns from the model host's answer: the model (its name becomes
 * `chat {model}`) and provider; with `capture`, the transcript it was sent.
 */
export function modelCall(
  call: ModelCallInfo | undefined,
  context: CompiledContext,
  capture: boolean,
): { name?: string; attributes: SpanAttributes } {
  const attributes: SpanAttributes = {};
  if (capture) attributes['gen_ai.input.messages'] = JSON.stringify(context.messages.map(inputMessage));
  if (call?.model_id === undefined) return { attributes };
  attributes['gen_ai.request.model'] = call.model_id;
  attributes['gen_ai.response.model'] = call.model_id;
  if (call.provider !== undefined) attributes['gen_ai.provider.name'] = call.provider;
  if (call.response_id !== undefined) attributes['gen_ai.response.id'] = call.response_id;
  return { name: `chat ${call.model_id}`, attributes };
}

/** An ended run's span: from its creation to its end, with its outcome and usage. */
export interface RunSpanPlan extends SpanPlan {
  startMs: number;
  endMs: number;
  error?: string;
  /** The run that delegated this one: its run span is linked. */
  parentRunId?: string;
}

/**
 * The run span, emitted once, by the commit that ended the run: `invoke_agent {agent}`.
 * `agent_runs.outcome` is `succeeded`, `partial` or `blocked` for a completed run, else the
 * status (`failed`, `stopped`); `agent_runs.terminal_reason` is the record's reason code (a
 * failed run's is also its `error.type`); the summary is captured content only.
 */
export function runSpan(record: RunRecord, capture: boolean): RunSpanPlan | null {
  if (record.status !== 'completed' && record.status !== 'failed' && record.status !== 'stopped') return null;
  const agent = record.reducer?.function_path;
  const outcome = record.status === 'completed' ? record.outcome : record.status;
  const attributes: SpanAttributes = {
    ...runAttributes(record),
    'gen_ai.operation.name': 'invoke_agent',
    ...(agent !== undefined ? { 'gen_ai.agent.name': agent } : {}),
    'agent_runs.outcome': outcome,
    'agent_runs.depth': record.depth,
    'gen_ai.usage.input_tokens': record.usage.input_tokens,
    'gen_ai.usage.output_tokens': record.usage.output_tokens,
    'agent_runs.usage.turns': record.usage.turns,
    'agent_runs.usage.model_calls': record.usage.model_calls,
    'agent_runs.usage.tool_calls': record.usage.tool_calls,
    ...(record.parent_run_id !== undefined ? { 'agent_runs.parent_run_id': record.parent_run_id } : {}),
    'agent_runs.terminal_reason': record.terminal_reason,
  };
  if (capture && record.status === 'completed' && record.summary !== undefined)
    attributes['agent_runs.summary'] = record.summary;
  const failed = record.status === 'failed';
  if (failed) attributes['error.type'] = record.terminal_reason;
  return {
    name: agent !== undefined ? `invoke_agent ${agent}` : 'invoke_agent',
    attributes,
    startMs: record.created_at,
    endMs: record.finished_at,
    ...(failed ? { error: record.terminal_reason } : {}),
    ...(record.parent_run_id !== undefined ? { parentRunId: record.parent_run_id } : {}),
  };
}
