/**
 * lib/sandbox: the deterministic reducer host (QuickJS, WebAssembly and Starlark) and the
 * function registry it reads artifacts from. See README.md in this folder for the conventions.
 */

export { DETERMINISTIC_PRELUDE, MATH_RANDOM_SEED } from './deterministic-prelude.ts';
export { SandboxLimitError, SandboxModuleError } from './errors.ts';
export {
  ARTIFACT_KINDS,
  type Artifact,
  type ArtifactKind,
  type ArtifactSource,
  type ArtifactSummary,
  type FunctionRegistry,
  hashArtifactBytes,
  InMemoryFunctionRegistry,
  RegistryError,
} from './function-registry.ts';
export {
  DEFAULT_SANDBOX_LIMITS,
  MAX_STACK_BYTES,
  resolveLimits,
  type SandboxLimits,
  type SandboxOutcome,
  type UnavailableCode,
} from './limits.ts';
export { runJsReducer } from './quickjs-reducer.ts';
export {
  createSandboxReducerHost,
  DEFAULT_HANDLER,
  type SandboxReducerHost,
  type SandboxReducerHostOptions,
} from './reducer-host.ts';
export {
  type CompiledWasmReducer,
  compileWasmReducer,
  type MemoryLimits,
  readMemoryLimits,
  withMemoryMaximum,
} from './wasm-module.ts';
