/**
 * Reducer artifacts and the registry that resolves a function path to one. An artifact is
 * pinned by the sha256 of its bytes: the run binds that hash at create time and the host
 * refuses (reducer_changed) an artifact whose hash has moved since.
 * docs/contracts/reducer.md, "Binding" (built-in reducers are artifacts too), "Validation"
 * (reducer_changed).
 */
import { createHash } from 'node:crypto';
import { SandboxModuleError } from './errors.ts';

/**
 * `js`: an ES module evaluated by QuickJS. `wasm`: a core WebAssembly module (see README,
 * "WebAssembly ABI"). `star`: a Starlark file (UTF-8) run by go.starlark.net (README, "Starlark
 * reducers").
 */
export type ArtifactKind = 'js' | 'wasm' | 'star';

export const ARTIFACT_KINDS: readonly ArtifactKind[] = ['js', 'wasm', 'star'];

/** One immutable version of a function. `hash` is the lowercase hex sha256 of `bytes`. */
export interface Artifact {
  function_path: string;
  kind: ArtifactKind;
  bytes: Uint8Array;
  hash: string;
}

/** An artifact without its bytes, as `list()` returns it. `size` is in bytes. */
export interface ArtifactSummary {
  function_path: string;
  kind: ArtifactKind;
  hash: string;
  size: number;
}

/**
 * Where reducer artifacts live. Narrow on purpose: the in-memory registry below and a
 * DynamoDB/S3-backed one implement the same three methods.
 */
export interface FunctionRegistry {
  /** The current artifact at `function_path`, or null when none is registered. */
  get(function_path: string): Promise<Artifact | null>;
  /**
   * Registers `bytes` as the current artifact at `function_path` (replacing any previous one)
   * and returns it with its hash. Throws RegistryError(`invalid_artifact`) for an empty path,
   * a path not starting with `/`, an unknown kind or empty bytes.
   */
  put(function_path: string, kind: ArtifactKind, bytes: Uint8Array): Promise<Artifact>;
  /** Every current artifact, without bytes, ordered by function_path. */
  list(): Promise<ArtifactSummary[]>;
}

/** A registry call refused its input. `code` is stable: `invalid_artifact`. Terminal. */
export class RegistryError extends SandboxModuleError {
  override name = 'RegistryError';
  readonly code: 'invalid_artifact';
  readonly retryable = false;

  constructor(code: 'invalid_artifact', message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/**
 * The function-path prefixes the runtime keeps for itself: `/lib/raisin` (the built-in agent
 * reducer, the default model-turn function, the delegate tools under `/lib/raisin/`) and
 * `/lib/models` (the configured model-turn functions). No caller, admin or system, may register
 * an artifact at a path that starts with one of them, so `/lib/raisin`, `/lib/raisin.star` and
 * `/lib/raisinx/y` are refused as well as `/lib/raisin/x`: names easily taken for the reserved
 * ones are reserved too.
 */
export const RESERVED_FUNCTION_PREFIXES: readonly string[] = ['/lib/raisin', '/lib/models'];

/** Whether `functionPath` (with its leading `/`) starts with a {@link RESERVED_FUNCTION_PREFIXES} prefix (case-blind). */
export function isReservedFunctionPath(functionPath: string): boolean {
  // Case-blind: `/Lib/raisin/x` must not pass for a path beside the reserved one.
  const path = functionPath.toLowerCase();
  return RESERVED_FUNCTION_PREFIXES.some((prefix) => path.startsWith(prefix));
}

/** Lowercase hex sha256 of `bytes` (64 characters). */
export function hashArtifactBytes(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Throws RegistryError(`invalid_artifact`) unless the three parts make a registrable artifact. */
export function assertRegistrable(function_path: string, kind: ArtifactKind, bytes: Uint8Array): void {
  if (typeof function_path !== 'string' || !function_path.startsWith('/') || function_path.length < 2) {
    throw new RegistryError(
      'invalid_artifact',
      `function_path must start with "/": ${String(function_path)}`,
    );
  }
  if (!ARTIFACT_KINDS.includes(kind)) {
    throw new RegistryError(
      'invalid_artifact',
      `kind must be one of ${ARTIFACT_KINDS.join(', ')}: ${String(kind)}`,
    );
  }
  if (!(bytes instanceof Uint8Array) || bytes.byteLength === 0) {
    throw new RegistryError('invalid_artifact', `artifact at ${function_path} has no bytes`);
  }
}

/** A built-in or user artifact to register, before hashing. */
export interface ArtifactSource {
  function_path: string;
  kind: ArtifactKind;
  bytes: Uint8Array;
}

/**
 * A FunctionRegistry in process memory, seeded with the built-in artifacts. It stores copies,
 * and hands out copies, so a caller mutating a buffer can never change what a hash names.
 * Throws RegistryError from the constructor when a built-in is not registrable.
 */
export class InMemoryFunctionRegistry implements FunctionRegistry {
  readonly #artifacts = new Map<string, Artifact>();

  constructor(builtins: readonly ArtifactSource[] = []) {
    for (const source of builtins) this.#store(source.function_path, source.kind, source.bytes);
  }

  async get(function_path: string): Promise<Artifact | null> {
    const artifact = this.#artifacts.get(function_path);
    return artifact ? { ...artifact, bytes: artifact.bytes.slice() } : null;
  }

  async put(function_path: string, kind: ArtifactKind, bytes: Uint8Array): Promise<Artifact> {
    const artifact = this.#store(function_path, kind, bytes);
    return { ...artifact, bytes: artifact.bytes.slice() };
  }

  async list(): Promise<ArtifactSummary[]> {
    return [...this.#artifacts.values()]
      .map(({ function_path, kind, hash, bytes }) => ({ function_path, kind, hash, size: bytes.byteLength }))
      .sort((a, b) => (a.function_path < b.function_path ? -1 : a.function_path > b.function_path ? 1 : 0));
  }

  #store(function_path: string, kind: ArtifactKind, bytes: Uint8Array): Artifact {
    assertRegistrable(function_path, kind, bytes);
    const copy = bytes.slice();
    const artifact: Artifact = { function_path, kind, bytes: copy, hash: hashArtifactBytes(copy) };
    this.#artifacts.set(function_path, artifact);
    return artifact;
  }
}
