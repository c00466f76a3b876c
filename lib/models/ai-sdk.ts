/**
 * A model-turn function over any AI SDK language model (`@ai-sdk/amazon-bedrock`,
 * `@ai-sdk/anthropic`, `@ai-sdk/google`, `@ai-sdk/openai`, `@ai-sdk/openai-compatible` for Ollama
 * or vLLM, ...):
 * one `doGenerate` call of the model's provider per model turn, no AI SDK retries (the host
 * retries, visibly). Configured as data in ai-sdk-config.ts.
 *
 * docs/contracts/model-turn.md; docs/architecture.md, "The seams of a step" (the policy
 * adapter).
 *
 * Mapping of the model-neutral transcript to the AI SDK's prompt (LanguageModelV4Prompt):
 * system → `{role: 'system', content}`; user → a text part; assistant → a text part (when the
 * text is not blank) and one `tool-call` part per call (`input` the args object); tool → a
 * `tool-result` part with `output {type: 'text', value: content}`, consecutive tool messages
 * merged into one tool message. `request.tools_offered` → function tools `{name, description,
 * inputSchema: schema}`.
 *
 * Answer: text parts joined; each `tool-call` part's input must parse to a JSON object, else
 * invalid_response (fails closed). Finish reasons: stop, length, tool-calls → tool_calls,
 * content-filter → content_filter, any other → the raw reason (kept in `raw_finish_reason`).
 * Usage is `reported` when the provider counted both input and output tokens, else
 * `estimated` (chars / 4).
 *
 * Errors (ModelTurnError, never thrown): an AI SDK APICallError by HTTP status (429 →
 * rate_limited with Retry-After, else Gemini's RetryInfo delay, in `retry_after_ms`; 5xx →
 * transient; 408 → timeout; 401/403 → auth; other 4xx → invalid_request), the provider's error
 * code in `provider_code` (Bedrock's `x-amzn-errortype`, Anthropic's `error.type`, OpenAI's
 * `error.code`, Gemini's `error.status`); the per-call deadline → timeout; the caller's signal → cancelled; a body the provider cannot decode →
 * invalid_response (retryable); a missing API key → auth; a network failure or an API key
 * that cannot be read now → transient.
 */
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4GenerateResult,
  LanguageModelV4Message,
} from '@ai-sdk/provider';
import { APICallError } from '@ai-sdk/provider';
import { z } from 'zod';
import type { CompiledContext, ContextMessage, ToolOffered } from '../contracts/index.ts';
import {
  estimateTokens,
  failure,
  type ModelTurnFailure,
  type ModelTurnFunction,
  type ModelTurnResult,
  messageChars,
  type ProviderCallInfo,
  retryAfterMs,
  withDeadline,
} from './types.ts';

/** Default per-call deadline: 120 s. */
export const DEFAULT_AI_SDK_TIMEOUT_MS = 120_000;

/** Call settings passed to every `doGenerate` (the AI SDK's own names). */
export interface AiSdkCallSettings {
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  seed?: number;
}

export interface AiSdkModelOptions {
  /** The AI SDK language model, e.g. `createAnthropic({...})('claude-sonnet-4-5')`. */
  model: LanguageModelV4;
  /** Per-call deadline in milliseconds (default 120 000), combined with the caller's signal. */
  timeoutMs?: number | undefined;
  settings?: AiSdkCallSettings | undefined;
  /** Clock for latency (ms); defaults to performance.now. */
  now?: (() => number) | undefined;
}

/** Creates a model-turn function over an AI SDK language model. Never throws for a provider fault. */
export function createAiSdkModel(options: AiSdkModelOptions): ModelTurnFunction {
  const { model } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_AI_SDK_TIMEOUT_MS;
  const now = options.now ?? (() => performance.now());
  return async (input, context, signal) => {
    if (signal.aborted) return failure('cancelled', 'the model turn was cancelled before it started', false);
    const deadline = withDeadline(signal, timeoutMs);
    const started = now();
    const call = (response_id?: string): ProviderCallInfo => ({
      provider: model.provider,
      model_id: model.modelId,
      response_id,
      latency_ms: Math.round(now() - started),
      attempts: 1,
    });
    let result: LanguageModelV4GenerateResult;
    try {
      result = await model.doGenerate({
        ...options.settings,
        ...toAiSdkCall(context, input.request.tools_offered),
        abortSignal: deadline.signal,
      });
    } catch (error) {
      if (signal.aborted)
        return failure('cancelled', 'the model turn was cancelled', false, { call: call() });
      if (deadline.timedOut()) {
        return failure('timeout', `${model.provider} did not answer within ${timeoutMs} ms`, true, {
          call: call(),
        });
      }
      return classifyAiSdkError(error, call());
    }
    return fromAiSdkResult(result, context, call(result.response?.id));
  };
}

/** The prompt and tools of one call for a transcript (see the module docstring). */
export function toAiSdkCall(
  context: CompiledContext,
  toolsOffered: readonly ToolOffered[],
): Pick<LanguageModelV4CallOptions, 'prompt' | 'tools'> {
  const prompt: LanguageModelV4Message[] = [];
  for (const message of context.messages) {
    const next = toAiSdkMessage(message);
    const last = prompt[prompt.length - 1];
    if (last?.role === 'tool' && next.role === 'tool') last.content.push(...next.content);
    else prompt.push(next);
  }
  const tools: LanguageModelV4FunctionTool[] = toolsOffered.map((t) => ({
    type: 'function',
    name: t.name,
    ...(t.description !== undefined && { description: t.description }),
    inputSchema: t.schema as LanguageModelV4FunctionTool['inputSchema'],
  }));
  return { prompt, ...(tools.length > 0 && { tools }) };
}

function toAiSdkMessage(message: ContextMessage): LanguageModelV4Message {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: [{ type: 'text', text: message.content }] };
    case 'tool':
      return {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: message.call_id,
            toolName: message.name,
            output: { type: 'text', value: message.content },
          },
        ],
      };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...(message.content !== null && message.content.trim() !== ''
            ? [{ type: 'text' as const, text: message.content }]
            : []),
          ...message.tool_calls.map((c) => ({
            type: 'tool-call' as const,
            toolCallId: c.call_id,
            toolName: c.name,
            input: c.args,
          })),
        ],
      };
  }
}

const FINISH_REASONS: Record<string, string> = {
  stop: 'stop',
  length: 'length',
  'tool-calls': 'tool_calls',
  'content-filter': 'content_filter',
};

/** Decodes a `doGenerate` result into the contract's output (fails closed on a malformed tool call). */
export function fromAiSdkResult(
  result: LanguageModelV4GenerateResult,
  context: CompiledContext,
  call: ProviderCallInfo,
): ModelTurnResult | ModelTurnFailure {
  const texts: string[] = [];
  const toolCalls: ModelTurnResult['tool_calls'] = [];
  for (const part of result.content) {
    if (part.type === 'text') texts.push(part.text);
    if (part.type === 'tool-call' && part.providerExecuted !== true) {
      const args = parseObject(part.input);
      if (args === undefined) {
        return failure('invalid_response', `tool call ${part.toolCallId} input is not a JSON object`, true, {
          call,
        });
      }
      toolCalls.push({ call_id: part.toolCallId, name: part.toolName, args });
    }
  }
  const text = texts.length > 0 ? texts.join('') : null;
  const { unified, raw } = result.finishReason;
  const inputTokens = result.usage.inputTokens.total;
  const outputTokens = result.usage.outputTokens.total;
  const reported = inputTokens !== undefined && outputTokens !== undefined;
  const usage = reported
    ? { input_tokens: inputTokens, output_tokens: outputTokens }
    : {
        input_tokens: estimateTokens(context.messages.reduce((n, m) => n + messageChars(m), 0)),
        output_tokens: estimateTokens(
          messageChars({ role: 'assistant', content: text, tool_calls: toolCalls }),
        ),
      };
  return {
    message: { text },
    tool_calls: toolCalls,
    finish_reason: FINISH_REASONS[unified] ?? raw ?? unified,
    usage,
    usage_fidelity: reported ? 'reported' : 'estimated',
    raw_finish_reason: raw ?? unified,
    call,
  };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text === '' ? '{}' : text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** AI SDK error names meaning the provider's answer could not be decoded. */
const UNDECODABLE = new Set([
  'AI_JSONParseError',
  'AI_TypeValidationError',
  'AI_InvalidResponseDataError',
  'AI_EmptyResponseBodyError',
]);

/** Classifies what `doGenerate` threw (see the module docstring). Never throws. */
export function classifyAiSdkError(error: unknown, call: ProviderCallInfo): ModelTurnFailure {
  const name = error instanceof Error ? error.name : 'Error';
  const message = error instanceof Error ? error.message : String(error);
  if (APICallError.isInstance(error) && error.statusCode !== undefined) {
    const status = error.statusCode;
    const headers = error.responseHeaders ?? {};
    const body = errorBodyOf(headers, error.responseBody);
    const extra = {
      call,
      http_status: status,
      provider_code: body.providerCode,
      retry_after_ms: retryAfterMs(headers['retry-after'], Date.now()) ?? body.retryDelayMs,
    };
    const text = `HTTP ${status}: ${message}`;
    if (status === 429) return failure('rate_limited', text, true, extra);
    if (status >= 500) return failure('transient', text, true, extra);
    if (status === 408) return failure('timeout', text, true, extra);
    if (status === 401 || status === 403) return failure('auth', text, false, extra);
    return failure('invalid_request', text, false, extra);
  }
  if (UNDECODABLE.has(name)) return failure('invalid_response', `${name}: ${message}`, true, { call });
  if (name === 'AI_LoadAPIKeyError' || name === 'AI_LoadSettingError') {
    return failure('auth', `${name}: ${message}`, false, { call });
  }
  const retryable = (error as { retryable?: unknown } | null)?.retryable;
  if (retryable === false) return failure('auth', `${name}: ${message}`, false, { call });
  // No HTTP answer at all (connection refused, reset, DNS) or a key not readable now.
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return failure('transient', `${name}: ${message}${cause}`, true, { call });
}

/** The fields of a provider's JSON error body read here; anything else is ignored. */
const ErrorBody = z.object({
  error: z
    .object({
      type: z.unknown().optional(),
      code: z.unknown().optional(),
      status: z.unknown().optional(),
      details: z.array(z.unknown()).optional(),
    })
    .optional(),
  __type: z.unknown().optional(),
});

/** Gemini's google.rpc.RetryInfo detail; `retryDelay` is a protobuf Duration such as `"7s"`. */
const RetryInfo = z.object({
  '@type': z.literal('type.googleapis.com/google.rpc.RetryInfo'),
  retryDelay: z.string().regex(/^\d+(\.\d+)?s$/),
});

/**
 * What an error answer says beyond its status: the provider's own code (Bedrock's header, else
 * the first string of `error.type` (Anthropic), `error.code` (OpenAI), `error.status` (Gemini,
 * e.g. RESOURCE_EXHAUSTED), `__type`) and Gemini's RetryInfo delay in milliseconds.
 */
function errorBodyOf(
  headers: Record<string, string>,
  text: string | undefined,
): { providerCode: string | undefined; retryDelayMs: number | undefined } {
  let raw: unknown;
  try {
    raw = JSON.parse(text ?? '');
  } catch {
    raw = undefined;
  }
  const body = ErrorBody.safeParse(raw);
  const error = body.success ? body.data.error : undefined;
  const amzn = headers['x-amzn-errortype'];
  const code =
    amzn !== undefined && amzn !== ''
      ? amzn.split(':')[0]
      : [error?.type, error?.code, error?.status, body.data?.__type].find((c) => typeof c === 'string');
  const retryInfo = (error?.details ?? []).map((d) => RetryInfo.safeParse(d)).find((d) => d.success);
  return {
    providerCode: code as string | undefined,
    retryDelayMs:
      retryInfo?.data !== undefined
        ? Math.round(Number.parseFloat(retryInfo.data.retryDelay) * 1000)
        : undefined,
  };
}
