/**
 * The reducer host the runtime builds by default: the sandbox (QuickJS, WebAssembly and
 * Starlark, reducer-host.ts) is imported on the first `reduce`, not at start-up. `resolve`
 * needs no sandbox (the sha256 of the artifact's bytes), so a process that only creates, forks
 * or reads runs never loads a reducer runtime. The Lambda bundles of functions that run no
 * reducer (live, stream; cdk/bundling.ts) leave REDUCER_HOST_MODULE out altogether: there the
 * import fails and `reduce` throws LazyHostError (`reducer_runtime_absent`), retryable like any
 * fault of the host, never a reducer outcome. docs/contracts/reducer.md, "The deterministic
 * execution policy".
 */
import type { ReducerBinding } from '../contracts/index.ts';
import type { ReducerCallResult, ReducerHost } from '../engine/ports.ts';
import { SandboxModuleError } from './errors.ts';
import { type FunctionRegistry, hashArtifactBytes } from './function-registry.ts';
import type { SandboxLimits } from './limits.ts';
import type { SandboxReducerHost } from './reducer-host.ts';

/**
 * The module the lazy host imports, as this file spells it. cdk/bundling.ts marks it external
 * in the bundles of functions that run no reducer, so keep the two in step.
 */
export const REDUCER_HOST_MODULE = './reducer-host.ts';

/** The sandbox could not be loaded in this process. Retryable (the step is tried again). */
export class LazyHostError extends SandboxModuleError {
  override name = 'LazyHostError';
  readonly code = 'reducer_runtime_absent';
  readonly retryable = true;
}

export interface LazyReducerHostOptions {
  registry: FunctionRegistry;
  limits?: Partial<SandboxLimits>;
  /** Loads the sandbox host (tests inject a failing one); default: imports REDUCER_HOST_MODULE. */
  load?: () => Promise<{
    createSandboxReducerHost(options: {
      registry: FunctionRegistry;
      limits?: Partial<SandboxLimits>;
    }): SandboxReducerHost;
  }>;
}

export interface LazyReducerHost extends ReducerHost {
  /** Whether the sandbox has been imported (a `reduce` happened). */
  loaded(): boolean;
  /** Stops the sandbox's worker threads if it was loaded; the host stays usable. */
  close(): Promise<void>;
}

/**
 * Creates the host. `resolve` reads the registry only: the artifact's sha256, or null when no
 * artifact is at the path (the same answer as the sandbox host's). `reduce` imports the sandbox
 * once (a failed import is tried again on the next call) and delegates to it; it throws
 * LazyHostError when the module is absent from this bundle.
 */
export function createLazyReducerHost(options: LazyReducerHostOptions): LazyReducerHost {
  const { registry } = options;
  const load = options.load ?? (() => import('./reducer-host.ts'));
  let host: Promise<SandboxReducerHost> | undefined;
  let ready: SandboxReducerHost | undefined;
  const sandbox = (): Promise<SandboxReducerHost> => {
    host ??= load().then(
      (m) => {
        ready = m.createSandboxReducerHost({
          registry,
          ...(options.limits !== undefined ? { limits: options.limits } : {}),
        });
        return ready;
      },
      (error: unknown) => {
        host = undefined;
        throw new LazyHostError(`this process cannot load the reducer sandbox (${REDUCER_HOST_MODULE})`, {
          cause: error,
        });
      },
    );
    return host;
  };
  return {
    async resolve(binding: ReducerBinding) {
      const artifact = await registry.get(binding.function_path);
      return artifact ? { artifact_hash: hashArtifactBytes(artifact.bytes) } : null;
    },
    async reduce(binding: ReducerBinding, request: unknown): Promise<ReducerCallResult> {
      return (await sandbox()).reduce(binding, request);
    },
    loaded: () => ready !== undefined,
    close: async () => {
      await ready?.close();
    },
  };
}
