/**
 * Static admission of a WebAssembly reducer: a core module (not a component) that validates,
 * declares no imports, exports `memory` and `alloc`, and whose memory declares a maximum within
 * the memory limit. See README, "WebAssembly ABI". docs/contracts/reducer.md, "The
 * deterministic execution policy" (every host call fails: here there is no host call to make).
 */
import { type SandboxLimits, type SandboxOutcome, unavailable } from './limits.ts';
import { type CompiledModule, WASM_PAGE_BYTES, wasmApi } from './wasm-api.ts';

/** A module admitted as a reducer: compiled once, instantiated fresh for every call. */
export interface CompiledWasmReducer {
  module: CompiledModule;
  /** Names of the exported functions (the handlers a binding may select, plus `alloc`). */
  functions: ReadonlySet<string>;
}

const MAGIC = [0x00, 0x61, 0x73, 0x6d];
const CORE_VERSION = [0x01, 0x00, 0x00, 0x00];
const MEMORY_SECTION = 5;

/**
 * Compiles and admits `bytes`. Returns the compiled reducer, or an `unavailable` outcome:
 * `artifact_invalid` (not a core module, does not validate), `wasm_imports_refused`,
 * `wasm_abi_violation` (no exported `memory`/`alloc`, more than one memory) or
 * `wasm_memory_unbounded` (no maximum, a maximum above `limits.memoryBytes`, shared or 64-bit
 * memory). Never throws.
 */
export async function compileWasmReducer(
  bytes: Uint8Array,
  limits: SandboxLimits,
): Promise<CompiledWasmReducer | (SandboxOutcome & { kind: 'unavailable' })> {
  const header = [...bytes.subarray(0, 8)];
  if (header.length < 8 || !MAGIC.every((b, i) => header[i] === b)) {
    return unavailable('artifact_invalid', 'not a WebAssembly binary');
  }
  if (!CORE_VERSION.every((b, i) => header[i + 4] === b)) {
    return unavailable('artifact_invalid', 'not a core WebAssembly module (components are not supported)');
  }
  let module: CompiledModule;
  try {
    module = await wasmApi.compile(bytes);
  } catch (error) {
    return unavailable('artifact_invalid', error instanceof Error ? error.message : String(error));
  }

  const imports = wasmApi.Module.imports(module);
  if (imports.length > 0) {
    const names = imports.map((i) => `${i.module}.${i.name}`).join(', ');
    return unavailable(
      'wasm_imports_refused',
      `a reducer module may not import anything; it imports ${names}`,
    );
  }
  const exports = wasmApi.Module.exports(module);
  const kindOf = new Map(exports.map((e) => [e.name, e.kind]));
  if (kindOf.get('memory') !== 'memory')
    return unavailable('wasm_abi_violation', 'the module exports no `memory`');
  if (kindOf.get('alloc') !== 'function')
    return unavailable('wasm_abi_violation', 'the module exports no `alloc`');

  const memories = readMemoryLimits(bytes);
  if (memories === null) return unavailable('artifact_invalid', 'the memory section does not parse');
  if (memories.length !== 1) {
    return unavailable(
      'wasm_abi_violation',
      `the module must define exactly one memory, found ${memories.length}`,
    );
  }
  const [memory] = memories as [MemoryLimits];
  const maxPages = Math.floor(limits.memoryBytes / WASM_PAGE_BYTES);
  if (memory.shared || memory.memory64) {
    return unavailable('wasm_memory_unbounded', 'shared and 64-bit memories are not supported');
  }
  if (memory.maximum === null || memory.maximum > maxPages) {
    const declared = memory.maximum === null ? 'no maximum' : `a maximum of ${memory.maximum} pages`;
    return unavailable(
      'wasm_memory_unbounded',
      `the memory declares ${declared}; declare one of at most ${maxPages}`,
    );
  }

  const functions = new Set(exports.filter((e) => e.kind === 'function').map((e) => e.name));
  return { module, functions };
}

/** The limits of one memory as the binary declares them (in 64 KiB pages). */
export interface MemoryLimits {
  minimum: number;
  maximum: number | null;
  shared: boolean;
  memory64: boolean;
}

/**
 * Reads the memory section of a core module binary (the memories the module defines, not
 * imported ones). Returns [] when there is no memory section, null when the binary is
 * truncated or malformed. Pure; never throws.
 */
export function readMemoryLimits(bytes: Uint8Array): MemoryLimits[] | null {
  const reader = { bytes, offset: 8 };
  try {
    while (reader.offset < bytes.length) {
      const id = readByte(reader);
      const size = readU32(reader);
      const end = reader.offset + size;
      if (end > bytes.length) return null;
      if (id !== MEMORY_SECTION) {
        reader.offset = end;
        continue;
      }
      const count = readU32(reader);
      const memories: MemoryLimits[] = [];
      for (let i = 0; i < count; i++) {
        const flags = readByte(reader);
        const memory64 = (flags & 0x04) !== 0;
        const minimum = readU64AsNumber(reader);
        const maximum = (flags & 0x01) !== 0 ? readU64AsNumber(reader) : null;
        memories.push({ minimum, maximum, shared: (flags & 0x02) !== 0, memory64 });
      }
      return memories;
    }
    return [];
  } catch {
    return null;
  }
}

interface Reader {
  bytes: Uint8Array;
  offset: number;
}

function readByte(reader: Reader): number {
  const byte = reader.bytes[reader.offset];
  if (byte === undefined) throw new RangeError('unexpected end of module');
  reader.offset += 1;
  return byte;
}

/** Unsigned LEB128 of at most 32 bits. */
function readU32(reader: Reader): number {
  const value = readU64AsNumber(reader);
  if (value > 0xffffffff) throw new RangeError('u32 out of range');
  return value;
}

/** Unsigned LEB128 (up to 64 bits) as a number; values past 2^53 lose precision but stay huge. */
function readU64AsNumber(reader: Reader): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    const byte = readByte(reader);
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return value;
    scale *= 128;
  }
  throw new RangeError('LEB128 too long');
}

/**
 * A copy of the core module `bytes` whose one defined memory declares `maximumPages` (64 KiB
 * pages) as its maximum, replacing any maximum it declared: the bound then holds inside the
 * engine, for code (such as a Go runtime) that grows its memory itself. Throws RangeError when
 * the module does not define exactly one 32-bit, unshared memory or `maximumPages` is below its
 * minimum or above 65536. Pure.
 */
export function withMemoryMaximum(bytes: Uint8Array, maximumPages: number): Uint8Array {
  const reader = { bytes, offset: 8 };
  while (reader.offset < bytes.length) {
    const sectionStart = reader.offset;
    const id = readByte(reader);
    const size = readU32(reader);
    const bodyStart = reader.offset;
    const end = bodyStart + size;
    if (id !== MEMORY_SECTION) {
      reader.offset = end;
      continue;
    }
    const memories = readMemoryLimits(bytes);
    const [memory] = memories ?? [];
    if (memories?.length !== 1 || memory === undefined || memory.shared || memory.memory64) {
      throw new RangeError('the module must define exactly one 32-bit, unshared memory');
    }
    if (!Number.isInteger(maximumPages) || maximumPages < memory.minimum || maximumPages > 65536) {
      throw new RangeError(`a memory maximum of ${maximumPages} pages is out of range`);
    }
    const body = [1, 0x01, ...leb128(memory.minimum), ...leb128(maximumPages)];
    const section = [MEMORY_SECTION, ...leb128(body.length), ...body];
    const patched = new Uint8Array(bytes.length - (end - sectionStart) + section.length);
    patched.set(bytes.subarray(0, sectionStart));
    patched.set(section, sectionStart);
    patched.set(bytes.subarray(end), sectionStart + section.length);
    return patched;
  }
  throw new RangeError('the module defines no memory');
}

/** Unsigned LEB128 of a non-negative integer up to 2^32. */
function leb128(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    const byte = rest % 128;
    rest = Math.floor(rest / 128);
    out.push(rest > 0 ? byte | 0x80 : byte);
  } while (rest > 0);
  return out;
}
