/**
 * The bundled CLI (bin/build-cli.mjs → dist/cli/agent-runs.mjs) and its launcher
 * (bin/agent-runs.mjs, the package bin): built here, run as fresh Node processes. Its help is
 * the program's help, command for command; the launcher rebuilds a bundle older than its sources.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../bin/agent-runs.ts';
import { runCli } from '../../bin/commands/program.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { runLogOf } from '../../lib/engine/upgrade/run-log.ts';
import { newRun } from '../support/runs.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'dist/cli/agent-runs.mjs');
const LAUNCHER = join(ROOT, 'bin/agent-runs.mjs');
const run = promisify(execFile);

/** The program's own help, in this process. */
async function helpInProcess(): Promise<string> {
  const out: string[] = [];
  const code = await runCli(COMMANDS, ['--help'], {
    out: (t) => out.push(t),
    err: () => {},
    cwd: ROOT,
    env: {},
  });
  expect(code).toBe(0);
  return out.join('\n');
}

beforeAll(() => {
  execFileSync(process.execPath, [join(ROOT, 'bin/build-cli.mjs')], { cwd: ROOT, stdio: 'pipe' });
}, 60_000);

describe('the bundled CLI', () => {
  it('prints the command list on --help, as the program from source does', async () => {
    const { stdout } = await run(process.execPath, [BUNDLE, '--help'], { cwd: ROOT });
    expect(stdout.trimEnd()).toBe(await helpInProcess());
    for (const command of ['start', 'token', 'runs', 'events', 'stop', 'approve', 'watch', 'replay']) {
      expect(stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });

  it('lists its source files, and keeps start, replay and watch out of the bundle', () => {
    const inputs = JSON.parse(readFileSync(join(ROOT, 'dist/cli/inputs.json'), 'utf8')) as string[];
    expect(inputs).toContain('bin/cli-entry.ts');
    expect(inputs).toContain('bin/commands/runs.ts');
    expect(inputs).not.toContain('lib/local/stack.ts');
    const entry = readFileSync(BUNDLE, 'utf8');
    expect(entry).toContain('import("../../lib/local/start-run.ts")');
    expect(entry).toContain('import("../../bin/commands/watch-view.ts")');
  });

  it('runs reducers check from source: the tally reducer reproduces a recorded first answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundle-check-'));
    const run0 = newRun({ run_id: 'run_bundle', reducer: { function_path: '/tally' } }, 1_700_000_000_000);
    const events: RunEvent[] = [
      { seq: 1, kind: 'run_started', at: 1, data: { input: null } },
      {
        seq: 2,
        kind: 'reducer_answered',
        at: 2,
        data: { event_seq: 1, state_rev: 1, effects: [{ effect_id: '1:0', kind: 'call_tool' }] },
      },
      {
        seq: 3,
        kind: 'operation_started',
        at: 2,
        effect_id: '1:0',
        operation_id: 'run_bundle/op/1',
        data: { kind: 'tool_call', attempt: 1, tool: 'count' },
      },
    ];
    writeFileSync(
      join(dir, 'run.json'),
      JSON.stringify(
        runLogOf({ run: { ...run0, last_seq: 3 }, events, checkpoints: [], states: [], exportedAt: 0 }),
      ),
    );
    const tally = join(ROOT, 'test/fixtures/reducers/tally.js');
    const { stdout } = await run(
      process.execPath,
      [BUNDLE, 'reducers', 'check', '--artifact', tally, '--from', dir],
      { cwd: ROOT },
    );
    expect(stdout).toContain('run_bundle  identical  (1 deliveries)');
    expect(readFileSync(BUNDLE, 'utf8')).toContain('import("../../bin/commands/reducers-check.ts")');
  });

  it('reports a usage error with its code, without reaching a server', async () => {
    const failed = await run(process.execPath, [BUNDLE, '--json', 'runs', 'get', 'run_x'], {
      cwd: '/',
      env: { PATH: process.env.PATH ?? '' },
    }).catch((err: { code: number; stderr: string }) => err);
    expect('code' in failed && failed.code).toBe(1);
    expect(JSON.parse((failed as { stderr: string }).stderr)).toMatchObject({ error: { code: 'no_url' } });
  });
});

/** Preloaded into a CLI process: prints on exit, to stderr, every module URL it loaded. */
const RECORD_LOADS = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({ load(url, context, next) { seen.push(url); return next(url, context); } });
process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(seen) + '\\n'));
`)}`;

describe('lazy loading (the CLI from source)', () => {
  it('loads only commander and the command registrations for --help', async () => {
    const { stderr } = await run(
      process.execPath,
      ['--import', RECORD_LOADS, join(ROOT, 'bin/agent-runs.ts'), '--help'],
      { cwd: ROOT },
    );
    const line = stderr.split('\n').find((l) => l.startsWith('LOADED '));
    const loaded = JSON.parse(line?.slice('LOADED '.length) ?? '[]') as string[];
    const files = loaded.filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u).slice(ROOT.length));
    expect(files).toContain('bin/commands/runs.ts');
    const packages = new Set(files.filter((f) => f.startsWith('node_modules/')).map((f) => f.split('/')[1]));
    expect([...packages]).toEqual(['commander']);
    // Of lib/, only what registration needs: no zod contracts, client, local stack or replay.
    expect(files.filter((f) => f.startsWith('lib/')).sort()).toEqual([
      'lib/client/cli-invocation.ts',
      'lib/client/errors.ts',
      'lib/contracts/env-names.ts',
      'lib/contracts/names.ts',
      'lib/local/start-command.ts',
      'lib/local/token-command.ts',
    ]);
  });
});

describe('the launcher (bin/agent-runs.mjs)', () => {
  it('runs the bundle, and rebuilds it first when it is older than a source file', async () => {
    const old = new Date('2001-01-01T00:00:00Z');
    utimesSync(BUNDLE, old, old);
    const { stdout } = await run(process.execPath, [LAUNCHER, '--help'], { cwd: ROOT });
    expect(stdout.trimEnd()).toBe(await helpInProcess());
    expect(statSync(BUNDLE).mtimeMs).toBeGreaterThan(old.getTime() + 1000);
  });

  it('leaves a fresh bundle as it is', async () => {
    const before = statSync(BUNDLE).mtimeMs;
    await run(process.execPath, [LAUNCHER, '--version'], { cwd: ROOT });
    expect(statSync(BUNDLE).mtimeMs).toBe(before);
  });
});
