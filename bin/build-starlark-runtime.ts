#!/usr/bin/env node
/**
 * `node bin/build-starlark-runtime.ts [--check]` (`npm run build:starlark`): builds the Starlark
 * runtime, lib/sandbox/starlark/main.go over Debian's go.starlark.net, for js/wasm, and writes
 * next to it `starlark-runtime.wasm`, Go's `wasm_exec.js` (copied unmodified from the toolchain
 * that built the module), the two packages' copyright files under `licenses/`, and
 * `runtime.json`, the manifest test/unit/starlark-runtime-build.test.ts checks the committed
 * files against. With `--check` it builds into a temporary directory and compares instead of
 * writing: exit 0 when the committed files are what this machine builds, 1 when they differ.
 *
 * Needs `apt-get install golang-1.19 golang-starlark-dev` (about 2 minutes). The build is
 * reproducible: main.go is built as the package `starlark-runtime` of a temporary GOPATH entry
 * with `-trimpath` and an empty build id, so neither the checkout's location nor the build
 * cache enters the binary (built outside GOPATH, Go records the directory), and a fresh
 * GOCACHE keeps earlier builds out of it. `GO` overrides
 * the go binary (default /usr/lib/go-1.19/bin/go).
 * docs/guides/starlark-and-wasm-reducers.md.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';

const GO = process.env.GO ?? '/usr/lib/go-1.19/bin/go';
const GOPATH = '/usr/share/gocode';
const STARLARK_SOURCES = join(GOPATH, 'src/go.starlark.net');
const RUNTIME_DIR = fileURLToPath(new URL('../lib/sandbox/starlark/', import.meta.url));
/** The import path main.go is built under (in a temporary GOPATH entry, so no checkout path enters the binary). */
const PACKAGE = 'starlark-runtime';
const BUILD_FLAGS = ['build', '-trimpath', '-ldflags=-s -w -buildid=', '-o'];
const LICENSES: ReadonlyArray<{ from: string; name: string }> = [
  { from: '/usr/share/doc/golang-1.19-src/copyright', name: 'golang-1.19-src.copyright' },
  { from: '/usr/share/doc/golang-starlark-dev/copyright', name: 'golang-starlark-dev.copyright' },
];

const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

/** One sha256 over every .go file under `root`: `path NUL sha256 NL` lines, sorted by path. */
async function treeDigest(root: string): Promise<string> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile() && e.name.endsWith('.go'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
  const lines = await Promise.all(
    files.map(async (file) => `${relative(root, file)}\0${sha256(await readFile(file))}\n`),
  );
  return sha256(lines.join(''));
}

function debianVersion(pkg: string): string | null {
  try {
    // dpkg-query's own format placeholder, not a template.
    const format = ['-f=$', '{Version}'].join('');
    return execFileSync('dpkg-query', ['-W', format, pkg], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

interface Built {
  wasm: Uint8Array;
  glue: Uint8Array;
  manifest: string;
}

async function build(out: string): Promise<Built> {
  const goEnv = (name: string) => execFileSync(GO, ['env', name], { encoding: 'utf8' }).trim();
  const goVersion = goEnv('GOVERSION');
  const goroot = goEnv('GOROOT');
  const wasmPath = join(out, 'starlark-runtime.wasm');
  const packageDir = join(out, 'gopath/src', PACKAGE);
  await mkdir(packageDir, { recursive: true });
  await copyFile(join(RUNTIME_DIR, 'main.go'), join(packageDir, 'main.go'));
  execFileSync(GO, [...BUILD_FLAGS, wasmPath, PACKAGE], {
    cwd: out,
    stdio: 'inherit',
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: out,
      GOCACHE: join(out, 'gocache'),
      GOPATH: `${join(out, 'gopath')}:${GOPATH}`,
      GO111MODULE: 'off',
      GOOS: 'js',
      GOARCH: 'wasm',
      CGO_ENABLED: '0',
      GOFLAGS: '',
    },
  });
  const wasm = new Uint8Array(await readFile(wasmPath));
  const glue = new Uint8Array(await readFile(join(goroot, 'misc/wasm/wasm_exec.js')));
  const manifest = {
    toolchain: {
      go: goVersion,
      debian: {
        'golang-1.19-go': debianVersion('golang-1.19-go'),
        'golang-starlark-dev': debianVersion('golang-starlark-dev'),
      },
    },
    build: `main.go as $TMP/gopath/src/${PACKAGE}; GOPATH=$TMP/gopath:${GOPATH} GO111MODULE=off GOOS=js GOARCH=wasm CGO_ENABLED=0 GOCACHE=$TMP/gocache go ${BUILD_FLAGS.map((f) => (f.includes(' ') ? `'${f}'` : f)).join(' ')} starlark-runtime.wasm ${PACKAGE}`,
    sources: {
      'main.go': sha256(await readFile(join(RUNTIME_DIR, 'main.go'))),
      'go.starlark.net': await treeDigest(STARLARK_SOURCES),
    },
    files: {
      'starlark-runtime.wasm': { sha256: sha256(wasm), size: wasm.byteLength },
      'wasm_exec.js': { sha256: sha256(glue), size: glue.byteLength },
    },
  };
  return { wasm, glue, manifest: `${JSON.stringify(manifest, null, 2)}\n` };
}

const program = new Command()
  .name('build-starlark-runtime')
  .description('Build the Starlark runtime (go.starlark.net for js/wasm) used by the reducer sandbox.')
  .option('--check', 'build into a temporary directory and compare with the committed files')
  .action(async ({ check }: { check?: boolean }) => {
    const out = await mkdtemp(join(tmpdir(), 'starlark-runtime-'));
    try {
      const built = await build(out);
      const hash = sha256(built.wasm);
      if (check) {
        const committed = (name: string) => readFile(join(RUNTIME_DIR, name)).then(sha256, () => 'missing');
        const differences = [
          (await committed('starlark-runtime.wasm')) !== hash && 'starlark-runtime.wasm',
          (await committed('wasm_exec.js')) !== sha256(built.glue) && 'wasm_exec.js',
          (await committed('runtime.json')) !== sha256(built.manifest) && 'runtime.json',
        ].filter((d): d is string => typeof d === 'string');
        if (differences.length > 0) {
          console.error(`differs from this build: ${differences.join(', ')} (built ${hash})`);
          process.exitCode = 1;
          return;
        }
        console.log(`the committed Starlark runtime is reproducible: sha256 ${hash}`);
        return;
      }
      await writeFile(join(RUNTIME_DIR, 'starlark-runtime.wasm'), built.wasm);
      await writeFile(join(RUNTIME_DIR, 'wasm_exec.js'), built.glue);
      await writeFile(join(RUNTIME_DIR, 'runtime.json'), built.manifest);
      for (const license of LICENSES) {
        await writeFile(join(RUNTIME_DIR, 'licenses', license.name), await readFile(license.from));
      }
      console.log(`wrote starlark-runtime.wasm (${built.wasm.byteLength} bytes, sha256 ${hash})`);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

await program.parseAsync();
