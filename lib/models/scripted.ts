/**
 * The scripted local model: a deterministic model-turn function the local stack serves when no
 * provider is configured (lib/local/start-run.ts), so a first run works offline. It calls
 * no network and reads nothing but its input; only lib/local wires it, never a deployed stack.
 *
 * docs/architecture.md, "The seams of a step" (a fixed policy output in place of a model);
 * docs/contracts/model-turn.md.
 */
import type { CompiledContext, ContextMessage, ModelTurnInput, ToolOffered } from '../contracts/index.ts';
import {
  estimateTokens,
  failure,
  type ModelTurnFunction,
  type ModelTurnResult,
  messageChars,
} from './types.ts';

/** What the scripted model reports as its call (`call.provider`, `call.model_id`). */
export const SCRIPTED_MODEL = { provider: 'local', model_id: 'local/scripted' } as const;

/** The banner's words for it. */
export const SCRIPTED_MODEL_DESCRIPTION = 'scripted local model (no provider configured)';

/** Longest tool result (characters) quoted in the final answer; the rest is cut with `…`. */
export const SCRIPTED_QUOTE_CHARS = 200;

/**
 * Creates the scripted model. Each turn, from the compiled transcript and the offered tools:
 * 1. a tool message after the last user message → a final text answer quoting each such result
 *    (`The <tool> tool returned: <content>`, each cut to SCRIPTED_QUOTE_CHARS), finish `stop`;
 * 2. else, tools offered → one call of one tool, finish `tool_calls`: `echo` when offered, else
 *    the first `function` tool other than `wait_for_callback` (which parks until a delivery),
 *    else the first tool. Its args are built from the tool's JSON Schema (see scriptedArgs) and
 *    its call_id is `scripted-<operation_id>`;
 * 3. else → a plain text answer echoing the last user message, finish `stop`.
 * Usage is estimated as chars/4 (`usage_fidelity: 'estimated'`); `call` is SCRIPTED_MODEL with
 * one attempt. Deterministic: the same input and context give the same answer. An already
 * aborted signal → ModelTurnError cancelled (not retryable); nothing else fails.
 */
export function createScriptedModel(): ModelTurnFunction {
  return async (input, context, signal) => {
    if (signal.aborted) return failure('cancelled', 'the model turn was cancelled before it started', false);
    const answer = scriptedTurn(input, context);
    const inputChars = context.messages.reduce((n, m) => n + messageChars(m), 0);
    const result: ModelTurnResult = {
      message: { text: answer.content },
      tool_calls: answer.tool_calls,
      finish_reason: answer.tool_calls.length > 0 ? 'tool_calls' : 'stop',
      usage: {
        input_tokens: estimateTokens(inputChars),
        output_tokens: estimateTokens(messageChars(answer)),
      },
      usage_fidelity: 'estimated',
      call: { ...SCRIPTED_MODEL, attempts: 1 },
    };
    return result;
  };
}

type AssistantMessage = Extract<ContextMessage, { role: 'assistant' }>;

/** The scripted answer as an assistant message (pure; see createScriptedModel). */
export function scriptedTurn(input: ModelTurnInput, context: CompiledContext): AssistantMessage {
  const messages = context.messages;
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'user') {
      lastUser = i;
      break;
    }
  }
  const userText = lastUser >= 0 ? (messages[lastUser] as { content: string }).content : '';
  const results = messages
    .slice(lastUser + 1)
    .filter((m): m is Extract<ContextMessage, { role: 'tool' }> => m.role === 'tool');
  if (results.length > 0) {
    const quoted = results.map((r) => `The ${r.name} tool returned: ${quote(r.content)}`);
    return { role: 'assistant', content: `${quoted.join('\n')}\nDone.`, tool_calls: [] };
  }
  const tool = chooseTool(input.request.tools_offered);
  if (tool !== undefined) {
    return {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          call_id: `scripted-${input.operation_id}`,
          name: tool.name,
          args: scriptedArgs(tool.schema, userText),
        },
      ],
    };
  }
  const content =
    userText === ''
      ? 'Hello from the scripted local model.'
      : `You said: ${quote(userText)} (scripted local model: configure a provider for real answers).`;
  return { role: 'assistant', content, tool_calls: [] };
}

function quote(text: string): string {
  return text.length > SCRIPTED_QUOTE_CHARS ? `${text.slice(0, SCRIPTED_QUOTE_CHARS)}…` : text;
}

function chooseTool(tools: readonly ToolOffered[]): ToolOffered | undefined {
  return (
    tools.find((t) => t.name === 'echo') ??
    tools.find((t) => t.kind === 'function' && t.name !== 'wait_for_callback') ??
    tools[0]
  );
}

/**
 * Arguments that satisfy `schema`, an object schema: each required property (when none is, the
 * only property if there is exactly one) gets a value of its own schema: `const`, else the first `enum` value,
 * else `default`, else by type: string → `text` (padded to minLength, cut to maxLength), number or
 * integer → `minimum` (else 0), boolean → false, array → `minItems` items, object → recursively,
 * null → null. A schema that declares no properties and does not forbid extra ones gets
 * `{text}`. `text` is the last user message. Pure.
 */
export function scriptedArgs(schema: Record<string, unknown>, text: string): Record<string, unknown> {
  const value = valueFor(schema, text, 0);
  return isRecord(value) ? value : {};
}

function valueFor(schema: unknown, text: string, depth: number): unknown {
  if (!isRecord(schema)) return text;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('default' in schema) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
      const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
      return text.padEnd(min, '.').slice(0, max);
    }
    case 'number':
    case 'integer':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const n = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: n }, () => valueFor(schema.items, text, depth + 1));
    }
    default:
      return objectFor(schema, text, depth);
  }
}

function objectFor(schema: Record<string, unknown>, text: string, depth: number): Record<string, unknown> {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const names = Object.keys(properties);
  if (names.length === 0) return schema.additionalProperties === false || depth > 0 ? {} : { text };
  const required = Array.isArray(schema.required)
    ? schema.required.filter((n): n is string => typeof n === 'string')
    : [];
  const chosen = required.length > 0 ? required : names.length === 1 ? names : [];
  const out: Record<string, unknown> = {};
  if (depth > 8) return out; // a recursive schema: stop rather than loop
  for (const name of chosen) out[name] = valueFor(properties[name], text, depth + 1);
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
