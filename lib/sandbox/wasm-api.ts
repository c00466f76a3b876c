/**
 * The slice of the WebAssembly JavaScript API the host uses, typed here because the project's
 * TypeScript libs (ES2024 + @types/node) declare no `WebAssembly` global. Runtime: Node's own.
 */

/** A compiled WebAssembly.Module (opaque to the host; it is posted to the worker as is). */
export type CompiledModule = object;

export interface ModuleImportDescriptor {
  module: string;
  name: string;
  kind: string;
}

export interface ModuleExportDescriptor {
  name: string;
  kind: string;
}

/** A WebAssembly.Memory; `grow` takes and returns 64 KiB pages and throws RangeError past the maximum. */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

export interface WasmApi {
  compile(bytes: Uint8Array): Promise<CompiledModule>;
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
  Module: {
    imports(module: CompiledModule): ModuleImportDescriptor[];
    exports(module: CompiledModule): ModuleExportDescriptor[];
  };
}

/** Bytes in one WebAssembly page. */
export const WASM_PAGE_BYTES = 65536;

/** Node's `WebAssembly` global. */
export const wasmApi: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
