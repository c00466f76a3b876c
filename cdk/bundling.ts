/**
 * How the Lambda functions are bundled: esbuild on this machine (no Docker), one minified ESM
 * file per function for Node.js 24, with the AWS SDK v3 bundled at the version package-lock.json
 * pins (the one the tests run), not the one the Lambda runtime ships. The source map is written
 * beside the bundle as `index.mjs.map` without a `sourceMappingURL` comment and the functions
 * run without `--enable-source-maps`, so a cold start never reads or parses it (symbolicate a
 * stack trace offline with it). Files the code reads at run time, relative to its own module
 * URL, are copied next to the bundle: the default agent reducer artifact (lib/reducers,
 * `readAgentLoopSource`) in every function (the registry hashes it at create), and, only in the
 * functions that run reducers (`reducers: true`: the step function and the sweeper, which
 * delivers what an ended run still owes its reducer), the QuickJS WebAssembly module
 * (quickjs-emscripten loads `emscripten-module.wasm` beside the importing module) and the
 * Starlark runtime with its Go glue (lib/sandbox/starlark/runtime-files.ts, about 5.5 MB). The
 * sandbox's code is imported on the first reducer call (lib/sandbox/lazy-host.ts); the other
 * functions' bundles leave it out (an esbuild external), so they carry no reducer runtime at
 * all. The control function's bundle also carries the web console, built by vite from console/
 * into `console/` beside the bundle (functions/control.ts serves it), so what is deployed is
 * always built from the sources being deployed. DESIGN section 11; issues 17 and 24 (point 7).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BundlingOptions, LogLevel, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import { AGENT_LOOP_ARTIFACT_URL } from '../lib/reducers/index.ts';
import { REDUCER_HOST_MODULE } from '../lib/sandbox/lazy-host.ts';
import { GO_WASM_EXEC_URL, STARLARK_RUNTIME_URL } from '../lib/sandbox/starlark/runtime-files.ts';

/** The repository root (a directory URL, ends in `/`). */
export const REPO_ROOT: URL = new URL('../', import.meta.url);

/**
 * ESM bundles have no `require`; CommonJS dependencies bundled into them call it for Node
 * built-ins, so the banner defines one (its import aliased so it cannot clash with a bundled name).
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __agentRunsCreateRequire } from 'node:module'; const require = __agentRunsCreateRequire(import.meta.url);";

/**
 * The esbuild external that leaves the reducer sandbox (lib/sandbox/reducer-host.ts and all it
 * imports: QuickJS, the WebAssembly and Starlark runners) out of a bundle: the import path of
 * lib/sandbox/lazy-host.ts's dynamic import, as esbuild matches externals (a wildcard is not
 * matched against resolved paths). Nothing else in a bundle built with it may import that path.
 */
export const REDUCER_SANDBOX_EXTERNAL = REDUCER_HOST_MODULE;

/**
 * Files copied next to each bundle: absolute source path → file name in the bundle directory.
 * `reducers: false` leaves out the reducer runtimes (QuickJS module, Starlark runtime and glue).
 */
export function runtimeFiles(
  options: { reducers?: boolean } = {},
): ReadonlyArray<{ source: string; name: string }> {
  const artifact = { source: fileURLToPath(AGENT_LOOP_ARTIFACT_URL), name: 'agent-loop.js' };
  if (options.reducers === false) return [artifact];
  const fromQuickJs = createRequire(createRequire(import.meta.url).resolve('quickjs-emscripten'));
  return [
    artifact,
    {
      source: fromQuickJs.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'),
      name: 'emscripten-module.wasm',
    },
    { source: fileURLToPath(STARLARK_RUNTIME_URL), name: 'starlark-runtime.wasm' },
    { source: fileURLToPath(GO_WASM_EXEC_URL), name: 'wasm_exec.js' },
  ];
}

/** The shell command that builds the web console into `outDir` (vite, with console/vite.config.ts). */
export function consoleBuildCommand(outDir: string): string {
  // vite's package exports do not list its bin: find it beside its package.json.
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
  const config = fileURLToPath(new URL('console/vite.config.ts', REPO_ROOT));
  return `${shellQuote(process.execPath)} ${shellQuote(vite)} build --config ${shellQuote(config)} --outDir ${shellQuote(outDir)} --emptyOutDir --logLevel warn`;
}

/**
 * The NodejsFunction `bundling` options shared by the functions; `withConsole` (the control
 * function) adds the console build to the bundle; `reducers: false` (a function that never calls
 * a reducer) leaves the reducer sandbox and its runtime files out. Default: with reducers.
 */
export function bundlingOptions(
  options: { withConsole?: boolean; reducers?: boolean } = {},
): BundlingOptions {
  const files = runtimeFiles({ reducers: options.reducers !== false });
  return {
    forceDockerBundling: false,
    format: OutputFormat.ESM,
    target: 'node24',
    mainFields: ['module', 'main'],
    // What is tested is what runs: no `@aws-sdk/*` externals resolved from the runtime.
    bundleAwsSDK: true,
    externalModules: options.reducers === false ? [REDUCER_SANDBOX_EXTERNAL] : [],
    minify: true,
    // index.mjs.map beside the bundle, not linked from it: nothing reads it at start-up.
    sourceMap: true,
    sourceMapMode: SourceMapMode.EXTERNAL,
    sourcesContent: false,
    banner: ESM_REQUIRE_BANNER,
    // esbuild's warnings and errors only (no per-file size summary).
    logLevel: LogLevel.WARNING,
    commandHooks: {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (_inputDir: string, outputDir: string) => [
        ...files.map((f) => `cp ${shellQuote(f.source)} ${shellQuote(`${outputDir}/${f.name}`)}`),
        ...(options.withConsole === true ? [consoleBuildCommand(`${outputDir}/console`)] : []),
      ],
    },
  };
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
