#!/usr/bin/env node
/**
 * Builds the bundled CLI: bin/cli-entry.ts → dist/cli/agent-runs.mjs (esbuild: ESM, platform
 * node, target node20, packages bundled, minified, no source map) plus its lazy chunks
 * (dist/cli/chunk-*.mjs, one per command's `import()`), and dist/cli/inputs.json: the source
 * files the bundle was built from (paths relative to the repository), which bin/agent-runs.mjs
 * compares with the bundle's mtime to rebuild a stale bundle. Plain JavaScript so that it runs on
 * any Node (npm's `prepare` on `npm ci`, the launcher). `npm run build:cli`.
 *
 * The commands that run the local stack, the replay, the terminal UI or the reducer sandbox
 * (`start`, `replay`, `watch`, `reducers check`) stay out of the bundle: their modules read files
 * beside themselves (DynamoDB Local, the console, the QuickJS and Starlark runtimes) and each
 * takes seconds anyway. Their `import()` is kept,
 * pointing at the .ts source (Node 24 type stripping), see SOURCE_ONLY.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Where the bundle goes. */
export const CLI_DIST = join(ROOT, 'dist/cli');
/** The bundled CLI's entry. */
export const CLI_BUNDLE = join(CLI_DIST, 'agent-runs.mjs');
/** The list of the bundle's source files. */
export const CLI_INPUTS = join(CLI_DIST, 'inputs.json');

/** Modules imported from source by the bundle (relative to the repository): see the header. */
const SOURCE_ONLY = [
  'lib/local/start-run.ts',
  'lib/replay/local.ts',
  'lib/replay/run-replay.ts',
  'bin/commands/watch-view.ts',
  'bin/commands/reducers-check.ts',
];

/** Besides the bundle's inputs, files whose change makes it stale (an `npm ci` or a lock change). */
const ALSO_WATCHED = ['package-lock.json', 'node_modules/.package-lock.json', 'bin/build-cli.mjs'];

/** Keeps SOURCE_ONLY modules out of the bundle, imported by their path from dist/cli. */
const sourceOnly = {
  name: 'source-only',
  setup(build) {
    const wanted = new Set(SOURCE_ONLY.map((p) => join(ROOT, p)));
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const path = resolve(args.resolveDir, args.path);
      if (!wanted.has(path)) return undefined;
      if (args.kind !== 'dynamic-import') {
        return {
          errors: [{ text: `${relative(ROOT, path)} is source-only: import() it, do not import it` }],
        };
      }
      return { path: relative(CLI_DIST, path).split('\\').join('/'), external: true };
    });
  },
};

/**
 * Builds the bundle. Writes the chunks first and the entry last (each through a temporary file
 * and a rename), so that a process starting meanwhile runs either the old bundle or the new one.
 * `clean` removes chunks of earlier builds (not done by the launcher's rebuild: a CLI started from
 * the old entry may still import them). Resolves to the entry's path; rejects with esbuild's
 * error when the build fails.
 * @param {{ clean?: boolean }} [options]
 * @returns {Promise<string>}
 */
export async function buildCli(options = {}) {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { 'agent-runs': join(ROOT, 'bin/cli-entry.ts') },
    outdir: CLI_DIST,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    metafile: true,
    write: false,
    logLevel: 'silent',
    // Bundled CommonJS packages call require() for Node built-ins: give them one.
    banner: {
      js: "import{createRequire as __agentRunsRequire}from'node:module';const require=__agentRunsRequire(import.meta.url);",
    },
    plugins: [sourceOnly],
  });
  mkdirSync(CLI_DIST, { recursive: true });
  const write = (path, contents) => {
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, contents);
    renameSync(temporary, path);
  };
  const outputs = result.outputFiles;
  for (const file of outputs) if (file.path !== CLI_BUNDLE) write(file.path, file.contents);
  const inputs = [
    ...Object.keys(result.metafile.inputs).filter((p) => !p.includes('node_modules/')),
    ...ALSO_WATCHED,
  ];
  write(CLI_INPUTS, `${JSON.stringify(inputs, null, 1)}\n`);
  const entry = outputs.find((f) => f.path === CLI_BUNDLE);
  if (entry === undefined) throw new Error(`esbuild wrote no ${relative(ROOT, CLI_BUNDLE)}`);
  write(CLI_BUNDLE, entry.contents);
  if (options.clean === true) {
    const keep = new Set([...outputs.map((f) => f.path), CLI_INPUTS]);
    for (const name of readdirSync(CLI_DIST)) {
      const path = join(CLI_DIST, name);
      // Another build's temporary file (a launcher rebuilding meanwhile) is left alone.
      if (!keep.has(path) && !name.endsWith('.tmp')) rmSync(path, { force: true });
    }
  }
  return CLI_BUNDLE;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  try {
    await buildCli({ clean: true });
    const ms = Math.round(performance.now() - started);
    console.log(`build:cli: ${relative(ROOT, CLI_BUNDLE)} in ${ms} ms`);
  } catch (error) {
    console.error(`build:cli failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
