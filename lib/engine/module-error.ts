/**
 * The one base of every error lib/engine (and the store adapters behind its ports) throws:
 * `code` is stable and machine-readable, `retryable` says whether the same request may succeed
 * later (true) or must be changed first (false). EngineError (errors.ts) carries the API's codes;
 * CommitRejected and CommitTooLarge (ports.ts) a store's refusals; LeaseLost a fenced-out
 * worker; RegistryConflictError (ports.ts) a refused publication. docs/architecture.md,
 * "Conventions".
 */
export abstract class EngineModuleError extends Error {
  abstract readonly code: string;
  abstract readonly retryable: boolean;
}
