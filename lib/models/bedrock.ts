/**
 * The Amazon Bedrock model-turn function: one Converse call (`@aws-sdk/client-bedrock-runtime`
 * ConverseCommand, POST /model/{modelId}/converse) per model turn.
 *
 * docs/contracts/model-turn.md; docs/architecture.md, "The seams of a step" (the policy
 * adapter: model-neutral request in, typed answer or classified failure out; provider retries
 * visible; a deadline per call).
 *
 * Mapping of the model-neutral transcript to Converse:
 * - system messages → `system: [{text}]` (in order; blank ones dropped);
 * - user → a user message `[{text}]`; tool → a `toolResult {toolUseId: call_id, content: [{text}]}`
 *   block in a user message; assistant → an assistant message with a text block (when the text
 *   is not blank) and one `toolUse {toolUseId: call_id, name, input: args}` block per call;
 * - consecutive messages with the same Converse role are merged into one message (Converse
 *   requires alternating roles: tool results and a following user text share one user turn);
 * - Converse refuses blank text blocks, so a blank user text, tool output or an assistant turn
 *   with neither text nor calls is sent as the text `(empty)`;
 * - `request.tools_offered` → `toolConfig.tools[].toolSpec {name, description, inputSchema:
 *   {json: schema}}`. Converse refuses toolUse/toolResult blocks without a toolConfig, so when no
 *   tool is offered but the transcript has tool blocks, the tools named in it are declared with
 *   the schema `{type: "object"}` (the reducer still decides what a call may do).
 * Stop reasons: end_turn and stop_sequence → stop, tool_use → tool_calls, max_tokens and
 * model_context_window_exceeded → length, guardrail_intervened and content_filtered →
 * content_filter, any other → the raw reason (also kept in `raw_finish_reason`).
 *
 * Errors (ModelTurnError, never thrown): ThrottlingException, ServiceQuotaExceededException or
 * HTTP 429 → rate_limited (retryable); InternalServerException, ServiceUnavailableException,
 * ModelNotReadyException, ModelErrorException, other 5xx, network failures → transient
 * (retryable); ModelTimeoutException or the per-call deadline → timeout (retryable); the
 * caller's signal → cancelled; ValidationException, ResourceNotFoundException, other 4xx →
 * invalid_request; AccessDeniedException, 401/403 → auth; a tool call whose input is not an
 * object → invalid_response (retryable).
 *
 * No hidden retries: the client this module builds has maxAttempts 1 and the engine retries.
 * An injected client may retry; the attempts it made (`$metadata.attempts`) are reported in
 * `call.attempts` of the answer or error.
 */
import {
  BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  type Message,
  type SystemContentBlock,
  type Tool,
  type ToolUseBlock,
} from '@aws-sdk/client-bedrock-runtime';
import type { CompiledContext, ContextMessage, ToolOffered } from '../contracts/index.ts';
import {
  estimateTokens,
  failure,
  type ModelTurnFailure,
  type ModelTurnFunction,
  type ModelTurnResult,
  messageChars,
  type ProviderCallInfo,
  withDeadline,
} from './types.ts';

/** The SDK's JSON document type (args and schemas are JSON objects already parsed from JSON). */
type JsonDocument = NonNullable<ToolUseBlock['input']>;

/** Text sent in place of a blank text block (Converse refuses blank text). */
export const EMPTY_TEXT_PLACEHOLDER = '(empty)';

/** Default per-call deadline: 120 s. */
export const DEFAULT_BEDROCK_TIMEOUT_MS = 120_000;

export interface BedrockModelOptions {
  /** Model or inference-profile id, e.g. `anthropic.claude-3-5-sonnet-20240620-v1:0`. */
  modelId: string;
  /** A client to use (it keeps its own retry settings). Without one a client is built from the fields below. */
  client?: BedrockRuntimeClient | undefined;
  region?: string | undefined;
  /** e.g. `http://127.0.0.1:4010` for a local server. */
  endpoint?: string | undefined;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
  /** Per-call deadline in milliseconds (default 120 000), combined with the caller's signal. */
  timeoutMs?: number | undefined;
  inferenceConfig?:
    | { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] }
    | undefined;
  /** Clock for latency (ms); defaults to performance.now. */
  now?: (() => number) | undefined;
}

/** Creates the Bedrock Converse model-turn function. Never throws for a provider fault. */
export function createBedrockModel(options: BedrockModelOptions): ModelTurnFunction {
  const client =
    options.client ??
    new BedrockRuntimeClient({
      maxAttempts: 1,
      ...(options.region !== undefined && { region: options.region }),
      ...(options.endpoint !== undefined && { endpoint: options.endpoint }),
      ...(options.credentials !== undefined && { credentials: options.credentials }),
    });
  const timeoutMs = options.timeoutMs ?? DEFAULT_BEDROCK_TIMEOUT_MS;
  const now = options.now ?? (() => performance.now());

  return async (input, context, signal) => {
    if (signal.aborted) return failure('cancelled', 'the model turn was cancelled before it started', false);
    const request = toConverseRequest(
      options.modelId,
      context,
      input.request.tools_offered,
      options.inferenceConfig,
    );
    const deadline = withDeadline(signal, timeoutMs);
    const started = now();
    const call = (attempts: number, response_id?: string): ProviderCallInfo => ({
      provider: 'bedrock',
      model_id: options.modelId,
      response_id,
      latency_ms: Math.round(now() - started),
      attempts,
    });
    let output: ConverseCommandOutput;
    try {
      output = await client.send(new ConverseCommand(request), { abortSignal: deadline.signal });
    } catch (error) {
      return classifyBedrockError(error, {
        timedOut: deadline.timedOut(),
        cancelled: signal.aborted,
        timeoutMs,
        call: call(attemptsOf(error), requestIdOf(error)),
      });
    }
    return fromConverseOutput(
      output,
      context,
      call(output.$metadata.attempts ?? 1, output.$metadata.requestId),
    );
  };
}

/** Builds the ConverseCommand input for a transcript (see the module docstring for the mapping). */
export function toConverseRequest(
  modelId: string,
  context: CompiledContext,
  toolsOffered: readonly ToolOffered[],
  inferenceConfig?: BedrockModelOptions['inferenceConfig'],
): ConverseCommandInput {
  const system: SystemContentBlock[] = [];
  const messages: Message[] = [];
  const toolNamesInHistory = new Set<string>();
  const append = (role: 'user' | 'assistant', blocks: ContentBlock[]): void => {
    const last = messages[messages.length - 1];
    if (last?.role === role && last.content !== undefined) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const message of context.messages) {
    switch (message.role) {
      case 'system':
        if (message.content.trim() !== '') system.push({ text: message.content });
        break;
      case 'user':
        append('user', [{ text: nonBlank(message.content) }]);
        break;
      case 'tool':
        toolNamesInHistory.add(message.name);
        append('user', [
          { toolResult: { toolUseId: message.call_id, content: [{ text: nonBlank(message.content) }] } },
        ]);
        break;
      case 'assistant': {
        const blocks: ContentBlock[] = [];
        if (message.content !== null && message.content.trim() !== '') blocks.push({ text: message.content });
        for (const c of message.tool_calls) {
          toolNamesInHistory.add(c.name);
          blocks.push({ toolUse: { toolUseId: c.call_id, name: c.name, input: c.args as JsonDocument } });
        }
        append('assistant', blocks.length > 0 ? blocks : [{ text: EMPTY_TEXT_PLACEHOLDER }]);
        break;
      }
    }
  }
  const tools = toolSpecs(toolsOffered, toolNamesInHistory);
  return {
    modelId,
    messages,
    ...(system.length > 0 && { system }),
    ...(tools.length > 0 && { toolConfig: { tools } }),
    ...(inferenceConfig !== undefined && { inferenceConfig }),
  };
}

function toolSpecs(offered: readonly ToolOffered[], inHistory: ReadonlySet<string>): Tool[] {
  if (offered.length > 0) {
    return offered.map((t) => ({
      toolSpec: {
        name: t.name,
        ...(t.description !== undefined && { description: t.description }),
        inputSchema: { json: t.schema as JsonDocument },
      },
    }));
  }
  return [...inHistory]
    .sort()
    .map((name) => ({ toolSpec: { name, inputSchema: { json: { type: 'object' } } } }));
}

function nonBlank(text: string): string {
  return text.trim() === '' ? EMPTY_TEXT_PLACEHOLDER : text;
}

const STOP_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

/** Decodes a Converse answer into the contract's output (fails closed on a malformed tool call). */
export function fromConverseOutput(
  output: Pick<ConverseCommandOutput, 'output' | 'stopReason' | 'usage'>,
  context: CompiledContext,
  call: ProviderCallInfo,
): ModelTurnResult | ModelTurnFailure {
  const content = output.output?.message?.content ?? [];
  const texts: string[] = [];
  const toolCalls: ModelTurnResult['tool_calls'] = [];
  for (const block of content) {
    if (block.text !== undefined) texts.push(block.text);
    if (block.toolUse !== undefined) {
      const { toolUseId, name, input } = block.toolUse;
      if (toolUseId === undefined || name === undefined || !isJsonObject(input)) {
        return failure(
          'invalid_response',
          `toolUse block ${toolUseId ?? '?'} has no id, name or object input`,
          true,
          {
            call,
          },
        );
      }
      toolCalls.push({ call_id: toolUseId, name, args: input });
    }
  }
  const raw = output.stopReason ?? 'end_turn';
  const text = texts.length > 0 ? texts.join('') : null;
  const reported = output.usage?.inputTokens !== undefined && output.usage.outputTokens !== undefined;
  const usage = reported
    ? { input_tokens: output.usage?.inputTokens ?? 0, output_tokens: output.usage?.outputTokens ?? 0 }
    : {
        input_tokens: estimateTokens(context.messages.reduce((n, m) => n + messageChars(m), 0)),
        output_tokens: estimateTokens(
          messageChars({ role: 'assistant', content: text, tool_calls: toolCalls } as ContextMessage),
        ),
      };
  return {
    message: { text },
    tool_calls: toolCalls,
    finish_reason: STOP_REASONS[raw] ?? raw,
    usage,
    usage_fidelity: reported ? 'reported' : 'estimated',
    raw_finish_reason: raw,
    call,
  };
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface ErrorContext {
  timedOut: boolean;
  cancelled: boolean;
  timeoutMs: number;
  call: ProviderCallInfo;
}

const RATE_LIMITED = new Set([
  'ThrottlingException',
  'ServiceQuotaExceededException',
  'TooManyRequestsException',
]);
const TRANSIENT = new Set([
  'InternalServerException',
  'ServiceUnavailableException',
  'ModelNotReadyException',
  'ModelErrorException',
]);
const INVALID = new Set(['ValidationException', 'ResourceNotFoundException']);
const AUTH = new Set(['AccessDeniedException', 'UnrecognizedClientException', 'ExpiredTokenException']);

/** Classifies an error thrown by the SDK (see the module docstring). Never throws. */
export function classifyBedrockError(error: unknown, ctx: ErrorContext): ModelTurnFailure {
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  const status = httpStatusOf(error);
  const extra = {
    call: ctx.call,
    http_status: status,
    provider_code: status !== undefined ? name : undefined,
  };
  if (ctx.cancelled) return failure('cancelled', 'the model turn was cancelled', false, extra);
  if (ctx.timedOut || name === 'AbortError' || name === 'TimeoutError') {
    return failure('timeout', `Bedrock did not answer within ${ctx.timeoutMs} ms`, true, extra);
  }
  if (name === 'ModelTimeoutException') return failure('timeout', message, true, extra);
  if (RATE_LIMITED.has(name) || status === 429) return failure('rate_limited', message, true, extra);
  if (TRANSIENT.has(name) || (status !== undefined && status >= 500)) {
    return failure('transient', message, true, extra);
  }
  if (AUTH.has(name) || status === 401 || status === 403) return failure('auth', message, false, extra);
  if (INVALID.has(name) || (status !== undefined && status >= 400)) {
    return failure('invalid_request', message, false, extra);
  }
  // No HTTP answer at all: connection refused, reset, DNS. Worth another attempt.
  return failure('transient', `${name}: ${message}`, true, extra);
}

interface SdkMetadata {
  $metadata?: { httpStatusCode?: number; attempts?: number; requestId?: string };
}

function httpStatusOf(error: unknown): number | undefined {
  return (error as SdkMetadata | null)?.$metadata?.httpStatusCode;
}

function attemptsOf(error: unknown): number {
  return (error as SdkMetadata | null)?.$metadata?.attempts ?? 1;
}

function requestIdOf(error: unknown): string | undefined {
  return (error as SdkMetadata | null)?.$metadata?.requestId;
}
