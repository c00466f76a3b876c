/**
 * Shared shapes of the model-turn functions: the function type every adapter implements, the
 * extra (growth-rule) fields they add to the contract's output and error, the error classes, and
 * small helpers (usage estimate, signal/deadline combination).
 *
 * docs/contracts/model-turn.md (input, output, error) and "Growth rule"
 * (new optional fields may appear; readers ignore fields they do not know); docs/architecture.md,
 * "The seams of a step" (the policy adapter: model id, latency, usage, response id; provider
 * retries visible; a deadline per call).
 */
import type {
  CompiledContext,
  ContextMessage,
  ModelTurnError,
  ModelTurnInput,
  ModelTurnOutput,
} from '../contracts/index.ts';

/**
 * The classes a model-turn function reports in `ModelTurnError.error_class`.
 * - rate_limited (retryable): the provider throttled the call (HTTP 429, ThrottlingException).
 * - transient (retryable): 5xx, service unavailable, network failure, model not ready.
 * - timeout (retryable): the per-call deadline passed (or the provider timed out).
 * - cancelled (not retryable): the caller's AbortSignal fired (the engine cancelled the turn).
 * - invalid_request (not retryable): the provider refused the request (HTTP 400, ValidationException).
 * - auth (not retryable): credentials or permissions refused (HTTP 401/403, AccessDeniedException).
 * - invalid_response (retryable): the provider answered with a body we cannot decode (fails closed).
 * - divergence / recording_exhausted / recording_not_found (not retryable): the recorded model.
 * - model_turn_function_not_found / function_error / output_invalid (not retryable): the host.
 * - retries_exhausted (retryable, an outage): the host; the turn's retry budget was used up by
 *   dispatches before a takeover, so no request is made.
 */
export const MODEL_ERROR_CLASSES = [
  'rate_limited',
  'transient',
  'timeout',
  'cancelled',
  'invalid_request',
  'auth',
  'invalid_response',
  'divergence',
  'recording_exhausted',
  'recording_not_found',
  'model_turn_function_not_found',
  'function_error',
  'output_invalid',
  'retries_exhausted',
] as const;
export type ModelErrorClass = (typeof MODEL_ERROR_CLASSES)[number];

/** How trustworthy `usage` is: counted by the provider, or estimated by us (chars / 4). */
export type UsageFidelity = 'reported' | 'estimated';

/**
 * What one provider call was: model id, provider response id, wall-clock latency (ms) and the
 * number of HTTP attempts made for this turn (1 unless a client retried, which is then visible).
 */
export interface ProviderCallInfo {
  /** Ours (`bedrock`, `openai-compatible`, `recorded`) or an AI SDK model's `provider` (e.g. `anthropic.messages`). */
  provider: 'bedrock' | 'openai-compatible' | 'recorded' | (string & {});
  model_id: string;
  response_id?: string | undefined;
  latency_ms?: number | undefined;
  attempts: number;
}

/** ModelTurnOutput plus growth-rule extras: usage fidelity, the raw stop reason, call info. */
export type ModelTurnResult = ModelTurnOutput & {
  usage_fidelity: UsageFidelity;
  /** The provider's own stop reason before mapping (e.g. `end_turn`). */
  raw_finish_reason?: string | undefined;
  call?: ProviderCallInfo | undefined;
};

/** ModelTurnError plus growth-rule extras. */
export type ModelTurnFailure = ModelTurnError & {
  error_class: ModelErrorClass;
  retryable: boolean;
  /** HTTP status of the provider's answer, when there was one. */
  http_status?: number | undefined;
  /** The provider's own error code (e.g. `ThrottlingException`). */
  provider_code?: string | undefined;
  /** Milliseconds the provider asked us to wait (Retry-After), when it said. */
  retry_after_ms?: number | undefined;
  call?: ProviderCallInfo | undefined;
  /** Set on error_class divergence: where the transcript left the recording. */
  divergence?: Divergence | undefined;
};

/** Where a transcript left its recording: the first differing message index and both messages. */
export interface Divergence {
  /** Index into the messages (0 = the first message, the system message when there is one). */
  position: number;
  /** The recorded message at that index (null when the recording has none there). */
  expected: ContextMessage | null;
  /** The transcript's message at that index (null when the transcript ended before it). */
  got: ContextMessage | null;
}

/**
 * One model turn: a model-neutral transcript in, one provider call, a contract answer out.
 * Never throws for a provider fault (returns ModelTurnError with its class); honors `signal`.
 */
export type ModelTurnFunction = (
  input: ModelTurnInput,
  context: CompiledContext,
  signal: AbortSignal,
) => Promise<ModelTurnOutput | ModelTurnError>;

/** Builds a ModelTurnFailure. */
export function failure(
  error_class: ModelErrorClass,
  message: string,
  retryable: boolean,
  extra: Omit<Partial<ModelTurnFailure>, 'error_class' | 'message' | 'retryable'> = {},
): ModelTurnFailure {
  const out: ModelTurnFailure = { error_class, message, retryable };
  for (const [key, value] of Object.entries(extra)) {
    if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

/** True when `value` is a model-turn error (has `error_class`), false for a success output. */
export function isModelTurnError(value: ModelTurnOutput | ModelTurnError): value is ModelTurnError {
  return typeof (value as { error_class?: unknown }).error_class === 'string';
}

/** The characters a message contributes to a prompt (content plus serialized tool calls). */
export function messageChars(message: ContextMessage): number {
  switch (message.role) {
    case 'assistant':
      return (message.content ?? '').length + message.tool_calls.reduce((n, c) => n + toolCallChars(c), 0);
    case 'tool':
      return message.content.length + message.name.length;
    default:
      return message.content.length;
  }
}

function toolCallChars(call: { name: string; args: Record<string, unknown> }): number {
  return call.name.length + JSON.stringify(call.args).length;
}

/** Token estimate: ceil(chars / 4), the usual rule of thumb for English text. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/**
 * Combines the caller's signal with a per-call deadline of `timeoutMs` milliseconds. `timedOut()`
 * tells afterwards whether the deadline (not the caller) fired.
 */
export function withDeadline(
  signal: AbortSignal,
  timeoutMs: number,
): { signal: AbortSignal; timedOut(): boolean } {
  const deadline = AbortSignal.timeout(timeoutMs);
  return {
    signal: AbortSignal.any([signal, deadline]),
    timedOut: () => deadline.aborted && !signal.aborted,
  };
}

/** Parses a Retry-After header value (seconds or an HTTP date) into milliseconds; undefined if absent or invalid. */
export function retryAfterMs(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
