/**
 * How fast the CLI answers (issue 26, point 4). Builds the bundled CLI (bin/build-cli.mjs), starts
 * a local stack in this process (its state file in a fresh directory, as `npm start` writes it),
 * creates one run, then times N fresh processes of each (wall clock, median):
 *   `node -e 0`                          the floor: Node's own start-up
 *   `agent-runs --help`                  target <= 0.3 s
 *   `agent-runs runs get RUN`            target <= 0.6 s (URL and token from the state file)
 * where `agent-runs` is the package bin, `node bin/agent-runs.mjs` (the launcher running
 * dist/cli/agent-runs.mjs), on the Node running this bench. For reference, not judged: the same
 * from source (`node bin/agent-runs.ts`), and `npx agent-runs --help`, which adds npm's own
 * start-up. The CLI processes are spawned asynchronously, so this process serves their requests
 * meanwhile. Prints the medians and met / not met; asserts nothing.
 * Run: `npm run bench:cli [-- N]` (N = 7 default).
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Logger } from '@aws-lambda-powertools/logger';
import { createClient } from '../lib/client/index.ts';
import { startLocalStack } from '../lib/local/stack.ts';

const N = Number(process.argv[2] ?? 7);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const HELP_TARGET_MS = 300;
const GET_TARGET_MS = 600;
const run = promisify(execFile);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** The wall-clock ms of `command args` in `cwd`, N times after one warm-up; the median. Throws on a non-zero exit. */
async function time(command: string, args: string[], cwd: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i <= N; i++) {
    const started = performance.now();
    await run(command, args, { cwd, env: process.env, maxBuffer: 16 << 20 });
    if (i > 0) times.push(performance.now() - started);
  }
  return median(times);
}

console.log(execFileSync(process.execPath, [join(ROOT, 'bin/build-cli.mjs')], { encoding: 'utf8' }).trim());
const dir = mkdtempSync(join(tmpdir(), 'agent-runs-bench-cli-'));
const stack = await startLocalStack({
  port: 0,
  stateDir: dir,
  consoleDir: false,
  sweepIntervalMs: 0,
  logger: new Logger({ serviceName: 'bench-cli', logLevel: 'SILENT' }),
});
try {
  const client = createClient({ baseUrl: stack.url, token: stack.token });
  const created = await client.createRun({
    subject: { workspace: 'bench', path: `/cli/${Date.now()}` },
    input: null,
  });
  const runId = created.run.run_id;
  const node = process.execPath;
  const launcher = join(ROOT, 'bin/agent-runs.mjs');
  const source = join(ROOT, 'bin/agent-runs.ts');
  // The launcher must answer with the run (not an error) before it is timed.
  const shown = await run(node, [launcher, '--json', 'runs', 'get', runId], { cwd: dir });
  if (!shown.stdout.includes(runId))
    throw new Error(`runs get printed no run: ${shown.stdout.slice(0, 200)}`);

  const floor = await time(node, ['-e', '0'], dir);
  const help = await time(node, [launcher, '--help'], dir);
  const get = await time(node, [launcher, 'runs', 'get', runId], dir);
  const helpSource = await time(node, [source, '--help'], dir);
  const getSource = await time(node, [source, 'runs', 'get', runId], dir);
  const npx = await time('npx', ['--no-install', 'agent-runs', '--help'], ROOT);

  const s = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
  const verdict = (ms: number, target: number) =>
    `target <= ${s(target)}: ${ms <= target ? 'met' : 'NOT MET'}`;
  console.log(`\nnode ${process.version}, N=${N} (median wall clock of fresh processes)\n`);
  console.log(`node -e 0                          ${s(floor)}`);
  console.log(`agent-runs --help                  ${s(help)}   ${verdict(help, HELP_TARGET_MS)}`);
  console.log(`agent-runs runs get RUN            ${s(get)}   ${verdict(get, GET_TARGET_MS)}`);
  console.log('reference (not judged):');
  console.log(`  node bin/agent-runs.ts --help    ${s(helpSource)}   (from source, no bundle)`);
  console.log(`  node bin/agent-runs.ts runs get  ${s(getSource)}`);
  console.log(`  npx agent-runs --help            ${s(npx)}   (adds npm's own start-up)`);
} finally {
  await stack.stop();
  rmSync(dir, { recursive: true, force: true });
}
