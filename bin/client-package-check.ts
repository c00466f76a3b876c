/**
 * `npm run client:check` (CI): builds the @agent-runs/client package (packages/client: tsc over
 * lib/client, lib/contracts and the CLI's HTTP commands, to JavaScript plus .d.ts), checks that
 * its main entry bundles for a browser (esbuild, platform browser: no Node built-in reachable),
 * packs it with `npm pack`, installs the tarball into a fresh project, type-checks a consumer
 * against its declarations, starts the local stack and runs the smoke script
 * (packages/client/smoke/smoke.mjs) on the machine's Node 20 when there is one and on Node 24.
 * The package's README.md must be in the tarball, and every ```ts block of it is written into
 * the consumer project, type-checked against the installed declarations and run on Node 24
 * against the local stack: each must exit 0 and print every line its `// prints: ...` comments
 * name. Exits 1 on the first failure.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import ts from 'typescript';
import { type CheckStack, checkSteps, startCheckStack, tsBlocks } from './package-check-parts.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = join(root, 'packages/client');
const work = mkdtempSync(join(tmpdir(), 'agent-runs-client-'));
const { step, run } = checkSteps('client:check');
let stack: CheckStack | undefined;

/**
 * The exports of the declaration files `entries` (and the members of exported interfaces and
 * classes) that carry no doc comment, as `name` or `name.member`: what an editor would show
 * without a word.
 */
function undocumented(entries: string[]): string[] {
  const program = ts.createProgram(entries, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const doc = (symbol: ts.Symbol) => ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim();
  const missing: string[] = [];
  for (const entry of entries) {
    const file = program.getSourceFile(entry);
    const module = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    if (module === undefined) throw new Error(`cannot read the declarations ${entry}`);
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (doc(symbol) === '') missing.push(exported.name);
      if (!(symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.Class))) continue;
      for (const member of checker.getDeclaredTypeOfSymbol(symbol).getProperties()) {
        // Inherited from the platform (Error's message, stack, cause): documented there.
        const own = member.declarations?.some((d) => d.getSourceFile().fileName.includes('/dist/'));
        if (own !== true || member.name === 'name') continue;
        if (doc(member) === '') missing.push(`${exported.name}.${member.name}`);
      }
    }
  }
  return missing;
}

try {
  rmSync(join(pkg, 'dist'), { recursive: true, force: true });
  run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(pkg, 'tsconfig.json')],
    root,
  );
  step('built packages/client/dist');

  await build({
    entryPoints: [join(pkg, 'dist/lib/client/index.js')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    logLevel: 'silent',
  });
  step('the main entry bundles for the browser');

  const packed = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--silent'], pkg)) as {
    files: { path: string }[];
  }[];
  const packedFiles = packed[0]?.files.map((f) => f.path) ?? [];
  if (!packedFiles.includes('README.md'))
    throw new Error(`the tarball has no README.md (files: ${packedFiles.slice(0, 10).join(', ')}, ...)`);
  const samples = tsBlocks(readFileSync(join(pkg, 'README.md'), 'utf8'));
  if (samples.length === 0) throw new Error('packages/client/README.md has no ```ts sample');
  step(`the tarball holds README.md (${samples.length} TypeScript samples)`);

  run('npm', ['pack', '--pack-destination', work, '--silent'], pkg);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (tarball === undefined) throw new Error('npm pack wrote no tarball');
  const project = join(work, 'project');
  run('mkdir', ['-p', project], work);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'smoke', private: true, type: 'module' }),
  );
  run('npm', ['install', '--no-audit', '--no-fund', '--silent', join(work, tarball)], project);
  const installed = JSON.parse(run('npm', ['ls', '--json', '--all'], project)) as {
    dependencies: Record<string, { dependencies?: Record<string, unknown> }>;
  };
  const deps = Object.keys(installed.dependencies['@agent-runs/client']?.dependencies ?? {}).sort();
  if (deps.some((d) => d.startsWith('aws-cdk') || d.startsWith('@aws-sdk') || d === 'hono')) {
    throw new Error(`the package pulls server dependencies: ${deps.join(', ')}`);
  }
  step(`installed ${tarball} (dependencies: ${deps.join(', ')})`);

  copyFileSync(join(pkg, 'smoke/smoke.mjs'), join(project, 'smoke.mjs'));
  copyFileSync(join(pkg, 'smoke/types.ts'), join(project, 'types.ts'));
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        lib: ['ES2023', 'DOM'],
        types: [],
        noEmit: true,
        skipLibCheck: false,
      },
      files: ['types.ts'],
    }),
  );
  run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', project], project);
  step('a consumer type-checks against the declarations');

  const dist = join(project, 'node_modules/@agent-runs/client/dist/lib/client');
  const bare = undocumented([join(dist, 'index.d.ts'), join(dist, 'node.d.ts')]);
  if (bare.length > 0) throw new Error(`exports without a doc comment: ${bare.join(', ')}`);
  step('every export of the two entries has a doc comment in the declarations');

  const sampleFiles = samples.map((sample, i) => {
    const file = `readme-${i + 1}.ts`;
    writeFileSync(join(project, file), sample.code);
    return file;
  });
  writeFileSync(
    join(project, 'tsconfig.readme.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2023',
        lib: ['ES2023', 'DOM'],
        // The samples read process.env: Node's types from the repository, not installed here.
        typeRoots: [join(root, 'node_modules/@types')],
        types: ['node'],
        noEmit: true,
        skipLibCheck: true,
      },
      files: sampleFiles,
    }),
  );
  run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(project, 'tsconfig.readme.json')],
    project,
  );
  step(`the README's ${samples.length} samples type-check against the declarations`);

  stack = await startCheckStack(root, join(work, 'stack'));
  const ready = stack;
  step(`local stack at ${ready.url}`);

  const env = { ...process.env, AGENT_RUNS_URL: ready.url, AGENT_RUNS_TOKEN: ready.token };
  const nodes = [process.execPath];
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      if (Number(version.slice(1).split('.')[0]) < 24) nodes.unshift(candidate);
      break;
    } catch {
      // not installed here
    }
  }
  for (const node of nodes) console.log(run(node, ['smoke.mjs'], project, env).trim());
  for (const [i, sample] of samples.entries()) {
    const file = sampleFiles[i] as string;
    const out = execFileSync(process.execPath, ['--no-warnings', file], {
      cwd: project,
      env,
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = out.split('\n').map((l) => l.trim());
    const missing = sample.prints.filter((p) => !lines.includes(p));
    if (missing.length > 0)
      throw new Error(`README sample ${i + 1} did not print ${JSON.stringify(missing)}; it printed:\n${out}`);
  }
  step(`the README's ${samples.length} samples ran against the local stack`);
  step('passed');
} catch (error) {
  console.error(`client:check failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await stack?.stop();
  rmSync(work, { recursive: true, force: true });
}
