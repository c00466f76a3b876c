/**
 * A model call of the AI SDK as a `model_turn` operation, and back: the begin request (the
 * function tools offered), the `model_turn_completed` result recorded from a generate result,
 * the generate result rebuilt from a recorded one, and steers as user messages. The recorded
 * form keeps the text, the client-executed tool calls, the finish reason and the token counts;
 * the agent sees that form on the first run and on every replay alike.
 * docs/contracts/run-lifecycle.md, "Operations"; reducer contract `ModelTurnCompletedData`.
 */
import type { LanguageModelMiddleware } from 'ai';
import type { ClientOperationResult, JsonObject, ToolOffered } from '../contracts/index.ts';
import type { RecordedResult } from './journal.ts';

type WrapGenerate = NonNullable<LanguageModelMiddleware['wrapGenerate']>;
/** What a language model's `doGenerate` takes (LanguageModelV4CallOptions). */
export type CallOptions = Parameters<WrapGenerate>[0]['params'];
/** What a language model's `doGenerate` resolves with (LanguageModelV4GenerateResult). */
export type GenerateResult = Awaited<ReturnType<WrapGenerate>>;
type Prompt = CallOptions['prompt'];
type FinishReason = GenerateResult['finishReason']['unified'];
type ModelTurnData = Extract<RecordedResult, { kind: 'model_turn_completed' }>['data'];

const FINISH_REASONS: readonly FinishReason[] = [
  'stop',
  'length',
  'content-filter',
  'tool-calls',
  'error',
  'interrupted',
  'other',
];
/** The args key a tool input that is no JSON object is kept under (its JSON text). */
const NON_OBJECT_INPUT = 'ai_sdk_input_json';

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The begin request of a model turn: the function tools the call offers (name, description, JSON schema). */
export function modelTurnRequest(params: CallOptions): { tools_offered: ToolOffered[] } {
  const tools_offered: ToolOffered[] = [];
  for (const tool of params.tools ?? []) {
    if (tool.type !== 'function') continue;
    tools_offered.push({
      name: tool.name,
      kind: 'function',
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      schema: (isObject(tool.inputSchema) ? tool.inputSchema : {}) as JsonObject,
    });
  }
  return { tools_offered };
}

/** The args a tool call is recorded with: its input when a JSON object, else its JSON text under one key. */
function argsOf(input: string): JsonObject {
  try {
    const parsed: unknown = JSON.parse(input);
    if (isObject(parsed)) return parsed;
  } catch {
    // Not JSON: kept as it came, below.
  }
  return { [NON_OBJECT_INPUT]: input };
}

/** The JSON text of a tool call's input, from its recorded args. */
function inputOf(args: JsonObject): string {
  const raw = args[NON_OBJECT_INPUT];
  return Object.keys(args).length === 1 && typeof raw === 'string' ? raw : JSON.stringify(args);
}

/**
 * The `model_turn_completed` result a generate result is recorded as: the text parts joined
 * (null when none), the tool calls the client executes, the unified finish reason and the total
 * input and output tokens (0 when the provider gave none).
 */
export function modelTurnReport(
  result: GenerateResult,
): Extract<ClientOperationResult, { kind: 'model_turn_completed' }> {
  const texts: string[] = [];
  const tool_calls: { call_id: string; name: string; args: JsonObject }[] = [];
  for (const part of result.content) {
    if (part.type === 'text') texts.push(part.text);
    if (part.type === 'tool-call' && part.providerExecuted !== true)
      tool_calls.push({ call_id: part.toolCallId, name: part.toolName, args: argsOf(part.input) });
  }
  return {
    kind: 'model_turn_completed',
    message: { text: texts.length > 0 ? texts.join('') : null },
    tool_calls,
    finish_reason: result.finishReason.unified,
    usage: {
      input_tokens: result.usage.inputTokens.total ?? 0,
      output_tokens: result.usage.outputTokens.total ?? 0,
    },
  };
}

/** The generate result the agent sees for a recorded model turn (first run and replay alike). */
export function generateResultOf(data: ModelTurnData): GenerateResult {
  const content: GenerateResult['content'] = [];
  if (typeof data.message.text === 'string') content.push({ type: 'text', text: data.message.text });
  for (const call of data.tool_calls)
    content.push({
      type: 'tool-call',
      toolCallId: call.call_id,
      toolName: call.name,
      input: inputOf(call.args),
    });
  const unified = FINISH_REASONS.find((r) => r === data.finish_reason) ?? 'other';
  const tokens = (total: number) => ({ total, cacheRead: undefined, cacheWrite: undefined });
  return {
    content,
    finishReason: { unified, raw: data.finish_reason },
    usage: {
      inputTokens: { ...tokens(data.usage.input_tokens), noCache: undefined },
      outputTokens: { total: data.usage.output_tokens, text: undefined, reasoning: undefined },
    },
    warnings: [],
  };
}

/** A steer's input as the user message the model sees (a string as is, anything else as JSON). */
function steerMessage(input: unknown): Prompt[number] {
  const text = typeof input === 'string' ? input : JSON.stringify(input);
  return { role: 'user', content: [{ type: 'text', text }] };
}

/**
 * Where steers enter the conversation: each model turn's steers are inserted after the
 * messages its prompt had, and stay there for every later turn (the AI SDK rebuilds each step's
 * prompt from its own messages, which do not hold them).
 */
export class SteerInsertions {
  readonly #insertions: { at: number; messages: Prompt }[] = [];

  /** The prompt of a call with every earlier insertion and this turn's `steers` (inputs) added. */
  apply(prompt: Prompt, steers: readonly unknown[]): Prompt {
    if (steers.length > 0) this.#insertions.push({ at: prompt.length, messages: steers.map(steerMessage) });
    if (this.#insertions.length === 0) return prompt;
    const out: Prompt = [];
    prompt.forEach((message, i) => {
      for (const ins of this.#insertions) if (ins.at === i) out.push(...ins.messages);
      out.push(message);
    });
    for (const ins of this.#insertions) if (ins.at >= prompt.length) out.push(...ins.messages);
    return out;
  }
}
