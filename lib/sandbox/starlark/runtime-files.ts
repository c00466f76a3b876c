/**
 * The Starlark runtime's two files, read beside this module (the Lambda bundling copies them
 * next to the bundle, cdk/bundling.ts): `starlark-runtime.wasm`, go.starlark.net built for
 * js/wasm from main.go by bin/build-starlark-runtime.ts, and `wasm_exec.js`, the glue of the Go
 * release that built it, unmodified. Their sha256 digests are recorded in runtime.json and
 * checked by test/unit/starlark-runtime-build.test.ts.
 */
import { readFileSync } from 'node:fs';

export const STARLARK_RUNTIME_URL: URL = new URL('./starlark-runtime.wasm', import.meta.url);
export const GO_WASM_EXEC_URL: URL = new URL('./wasm_exec.js', import.meta.url);

export interface StarlarkRuntimeFiles {
  /** The runtime module (a Go js/wasm binary). */
  wasm: Uint8Array;
  /** The text of Go's wasm_exec.js. */
  glue: string;
}

let files: StarlarkRuntimeFiles | null = null;

/** Both files, read once per process. Throws the fs error (ENOENT) when one is missing. */
export function readStarlarkRuntime(): StarlarkRuntimeFiles {
  files ??= {
    wasm: new Uint8Array(readFileSync(STARLARK_RUNTIME_URL)),
    glue: readFileSync(GO_WASM_EXEC_URL, 'utf8'),
  };
  return files;
}
