/**
 * How the Lambda functions are bundled: esbuild on this machine (no Docker), through its API, into
 * minified ESM for Node.js 24, with the AWS SDK v3 bundled at the version package-lock.json pins
 * (the one the tests run), not the one the Lambda runtime ships. Code splitting is on: the entry
 * is `index.mjs`, and each module the code imports dynamically (the reducer sandbox, the model
 * providers, the tool adapters, the SDK's credential providers) is a chunk beside it
 * (`<name>-<hash>.mjs`) that Node reads, compiles and runs only when that import runs, so a cold
 * start pays for the code its function needs at start-up and no more. Source
 * maps are written beside each file (`*.mjs.map`) without a `sourceMappingURL` comment and the
 * functions run without `--enable-source-maps`, so a cold start never reads or parses them
 * (symbolicate a stack trace offline with them). Files the code reads at run time, relative to
 * its own module URL (chunks sit in the same directory as `index.mjs`), are copied next to the
 * bundle: the default agent reducer artifact (lib/reducers, `readAgentLoopSource`) in every
 * function (the registry hashes it at create), and, only in the functions that run reducers
 * (`reducers: true`: the step function, the sweeper, which delivers what an ended run still
 * owes its reducer, and the control function, which checks reducer upgrades), the QuickJS WebAssembly module (quickjs-emscripten loads
 * `emscripten-module.wasm` beside the importing module) and the Starlark runtime with its Go glue
 * (lib/sandbox/starlark/runtime-files.ts, about 5.5 MB). The other functions' bundles leave the
 * sandbox out (an esbuild external), so they carry no reducer runtime at all. The control
 * function's bundle also carries the web console, built by vite from console/ into `console/`
 * beside the bundle (functions/control.ts serves it), so what is deployed is always built from
 * the sources being deployed. docs/architecture.md, "Runtime versions".
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';
import { buildSync } from 'esbuild';
import { AGENT_LOOP_ARTIFACT_URL } from '../lib/reducers/artifact.ts';
import { REDUCER_HOST_MODULE } from '../lib/sandbox/lazy-host.ts';
import { GO_WASM_EXEC_URL, STARLARK_RUNTIME_URL } from '../lib/sandbox/starlark/runtime-files.ts';

/** The repository root (a directory URL, ends in `/`). */
export const REPO_ROOT: URL = new URL('../', import.meta.url);

/**
 * ESM bundles have no `require`; CommonJS dependencies bundled into them call it for Node
 * built-ins, so the banner (on every chunk) defines one (its import aliased so it cannot clash
 * with a bundled name).
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
 * The module that stands for `node:http` in the bundles (cdk/node-http.cjs): the built-in's
 * CommonJS exports, so that no ESM import makes Node build its facade, which loads undici.
 */
const NODE_HTTP_SHIM = fileURLToPath(new URL('node-http.cjs', import.meta.url));

/** What one function's bundle is built from. */
export interface FunctionBundleOptions {
  /** The entry file (absolute path); it exports the handler, deployed as `index.handler`. */
  entry: string;
  /** esbuild's working directory, where packages resolve (absolute; default: the repository root). */
  projectRoot?: string;
  /** Whether the function calls reducers (default true); false leaves the sandbox and its runtimes out. */
  reducers?: boolean;
  /** Builds the web console into `console/` beside the bundle (the control function). */
  withConsole?: boolean;
}

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

/** The argv (after the Node executable) that builds the web console into `outDir` (vite, console/vite.config.ts). */
export function consoleBuildArgs(outDir: string): string[] {
  // vite's package exports do not list its bin: find it beside its package.json.
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
  const config = fileURLToPath(new URL('console/vite.config.ts', REPO_ROOT));
  return [vite, 'build', '--config', config, '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'];
}

/**
 * Bundles one function into `outputDir` (which must exist): `index.mjs`, its chunks, their
 * unlinked source maps and the runtime files (see the module comment). Throws esbuild's error
 * (its messages already printed) when the code does not build, or vite's when the console does not.
 */
export function bundleFunction(options: FunctionBundleOptions, outputDir: string): void {
  const reducers = options.reducers !== false;
  buildSync({
    entryPoints: { index: options.entry },
    absWorkingDir: options.projectRoot ?? fileURLToPath(REPO_ROOT),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    mainFields: ['module', 'main'],
    // Dynamic imports become chunks read only when they run. Flat names: code that reads a
    // file beside its own module URL finds it wherever esbuild put that code.
    splitting: true,
    outdir: outputDir,
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    minify: true,
    // `external`: the .map files beside, with no sourceMappingURL comment.
    sourcemap: 'external',
    sourcesContent: false,
    banner: { js: ESM_REQUIRE_BANNER },
    external: reducers ? [] : [REDUCER_SANDBOX_EXTERNAL],
    alias: { 'node:http': NODE_HTTP_SHIM, http: NODE_HTTP_SHIM },
    logLevel: 'warning',
  });
  for (const f of runtimeFiles({ reducers })) copyFileSync(f.source, join(outputDir, f.name));
  if (options.withConsole === true) {
    execFileSync(process.execPath, consoleBuildArgs(join(outputDir, 'console')), { stdio: 'inherit' });
  }
}

/**
 * The Lambda code of one function: an asset bundled on this machine by bundleFunction at synth
 * (no Docker; the image is never pulled), hashed from its output. Deploy it with handler
 * `index.handler`. A stack whose bundling is skipped (`aws:cdk:bundling-stacks`) gets a
 * placeholder hash and no bundle, as NodejsFunction does.
 */
export function functionCode(options: FunctionBundleOptions): Code {
  const projectRoot = options.projectRoot ?? fileURLToPath(REPO_ROOT);
  return Code.fromAsset(projectRoot, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:24'),
      // Not run (local bundling always succeeds or throws); it names the bundle, and so keeps
      // the asset cache key of each function distinct.
      command: [
        'bundle',
        relative(projectRoot, options.entry),
        `reducers=${options.reducers !== false}`,
        `console=${options.withConsole === true}`,
      ],
      local: {
        tryBundle(outputDir: string): boolean {
          bundleFunction({ ...options, projectRoot }, outputDir);
          return true;
        },
      },
    },
  });
}
