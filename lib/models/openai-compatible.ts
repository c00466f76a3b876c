/**
 * The OpenAI-compatible model-turn function: one `POST {baseUrl}/chat/completions` per model
 * turn, for OpenAI itself and for servers that speak its chat-completions format (vLLM,
 * Ollama, LiteLLM, Azure-style gateways) at a configurable base URL.
 *
 * docs/contracts/model-turn.md; docs/architecture.md, "The seams of a step" (the policy
 * adapter).
 *
 * Mapping: system/user → `{role, content}`; assistant → `{role: 'assistant', content (null when
 * absent), tool_calls?: [{id: call_id, type: 'function', function: {name, arguments:
 * JSON.stringify(args)}}]}` (tool_calls omitted when empty); tool → `{role: 'tool', tool_call_id,
 * content}`; `request.tools_offered` → `tools: [{type: 'function', function: {name, description,
 * parameters: schema}}]`. The answer's `choices[0]` is decoded with zod: tool call arguments must
 * parse to a JSON object, otherwise invalid_response (fails closed). finish_reason stop, length,
 * tool_calls, content_filter pass through (`function_call` → tool_calls; missing → tool_calls
 * when there are calls, else stop). Usage from `usage.prompt_tokens` / `completion_tokens`
 * (estimated as chars/4 when the server reports none).
 *
 * Errors (ModelTurnError, never thrown): HTTP 429 → rate_limited (retryable, Retry-After kept
 * in `retry_after_ms`); 5xx → transient (retryable); 408 or the per-call deadline → timeout
 * (retryable); the caller's signal → cancelled; 401/403 → auth; 400 and other 4xx →
 * invalid_request; network failure → transient (retryable); a body that is not a chat
 * completion → invalid_response (retryable); an API key that cannot be read (see
 * `apiKey`) → auth or transient, before any request. No retries inside: `call.attempts` is always 1.
 */
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
export const DEFAULT_OPENAI_TIMEOUT_MS = 120_000;

export interface OpenAiCompatibleOptions {
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  /**
   * Sent as `Authorization: Bearer <apiKey>` when set: the key itself, or a function that
   * resolves it before each call (a cached secret read). A function that rejects makes the
   * turn fail without a request: `auth` (not retryable) when the error carries
   * `retryable: false`, otherwise `transient` (retryable).
   */
  apiKey?: string | (() => Promise<string>) | undefined;
  model: string;
  /** The fetch to use (default: global fetch). */
  fetch?: typeof fetch | undefined;
  /** Per-call deadline in milliseconds (default 120 000), combined with the caller's signal. */
  timeoutMs?: number | undefined;
  /** Extra body fields (e.g. `{temperature: 0, max_tokens: 1024}`); they cannot replace model, messages or tools. */
  params?: Record<string, unknown> | undefined;
  /** Extra request headers. */
  headers?: Record<string, string> | undefined;
  /** Clock for latency (ms); defaults to performance.now. */
  now?: (() => number) | undefined;
}

/** A chat message in OpenAI format, as this adapter sends it. */
export type OpenAiMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Creates the OpenAI-compatible model-turn function. Never throws for a provider fault. */
export function createOpenAiCompatibleModel(options: OpenAiCompatibleOptions): ModelTurnFunction {
  const doFetch = options.fetch ?? fetch;
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_OPENAI_TIMEOUT_MS;
  const now = options.now ?? (() => performance.now());

  return async (input, context, signal) => {
    if (signal.aborted) return failure('cancelled', 'the model turn was cancelled before it started', false);
    const body = {
      ...options.params,
      ...toChatRequest(options.model, context, input.request.tools_offered),
    };
    const deadline = withDeadline(signal, timeoutMs);
    const started = now();
    const call = (response_id?: string): ProviderCallInfo => ({
      provider: 'openai-compatible',
      model_id: options.model,
      response_id,
      latency_ms: Math.round(now() - started),
      attempts: 1,
    });
    let apiKey: string | undefined;
    try {
      apiKey = typeof options.apiKey === 'function' ? await options.apiKey() : options.apiKey;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const retryable = (error as { retryable?: unknown } | null)?.retryable !== false;
      return retryable
        ? failure('transient', `cannot read the API key: ${reason}`, true)
        : failure('auth', `cannot read the API key: ${reason}`, false);
    }
    let status: number;
    let text: string;
    let retryAfter: string | null;
    try {
      const response = await doFetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(apiKey !== undefined && { authorization: `Bearer ${apiKey}` }),
          ...options.headers,
        },
        body: JSON.stringify(body),
        signal: deadline.signal,
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      text = await response.text();
    } catch (error) {
      if (signal.aborted)
        return failure('cancelled', 'the model turn was cancelled', false, { call: call() });
      if (deadline.timedOut()) {
        return failure('timeout', `${url} did not answer within ${timeoutMs} ms`, true, { call: call() });
      }
      const reason = error instanceof Error ? `${error.message}${causeOf(error)}` : String(error);
      return failure('transient', `request to ${url} failed: ${reason}`, true, { call: call() });
    }
    if (status < 200 || status >= 300) {
      return classifyHttpError(status, text, retryAfterMs(retryAfter, Date.now()), call());
    }
    return fromChatCompletion(text, context, call);
  };
}

/** Builds the chat-completions body `{model, messages, tools?}` for a transcript. */
export function toChatRequest(
  model: string,
  context: CompiledContext,
  toolsOffered: readonly ToolOffered[],
): { model: string; messages: OpenAiMessage[]; tools?: unknown[] } {
  const messages = context.messages.map(toOpenAiMessage);
  const tools = toolsOffered.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      ...(t.description !== undefined && { description: t.description }),
      parameters: t.schema,
    },
  }));
  return { model, messages, ...(tools.length > 0 && { tools }) };
}

function toOpenAiMessage(message: ContextMessage): OpenAiMessage {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'tool':
      return { role: 'tool', tool_call_id: message.call_id, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.tool_calls.length > 0 && {
          tool_calls: message.tool_calls.map((c) => ({
            id: c.call_id,
            type: 'function' as const,
            function: { name: c.name, arguments: JSON.stringify(c.args) },
          })),
        }),
      };
  }
}

const ChatCompletion = z.object({
  id: z.string().optional(),
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().min(1),
                type: z.string().optional(),
                function: z.object({ name: z.string().min(1), arguments: z.string() }),
              }),
            )
            .nullable()
            .optional(),
        }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().int().nonnegative(),
      completion_tokens: z.number().int().nonnegative(),
    })
    .nullable()
    .optional(),
});

const ToolArgs = z.record(z.string(), z.unknown());

/** Decodes a chat-completion body (text) into the contract's output; fails closed with invalid_response. */
export function fromChatCompletion(
  body: string,
  context: CompiledContext,
  call: (responseId?: string) => ProviderCallInfo,
): ModelTurnResult | ModelTurnFailure {
  const parsed = ChatCompletion.safeParse(parseJson(body));
  if (!parsed.success) {
    return failure('invalid_response', `not a chat completion: ${z.prettifyError(parsed.error)}`, true, {
      call: call(),
    });
  }
  const completion = parsed.data;
  const info = call(completion.id);
  const choice = completion.choices[0];
  if (choice === undefined)
    return failure('invalid_response', 'no choice in the completion', true, { call: info });
  const toolCalls: ModelTurnResult['tool_calls'] = [];
  for (const c of choice.message.tool_calls ?? []) {
    const args = ToolArgs.safeParse(parseJson(c.function.arguments));
    if (!args.success) {
      return failure('invalid_response', `tool call ${c.id} arguments are not a JSON object`, true, {
        call: info,
      });
    }
    toolCalls.push({ call_id: c.id, name: c.function.name, args: args.data });
  }
  const text = choice.message.content ?? null;
  const raw = choice.finish_reason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  const usage = completion.usage
    ? { input_tokens: completion.usage.prompt_tokens, output_tokens: completion.usage.completion_tokens }
    : {
        input_tokens: estimateTokens(context.messages.reduce((n, m) => n + messageChars(m), 0)),
        output_tokens: estimateTokens(
          messageChars({ role: 'assistant', content: text, tool_calls: toolCalls }),
        ),
      };
  return {
    message: { text },
    tool_calls: toolCalls,
    finish_reason: raw === 'function_call' ? 'tool_calls' : raw,
    usage,
    usage_fidelity: completion.usage ? 'reported' : 'estimated',
    raw_finish_reason: raw,
    call: info,
  };
}

/** Classifies a non-2xx answer (see the module docstring). */
export function classifyHttpError(
  status: number,
  body: string,
  retryAfter: number | undefined,
  call: ProviderCallInfo,
): ModelTurnFailure {
  const error = z
    .object({ error: z.object({ message: z.string().optional(), code: z.unknown().optional() }) })
    .safeParse(parseJson(body));
  const detail = error.success ? (error.data.error.message ?? '') : body.slice(0, 500);
  const code = error.success && typeof error.data.error.code === 'string' ? error.data.error.code : undefined;
  const message = `HTTP ${status}${detail !== '' ? `: ${detail}` : ''}`;
  const extra = { http_status: status, provider_code: code, retry_after_ms: retryAfter, call };
  if (status === 429) return failure('rate_limited', message, true, extra);
  if (status >= 500) return failure('transient', message, true, extra);
  if (status === 408) return failure('timeout', message, true, extra);
  if (status === 401 || status === 403) return failure('auth', message, false, extra);
  return failure('invalid_request', message, false, extra);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined; // the schema check that follows reports it
  }
}

function causeOf(error: Error): string {
  return error.cause instanceof Error ? ` (${error.cause.message})` : '';
}
