/**
 * The ModelHost adapter: dispatches a model turn to the run's model-turn function by path
 * (`executor_config.model_turn_function`, else the default) and guarantees the port's promise:
 * it never throws, and what it returns has the contract's shape.
 *
 * docs/contracts/model-turn.md ("core calls a function:
 * executor_config.model_turn_function if the run set one, otherwise
 * /lib/raisin/ai/agent-run-model-turn"). Port: lib/engine/ports.ts ModelHost.
 */

import type { CompiledContext } from '../contracts/index.ts';
import {
  DEFAULT_MODEL_TURN_FUNCTION,
  ModelTurnError,
  type ModelTurnInput,
  ModelTurnOutput,
} from '../contracts/index.ts';
import { jsonDepth, MAX_JSON_DEPTH } from '../core/canonical.ts';
import type { ModelHost } from '../engine/ports.ts';
import { failure, type ModelTurnFunction } from './types.ts';

export interface ModelHostOptions {
  /** Model-turn functions by path (e.g. `/lib/models/bedrock`). */
  functions: Record<string, ModelTurnFunction>;
  /** Path used when the run sets no `executor_config.model_turn_function` (default: the contract's default path). */
  default?: string | undefined;
  /** Retries of a retryable provider fault inside one turn (defaults: {@link DEFAULT_MODEL_RETRY}). */
  retry?: Partial<ModelRetryPolicy>;
  /** Waits `ms` or until `signal` aborts (tests inject a fake). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * How a retryable ModelTurnError (rate_limited, transient, timeout, invalid_response) is retried
 * within the same operation: up to `attempts` calls in all, waiting `baseMs * 2^(n-1)` with full
 * jitter between them (or the provider's `retry_after_ms`), never more than `maxDelayMs` (ms).
 */
export interface ModelRetryPolicy {
  attempts: number;
  baseMs: number;
  maxDelayMs: number;
}
export const DEFAULT_MODEL_RETRY: ModelRetryPolicy = { attempts: 3, baseMs: 500, maxDelayMs: 20_000 };

/** The wait before retry `n` (1-based): the provider's Retry-After when given, else jittered exponential. */
export function retryDelayMs(policy: ModelRetryPolicy, n: number, retryAfterMs: unknown): number {
  if (typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0)
    return Math.min(policy.maxDelayMs, retryAfterMs);
  return Math.min(policy.maxDelayMs, Math.random() * policy.baseMs * 2 ** (n - 1));
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Creates a ModelHost. `turn` resolves the function path, calls it and returns its answer
 * after parsing it with the contract's zod schemas (defaults applied; extra growth-rule fields kept).
 * Errors (all not retryable): an unknown path → model_turn_function_not_found; a function that
 * throws → function_error; an answer that is neither ModelTurnOutput nor ModelTurnError, or
 * that nests deeper than MAX_JSON_DEPTH → output_invalid. A provider fault is the function's own ModelTurnError: a retryable one is
 * called again after a backoff (see {@link ModelRetryPolicy}) while attempts are left and the
 * signal has not aborted, and while `limits.maxCalls` (what the run's max_model_calls budget
 * leaves) allows. The retry budget continues across dispatches of one turn: `limits.failuresBefore`
 * calls failed before (a takeover), and none left → `retries_exhausted` without a request.
 * `limits.beforeCall` is awaited before each call of the function (never for a path that is not
 * configured), so the engine counts each request as it is made, and `limits.afterFailure` after
 * each retryable failure answer, before its backoff, so the engine notes what failed. The last
 * answer is returned with `host_attempts` (times the function was called) and `provider_calls`
 * (provider requests made: each call's own `call.attempts`, else 1, summed; 0 when no function
 * was called) added, on a success as on an error, so that no retry is invisible.
 */
export function createModelHost(options: ModelHostOptions): ModelHost {
  const policy: ModelRetryPolicy = { ...DEFAULT_MODEL_RETRY, ...(options.retry ?? {}) };
  const sleep = options.sleep ?? abortableSleep;
  const once = callOnce(options);
  return {
    async turn(input: ModelTurnInput, context: CompiledContext, signal: AbortSignal, limits = {}) {
      // The retry budget continues across dispatches (a takeover): `failuresBefore` were used already.
      const left = policy.attempts - (limits.failuresBefore ?? 0);
      if (left <= 0) return retriesExhausted(policy.attempts);
      const maxCalls = Math.max(1, Math.min(left, limits.maxCalls ?? left));
      let { answer, called } = await once(input, context, signal, limits.beforeCall);
      let calls = called ? 1 : 0;
      let providerCalls = called ? providerCallsOf(answer) : 0;
      if (called && isRetryableFailure(answer)) await limits.afterFailure?.();
      while (isRetryableFailure(answer) && calls < maxCalls) {
        const retryAfter = (answer as Record<string, unknown>).retry_after_ms;
        await sleep(retryDelayMs(policy, calls, retryAfter), signal);
        if (signal.aborted) break;
        ({ answer, called } = await once(input, context, signal, limits.beforeCall));
        calls += 1;
        providerCalls += providerCallsOf(answer);
        if (called && isRetryableFailure(answer)) await limits.afterFailure?.();
      }
      return { ...answer, host_attempts: calls, provider_calls: providerCalls };
    },
  };
}

/**
 * The answer of a turn whose earlier dispatches (before a takeover) used every call of its retry
 * budget: no request is made; retryable, an outage class (lib/core/provider-outage.ts).
 */
function retriesExhausted(attempts: number) {
  const message = `the turn's ${attempts} provider calls failed before a takeover; none is left`;
  return { ...failure('retries_exhausted', message, true), host_attempts: 0, provider_calls: 0 };
}

function isRetryableFailure(answer: object): boolean {
  return 'error_class' in answer && (answer as { retryable?: unknown }).retryable === true;
}

/** Provider requests behind one answer: its `call.attempts` when the function reported them, else 1. */
function providerCallsOf(answer: object): number {
  const attempts = (answer as { call?: { attempts?: unknown } }).call?.attempts;
  return typeof attempts === 'number' && Number.isInteger(attempts) && attempts >= 1 ? attempts : 1;
}

type Answer = Awaited<ReturnType<ModelHost['turn']>>;

/**
 * One call of the run's model-turn function, its answer parsed; `called` is false when no
 * function was called (its path is not configured), so no provider request was made. Awaits
 * `beforeCall` just before the call (its rejection is the only throw).
 */
function callOnce(
  options: ModelHostOptions,
): (
  input: ModelTurnInput,
  context: CompiledContext,
  signal: AbortSignal,
  beforeCall: (() => Promise<void>) | undefined,
) => Promise<{ answer: Answer; called: boolean }> {
  const defaultPath = options.default ?? DEFAULT_MODEL_TURN_FUNCTION;
  return async (input, context, signal, beforeCall) => {
    const configured = input.executor_config.model_turn_function;
    const path = typeof configured === 'string' && configured !== '' ? configured : defaultPath;
    const fn = Object.hasOwn(options.functions, path) ? options.functions[path] : undefined;
    if (fn === undefined) {
      const answer = failure('model_turn_function_not_found', `no model-turn function at ${path}`, false);
      return { answer, called: false };
    }
    await beforeCall?.();
    return { answer: await callFunction(fn, path, input, context, signal), called: true };
  };
}

/** Calls `fn` (served at `path`) and parses its answer (never throws). */
async function callFunction(
  fn: ModelTurnFunction,
  path: string,
  input: ModelTurnInput,
  context: CompiledContext,
  signal: AbortSignal,
): Promise<Answer> {
  let answer: unknown;
  try {
    answer = await fn(input, context, signal);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    return failure('function_error', `model-turn function ${path} threw: ${reason}`, false);
  }
  if (jsonDepth(answer, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    return failure(
      'output_invalid',
      `model-turn function ${path} answered nested deeper than ${MAX_JSON_DEPTH} levels`,
      false,
    );
  }
  // The parsed fields (defaults applied) over the original object, so extras survive.
  const asError = ModelTurnError.safeParse(answer);
  if (asError.success) return { ...(answer as object), ...asError.data };
  const asOutput = ModelTurnOutput.safeParse(answer);
  if (asOutput.success) return { ...(answer as object), ...asOutput.data };
  return failure(
    'output_invalid',
    `model-turn function ${path} answered outside the contract: ${asOutput.error.issues
      .map((i) => `${i.path.map(String).join('.') || '(answer)'}: ${i.message}`)
      .join('; ')}`,
    false,
  );
}
