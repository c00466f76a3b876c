/**
 * A model-turn function whose adapter is imported on its first turn: the provider packages (the
 * AI SDK's, the Bedrock runtime client) are the largest code a Lambda bundle carries, and only
 * the step function runs model turns, so the others never load them (cdk/bundling.ts splits each
 * dynamic import into a chunk read when it runs).
 */
import type { ModelTurnFunction } from './types.ts';

/**
 * Wraps `load` (which imports the adapter and builds the function, once) in a model-turn
 * function. A failed load rejects that turn and is tried again on the next one; the built
 * function's own contract (never throws for a provider fault) applies from then on.
 */
export function lazyModelTurn(load: () => Promise<ModelTurnFunction>): ModelTurnFunction {
  let built: Promise<ModelTurnFunction> | undefined;
  return async (input, context, signal) => {
    built ??= load().catch((error: unknown) => {
      built = undefined;
      throw error;
    });
    return (await built)(input, context, signal);
  };
}
