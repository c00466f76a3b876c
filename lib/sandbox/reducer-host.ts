/**
 * The deterministic reducer host: the ReducerHost port over a FunctionRegistry, running
 * JavaScript artifacts in QuickJS, WebAssembly artifacts in a worker thread and Starlark
 * artifacts in go.starlark.net (built for js/wasm) in another, all under the deterministic
 * execution policy. docs/contracts/reducer.md,
 * "Validation" (reducer_unavailable, reducer_changed); docs/contracts/reducer.md, "The
 * deterministic execution policy".
 */
import canonicalize from 'canonicalize';
import type { ReducerBinding } from '../contracts/index.ts';
import type { ReducerCallResult, ReducerHost } from '../engine/ports.ts';
import { type FunctionRegistry, hashArtifactBytes } from './function-registry.ts';
import { resolveLimits, type SandboxLimits, type SandboxOutcome, unavailable } from './limits.ts';
import { runJsReducer } from './quickjs-reducer.ts';
import { createStarlarkRunner } from './starlark-runner.ts';
import { type CompiledWasmReducer, compileWasmReducer } from './wasm-module.ts';
import { createWasmRunner } from './wasm-runner.ts';

/** The handler a binding selects when it names none. */
export const DEFAULT_HANDLER = 'reduce';

/** A handler name a Starlark module can define (and a frame header can carry). */
const STARLARK_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Compiled WebAssembly modules kept per host, by artifact hash (least recently used dropped first). */
const WASM_CACHE_SIZE = 32;

export interface SandboxReducerHostOptions {
  registry: FunctionRegistry;
  /** Per-call bounds; unset ones take DEFAULT_SANDBOX_LIMITS (1 s, 64 MiB, 256 KiB stack, 1M Starlark steps). */
  limits?: Partial<SandboxLimits>;
}

export interface SandboxReducerHost extends ReducerHost {
  /** The limits in force. */
  readonly limits: Readonly<SandboxLimits>;
  /** Stops the WebAssembly and Starlark worker threads, if they run. The host stays usable (a later call restarts them). */
  close(): Promise<void>;
}

/**
 * Creates the host. `resolve` returns the sha256 of the artifact currently at the binding's
 * function path (null when there is none). `reduce`:
 * - no artifact → `unavailable` (`artifact_missing`); bytes not matching the registry's hash →
 *   `unavailable` (`artifact_corrupt`);
 * - `binding.artifact_hash` set and different from the artifact's hash → `changed`;
 * - otherwise writes the request as canonical JSON (RFC 8785: sorted keys, so a reducer never
 *   sees an order that depends on how its state was stored) and calls `binding.handler`
 *   (default `reduce`) in a fresh sandbox: `answered` with the raw response (not validated
 *   here), `threw`, or `unavailable` (reasons: limits.ts, UnavailableCode).
 * Never throws for a reducer fault; a registry that throws (store unreachable) propagates, so
 * the step is retried rather than the run paused. Throws SandboxLimitError (`invalid_limit`) at creation for bad limits.
 */
/** The language runners of one host, with the compiled WebAssembly modules it keeps. */
interface Runners {
  limits: SandboxLimits;
  wasmRunner: ReturnType<typeof createWasmRunner>;
  starlarkRunner: ReturnType<typeof createStarlarkRunner>;
  wasmModules: Map<string, Promise<CompiledWasmReducer | (SandboxOutcome & { kind: 'unavailable' })>>;
}

/** The compiled module of a WebAssembly artifact, from the host's small LRU cache. */
function compiledWasm(r: Runners, hash: string, bytes: Uint8Array) {
  let entry = r.wasmModules.get(hash);
  if (entry) {
    r.wasmModules.delete(hash);
  } else {
    entry = compileWasmReducer(bytes, r.limits);
    if (r.wasmModules.size >= WASM_CACHE_SIZE) {
      const oldest = r.wasmModules.keys().next();
      if (!oldest.done) r.wasmModules.delete(oldest.value);
    }
  }
  r.wasmModules.set(hash, entry);
  return entry;
}

async function runWasm(
  r: Runners,
  hash: string,
  bytes: Uint8Array,
  handler: string,
  requestJson: string,
): Promise<SandboxOutcome> {
  const reducer = await compiledWasm(r, hash, bytes);
  if ('kind' in reducer) return reducer;
  if (!reducer.functions.has(handler)) {
    return unavailable('handler_missing', `the module exports no function named ${JSON.stringify(handler)}`);
  }
  const result = await r.wasmRunner.run({
    module: reducer.module,
    handler,
    request: new TextEncoder().encode(requestJson),
    timeoutMs: r.limits.timeoutMs,
  });
  if (result.kind === 'unavailable') return result;
  let response: unknown;
  try {
    response = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(result.bytes));
  } catch (error) {
    return unavailable('wasm_abi_violation', `the response is not UTF-8 JSON: ${String(error)}`);
  }
  return { kind: 'answered', response };
}

async function runStarlark(
  r: Runners,
  hash: string,
  bytes: Uint8Array,
  handler: string,
  requestJson: string,
): Promise<SandboxOutcome> {
  if (!STARLARK_IDENTIFIER.test(handler)) {
    return unavailable('handler_missing', `${JSON.stringify(handler)} is not a Starlark identifier`);
  }
  const result = await r.starlarkRunner.run({
    hash,
    source: bytes,
    handler,
    request: new TextEncoder().encode(requestJson),
  });
  if (result.kind !== 'output') return result;
  try {
    return {
      kind: 'answered',
      response: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(result.bytes)),
    };
  } catch (error) {
    return unavailable(
      'sandbox_fault',
      `the Starlark runtime wrote a response that is not JSON: ${String(error)}`,
    );
  }
}

export function createSandboxReducerHost(options: SandboxReducerHostOptions): SandboxReducerHost {
  const { registry } = options;
  const limits = Object.freeze(resolveLimits(options.limits));
  const r: Runners = {
    limits,
    wasmRunner: createWasmRunner(),
    starlarkRunner: createStarlarkRunner(limits),
    wasmModules: new Map(),
  };
  const { wasmRunner, starlarkRunner } = r;
  /** JavaScript sources whose bytes were verified against their hash, by hash (bounded, oldest dropped first). */
  const verified = new Map<string, string>();
  const remember = (hash: string, source: string): void => {
    verified.set(hash, source);
    if (verified.size > WASM_CACHE_SIZE) {
      const oldest = verified.keys().next();
      if (!oldest.done) verified.delete(oldest.value);
    }
  };

  return {
    limits,

    async resolve(binding: ReducerBinding) {
      const artifact = await registry.get(binding.function_path);
      return artifact ? { artifact_hash: hashArtifactBytes(artifact.bytes) } : null;
    },

    async reduce(binding: ReducerBinding, request: unknown): Promise<ReducerCallResult> {
      const artifact = await registry.get(binding.function_path);
      if (!artifact) return unavailable('artifact_missing', `no function at ${binding.function_path}`);
      // Bytes already verified to hash to `artifact.hash` are reused (content-addressed, so the
      // cached copy is what that hash names): no sha256 and no decoding per call.
      const known = verified.get(artifact.hash);
      const hash = known !== undefined ? artifact.hash : hashArtifactBytes(artifact.bytes);
      if (hash !== artifact.hash) {
        return unavailable(
          'artifact_corrupt',
          `the bytes at ${binding.function_path} hash to ${hash}, not ${artifact.hash}`,
        );
      }
      if (binding.artifact_hash !== undefined && binding.artifact_hash !== hash) {
        return { kind: 'changed', bound_hash: binding.artifact_hash, found_hash: hash };
      }

      let requestJson: string | undefined;
      try {
        requestJson = canonicalize(request);
      } catch (error) {
        return unavailable('request_not_json', String(error));
      }
      if (requestJson === undefined)
        return unavailable('request_not_json', 'the request is not a JSON value');

      const handler = binding.handler ?? DEFAULT_HANDLER;
      let outcome: SandboxOutcome;
      if (artifact.kind === 'js') {
        let source = known;
        if (source === undefined) {
          try {
            source = new TextDecoder('utf-8', { fatal: true }).decode(artifact.bytes);
          } catch {
            return unavailable('artifact_invalid', 'the JavaScript artifact is not UTF-8');
          }
          remember(hash, source);
        }
        outcome = await runJsReducer(source, handler, requestJson, limits);
      } else if (artifact.kind === 'star') {
        outcome = await runStarlark(r, hash, artifact.bytes, handler, requestJson);
      } else {
        outcome = await runWasm(r, hash, artifact.bytes, handler, requestJson);
      }
      return outcome.kind === 'answered' ? { ...outcome, artifact_hash: hash } : outcome;
    },

    close: async () => {
      await Promise.all([wasmRunner.close(), starlarkRunner.close()]);
    },
  };
}
