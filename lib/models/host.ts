/**
 * The ModelHost adapter: dispatches a model turn to the run's model-turn function by path
 * (`executor_config.model_turn_function`, else the default) and guarantees the port's promise:
 * it never throws, and what it returns has the contract's shape.
 *
 * Seed: agent-run-contracts, "The model-turn function" ("core calls a function:
 * executor_config.model_turn_function if the run set one, otherwise
 * /lib/raisin/ai/agent-run-model-turn"). Port: lib/engine/ports.ts ModelHost.
 */
import {
  DEFAULT_MODEL_TURN_FUNCTION,
  ModelTurnError,
  type ModelTurnInput,
  ModelTurnOutput,
} from '../contracts/index.ts';
import type { CompiledContext, ModelHost } from '../engine/ports.ts';
import { failure, type ModelTurnFunction } from './types.ts';

export interface ModelHostOptions {
  /** Model-turn functions by path (e.g. `/lib/models/bedrock`). */
  functions: Record<string, ModelTurnFunction>;
  /** Path used when the run sets no `executor_config.model_turn_function` (default: the contract's default path). */
  default?: string | undefined;
}

/**
 * Creates a ModelHost. `turn` resolves the function path, calls it and returns its answer
 * after parsing it with the contract's zod schemas (defaults applied; extra growth-rule fields kept).
 * Errors (all not retryable): an unknown path → model_turn_function_not_found; a function that
 * throws → function_error; an answer that is neither ModelTurnOutput nor ModelTurnError →
 * output_invalid. A provider fault is the function's own ModelTurnError, returned as is.
 */
export function createModelHost(options: ModelHostOptions): ModelHost {
  const defaultPath = options.default ?? DEFAULT_MODEL_TURN_FUNCTION;
  return {
    async turn(input: ModelTurnInput, context: CompiledContext, signal: AbortSignal) {
      const configured = input.executor_config.model_turn_function;
      const path = typeof configured === 'string' && configured !== '' ? configured : defaultPath;
      const fn = Object.hasOwn(options.functions, path) ? options.functions[path] : undefined;
      if (fn === undefined) {
        return failure('model_turn_function_not_found', `no model-turn function at ${path}`, false);
      }
      let answer: unknown;
      try {
        answer = await fn(input, context, signal);
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : String(cause);
        return failure('function_error', `model-turn function ${path} threw: ${reason}`, false);
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
    },
  };
}
