/**
 * The reducer host of a reducer check (lib/engine/upgrade/reducer-check.ts): one artifact (bytes of
 * kind js, star or wasm) served under the sandbox limits at a fixed path.
 */
import { CHECK_PATH } from '../engine/upgrade/reducer-check.ts';
import { type ArtifactKind, InMemoryFunctionRegistry } from './function-registry.ts';
import { createLazyReducerHost, type LazyReducerHost } from './lazy-host.ts';
import type { SandboxLimits } from './limits.ts';

/**
 * A reducer host serving one artifact (bytes of kind js, star or wasm) under the sandbox limits.
 * The sandbox is imported on the first delivery (lazy-host.ts), so the HTTP API that serves the
 * check loads no reducer runtime until a check runs.
 */
export function createCheckHost(
  artifact: { kind: ArtifactKind; bytes: Uint8Array },
  limits?: Partial<SandboxLimits>,
): LazyReducerHost {
  const registry = new InMemoryFunctionRegistry([{ function_path: CHECK_PATH, ...artifact }]);
  return createLazyReducerHost({ registry, ...(limits !== undefined ? { limits } : {}) });
}
