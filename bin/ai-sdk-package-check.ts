/**
 * `npm run ai-sdk:check`: builds the @agent-runs/ai-sdk package (packages/ai-sdk: tsc over
 * lib/ai-sdk and the contracts it reads), points its imports of lib/client at the
 * `@agent-runs/client` peer (one copy of the client, so its ApiError and `drive` are the ones the
 * caller's client throws and fences with), packs it and @agent-runs/client with `npm pack`,
 * installs both with `ai` into a fresh project, type-checks every ```ts block of
 * packages/ai-sdk/README.md against the installed declarations and runs it against a local
 * stack: each must exit 0 and print every line its `// prints: ...` comments name. Exits 1 on
 * the first failure.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CheckStack, checkSteps, startCheckStack, tsBlocks } from './package-check-parts.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = join(root, 'packages/ai-sdk');
const clientPkg = join(root, 'packages/client');
const tsc = join(root, 'node_modules/typescript/bin/tsc');
const work = mkdtempSync(join(tmpdir(), 'agent-runs-ai-sdk-'));
const { step, run } = checkSteps('ai-sdk:check');
let stack: CheckStack | undefined;

/** Builds packages/ai-sdk/dist and makes lib/client the `@agent-runs/client` peer: its copy is removed. */
function buildPackage(): void {
  rmSync(join(pkg, 'dist'), { recursive: true, force: true });
  run(process.execPath, [tsc, '-p', join(pkg, 'tsconfig.json')], root);
  const own = join(pkg, 'dist/lib/ai-sdk');
  for (const file of readdirSync(own)) {
    const path = join(own, file);
    const text = readFileSync(path, 'utf8').replace(
      /(["'])\.\.\/client\/index\.[jt]s\1/g,
      "'@agent-runs/client'",
    );
    writeFileSync(path, text);
  }
  rmSync(join(pkg, 'dist/lib/client'), { recursive: true, force: true });
  rmSync(join(pkg, 'dist/lib/core'), { recursive: true, force: true });
  for (const dir of readdirSync(join(pkg, 'dist/lib'))) {
    for (const file of readdirSync(join(pkg, 'dist/lib', dir))) {
      const text = readFileSync(join(pkg, 'dist/lib', dir, file), 'utf8');
      if (/["']\.\.\/(client|core)\//.test(text))
        throw new Error(`dist/lib/${dir}/${file} still imports lib/client or lib/core`);
    }
  }
}

try {
  buildPackage();
  rmSync(join(clientPkg, 'dist'), { recursive: true, force: true });
  run(process.execPath, [tsc, '-p', join(clientPkg, 'tsconfig.json')], root);
  step('built packages/ai-sdk/dist (lib/client as the @agent-runs/client peer) and packages/client/dist');

  const samples = tsBlocks(readFileSync(join(pkg, 'README.md'), 'utf8'));
  if (samples.length === 0) throw new Error('packages/ai-sdk/README.md has no ```ts sample');
  run('npm', ['pack', '--pack-destination', work, '--silent'], pkg);
  run('npm', ['pack', '--pack-destination', work, '--silent'], clientPkg);
  const tarballs = readdirSync(work).filter((f) => f.endsWith('.tgz'));
  if (tarballs.length !== 2) throw new Error(`npm pack wrote ${tarballs.length} tarballs, not 2`);
  const project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'smoke', private: true, type: 'module' }),
  );
  const ai = (
    JSON.parse(readFileSync(join(root, 'node_modules/ai/package.json'), 'utf8')) as { version: string }
  ).version;
  run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--silent', ...tarballs.map((t) => join(work, t)), `ai@${ai}`],
    project,
  );
  step(`installed ${tarballs.join(', ')} and ai@${ai}`);

  const sampleFiles = samples.map((sample, i) => {
    const file = `readme-${i + 1}.ts`;
    writeFileSync(join(project, file), sample.code);
    return file;
  });
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2023',
        lib: ['ES2023', 'DOM'],
        typeRoots: [join(root, 'node_modules/@types')],
        types: ['node'],
        noEmit: true,
        skipLibCheck: true,
      },
      files: sampleFiles,
    }),
  );
  run(process.execPath, [tsc, '-p', project], project);
  step(`the README's ${samples.length} samples type-check against the installed declarations`);

  stack = await startCheckStack(root, join(work, 'stack'));
  const ready = stack;
  step(`local stack at ${ready.url}`);
  const env = { ...process.env, AGENT_RUNS_URL: ready.url, AGENT_RUNS_TOKEN: ready.token };
  for (const [i, sample] of samples.entries()) {
    const out = run(process.execPath, ['--no-warnings', sampleFiles[i] as string], project, env);
    const lines = out.split('\n').map((l) => l.trim());
    const missing = sample.prints.filter((p) => !lines.includes(p));
    if (missing.length > 0)
      throw new Error(`README sample ${i + 1} did not print ${JSON.stringify(missing)}; it printed:\n${out}`);
  }
  step(`the README's ${samples.length} samples ran against the local stack`);
  step('passed');
} catch (error) {
  console.error(`ai-sdk:check failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await stack?.stop();
  rmSync(work, { recursive: true, force: true });
}
