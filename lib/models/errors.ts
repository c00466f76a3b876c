/**
 * The base of every error lib/models throws. A provider fault is not thrown: the model-turn
 * functions answer a ModelTurnError value (see types.ts), and the host retries it or hands it
 * to the engine. What is thrown is a caller's mistake or unreadable input data, such as a
 * tau-bench file of the wrong shape. docs/architecture.md, "Conventions".
 */

/**
 * `code` is stable and machine-readable; `retryable` says whether the same call may succeed
 * later (true) or must be fixed first (false).
 */
export abstract class ModelsModuleError extends Error {
  abstract readonly code: string;
  abstract readonly retryable: boolean;
}

/** A configuration the environment cannot mean: names the variable. */
export class ModelConfigError extends ModelsModuleError {
  override name = 'ModelConfigError';
  readonly code = 'model_config_invalid';
  readonly retryable = false;
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}
