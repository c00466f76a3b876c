/**
 * How the three Lambda functions are bundled: esbuild on this machine (no Docker), one ESM file
 * per function for Node.js 24, minified with a source map, with the AWS SDK v3 bundled at the
 * version package-lock.json pins (the one the tests run), not the one the Lambda runtime ships.
 * Files the code reads at run time, relative to its own module URL, are copied next to the
 * bundle: the default agent reducer artifact (lib/reducers, `readAgentLoopSource`), the QuickJS
 * WebAssembly module (quickjs-emscripten loads `emscripten-module.wasm` beside the importing
 * module) and the Starlark runtime with its Go glue (lib/sandbox/starlark/runtime-files.ts,
 * about 5.5 MB, 1.6 MB zipped). The control function's bundle also carries the web console,
 * built by vite from console/ into `console/` beside the bundle (functions/control.ts serves
 * it), so what is deployed is always built from the sources being deployed. DESIGN section 11;
 * issue 17.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BundlingOptions, LogLevel, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { AGENT_LOOP_ARTIFACT_URL } from '../lib/reducers/index.ts';
import { GO_WASM_EXEC_URL, STARLARK_RUNTIME_URL } from '../lib/sandbox/starlark/runtime-files.ts';

/** The repository root (a directory URL, ends in `/`). */
export const REPO_ROOT: URL = new URL('../', import.meta.url);

/**
 * ESM bundles have no `require`; CommonJS dependencies bundled into them call it for Node
 * built-ins, so the banner defines one (its import aliased so it cannot clash with a bundled name).
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __agentRunsCreateRequire } from 'node:module'; const require = __agentRunsCreateRequire(import.meta.url);";

/** Files copied next to each bundle: absolute source path → file name in the bundle directory. */
export function runtimeFiles(): ReadonlyArray<{ source: string; name: string }> {
  const fromQuickJs = createRequire(createRequire(import.meta.url).resolve('quickjs-emscripten'));
  return [
    { source: fileURLToPath(AGENT_LOOP_ARTIFACT_URL), name: 'agent-loop.js' },
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
 * The NodejsFunction `bundling` options shared by the three functions; `withConsole` (the
 * control function) adds the console build to the bundle.
 */
export function bundlingOptions(options: { withConsole?: boolean } = {}): BundlingOptions {
  const files = runtimeFiles();
  return {
    forceDockerBundling: false,
    format: OutputFormat.ESM,
    target: 'node24',
    mainFields: ['module', 'main'],
    // What is tested is what runs: no `@aws-sdk/*` externals resolved from the runtime.
    bundleAwsSDK: true,
    externalModules: [],
    minify: true,
    sourceMap: true,
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
