/**
 * Resource limits of one reducer call and the shape of what a sandbox run produced.
 * docs/contracts/reducer.md, "The deterministic execution policy", "Validation" (last paragraph).
 */
import { SandboxLimitError } from './errors.ts';

/** Bounds applied to every reducer call. */
export interface SandboxLimits {
  /**
   * Wall-clock budget of one call in milliseconds, loading the artifact included (JavaScript:
   * the prelude and module evaluation on the call that loads the reducer, then the handler alone
   * while it stays loaded; WebAssembly: instantiation + handler; Starlark: loading the
   * module + handler, not the start of the Go runtime). Exceeding it makes the call
   * `unavailable` with reason `timeout: …`.
   */
  timeoutMs: number;
  /**
   * Memory bound in bytes. JavaScript: the QuickJS runtime's heap limit. WebAssembly: the largest
   * maximum a module's memory may declare (a module declaring a larger or no maximum is refused).
   * Starlark: the Go runtime's memory may grow this far past its initial memory (a hard bound),
   * and its collector's soft limit.
   */
  memoryBytes: number;
  /**
   * QuickJS stack bound in bytes, at most MAX_STACK_BYTES. QuickJS's frames also use the host's
   * native stack: above about 384 KiB the host stack can run out first, which is caught as
   * `sandbox_fault` and costs a reload of the QuickJS module (about 20 ms) instead of a clean
   * `stack_overflow`. Starlark: the largest Go goroutine stack (a deeper call or value nests
   * into `stack_overflow`).
   */
  stackBytes: number;
  /**
   * Starlark only: the execution-step budget of one call (go.starlark.net's
   * `Thread.SetMaxExecutionSteps`, about one step per bytecode instruction), and separately of
   * loading the module. Exceeding it makes the call `unavailable` with reason
   * `steps_exhausted: …`: unlike the wall clock, the same call always stops at the same step.
   */
  steps: number;
}

/**
 * 1 s (wall clock, generous: a reducer call normally takes ~2 ms, but a loaded machine stretches
 * it), 64 MiB, 256 KiB, 1,000,000 Starlark steps (about 0.1 s of a warm runtime here, 0.25 s
 * cold, so a Starlark loop stops on the step budget, the same way every time, long before the
 * wall clock).
 */
export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  timeoutMs: 1_000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 256 * 1024,
  steps: 1_000_000,
});

/** The largest accepted `stackBytes`: 1 MiB. */
export const MAX_STACK_BYTES = 1024 * 1024;

/**
 * Fills unset limits with the defaults. Throws SandboxLimitError (`invalid_limit`) when a limit is not a positive finite
 * number or `stackBytes` exceeds MAX_STACK_BYTES (a configuration error, raised at host
 * creation, never during a call).
 */
export function resolveLimits(overrides: Partial<SandboxLimits> = {}): SandboxLimits {
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, ...overrides };
  if (!Number.isSafeInteger(limits.steps)) {
    throw new RangeError(`sandbox limit steps must be a positive integer, got ${String(limits.steps)}`);
  }
  for (const [name, value] of Object.entries(limits)) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new SandboxLimitError(
        name,
        `sandbox limit ${name} must be a positive number, got ${String(value)}`,
      );
    }
  }
  if (limits.stackBytes > MAX_STACK_BYTES) {
    throw new SandboxLimitError(
      'stackBytes',
      `sandbox limit stackBytes must be at most ${MAX_STACK_BYTES}, got ${limits.stackBytes}`,
    );
  }
  return limits;
}

/**
 * What one sandboxed call produced, before the host adds the artifact hash.
 * `answered.response` is the parsed JSON the reducer returned, not yet validated.
 */
export type SandboxOutcome =
  | { kind: 'answered'; response: unknown }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'threw'; code: string; message: string };

/**
 * Stable prefixes of `unavailable.reason` (the reason reads `<code>: <detail>`):
 * - `artifact_missing`    no artifact at the function path
 * - `artifact_corrupt`    the registry's bytes do not hash to the registry's hash
 * - `artifact_invalid`    the artifact does not load (syntax error, bad UTF-8, top-level throw, not a module)
 * - `handler_missing`     the selected handler is not an exported function
 * - `request_not_json`    the request cannot be written as canonical JSON (NaN, cycle, lone surrogate)
 * - `timeout`             the call ran past `timeoutMs`
 * - `out_of_memory`       the call ran past `memoryBytes`
 * - `stack_overflow`      the call ran past the stack bound
 * - `steps_exhausted`     a Starlark call (or loading its module) ran past `steps`
 * - `never_settled`       an async handler's promise was still pending with no job left to run
 * - `wasm_imports_refused` the WebAssembly module declares imports
 * - `wasm_memory_unbounded` the module's memory declares no maximum, or one above `memoryBytes`
 * - `wasm_abi_violation`  missing/ill-typed exports, out-of-bounds pointers, output not UTF-8 JSON
 * - `wasm_trap`           the module trapped
 * - `sandbox_fault`       the sandbox itself failed (it is reset; the next call starts clean)
 */
export type UnavailableCode =
  | 'artifact_missing'
  | 'artifact_corrupt'
  | 'artifact_invalid'
  | 'handler_missing'
  | 'request_not_json'
  | 'timeout'
  | 'out_of_memory'
  | 'stack_overflow'
  | 'steps_exhausted'
  | 'never_settled'
  | 'wasm_imports_refused'
  | 'wasm_memory_unbounded'
  | 'wasm_abi_violation'
  | 'wasm_trap'
  | 'sandbox_fault';

/** Longest detail kept in a reason or a thrown message, in UTF-16 code units. */
export const MAX_DETAIL_CHARS = 1000;

/** Builds `{kind: 'unavailable', reason: '<code>: <detail>'}` with the detail truncated. */
export function unavailable(code: UnavailableCode, detail: string): SandboxOutcome & { kind: 'unavailable' } {
  return { kind: 'unavailable', reason: `${code}: ${truncate(detail)}` };
}

/** Cuts `text` to MAX_DETAIL_CHARS, marking the cut with an ellipsis. */
export function truncate(text: string): string {
  return text.length <= MAX_DETAIL_CHARS ? text : `${text.slice(0, MAX_DETAIL_CHARS - 1)}…`;
}
