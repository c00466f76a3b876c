/**
 * The base of every error lib/sandbox throws, and the configuration error of the sandbox
 * limits. A reducer that fails inside the sandbox is not an error here: it is a SandboxOutcome
 * (threw, unavailable, ...). docs/architecture.md, "Conventions".
 */

/**
 * `code` is stable and machine-readable; `retryable` says whether the same call may succeed
 * later (true) or must be fixed first (false).
 */
export abstract class SandboxModuleError extends Error {
  abstract readonly code: string;
  abstract readonly retryable: boolean;
}

/**
 * A sandbox limit is not a positive finite number, or `stackBytes` exceeds MAX_STACK_BYTES.
 * Raised when the host is created, never during a call. `limit` names the setting. Terminal.
 */
export class SandboxLimitError extends SandboxModuleError {
  override readonly name = 'SandboxLimitError';
  readonly code = 'invalid_limit';
  readonly retryable = false;
  readonly limit: string;
  constructor(limit: string, message: string) {
    super(message);
    this.limit = limit;
  }
}
