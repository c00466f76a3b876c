/**
 * The bundled CLI (dist/cli/agent-runs.mjs) against a local stack, as fresh Node processes in
 * the stack's directory (URL and token from its state file): `runs get` of a missing run fails
 * with the same error, code and exit code as the CLI from source (bin/agent-runs.ts); `runs get`
 * of a run shows it.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../lib/client/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, startLocalStack } from '../../lib/local/stack.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'dist/cli/agent-runs.mjs');
const SOURCE = join(ROOT, 'bin/agent-runs.ts');
const run = promisify(execFile);
const stateDir = mkdtempSync(join(tmpdir(), 'cli-bundle-'));
let stack: LocalStack;

/** `node script args` in the stack's directory: exit code, stdout, stderr. */
async function cli(
  script: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], { cwd: stateDir });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  execFileSync(process.execPath, [join(ROOT, 'bin/build-cli.mjs')], { cwd: ROOT, stdio: 'pipe' });
  stack = await startLocalStack({ port: 0, stateDir, logger: SILENT_LOG, consoleDir: false });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('the bundled CLI against the local stack', () => {
  it('fails runs get of a missing run as the CLI from source does', async () => {
    const missing = 'run_00000000000000000000000000';
    const bundled = await cli(BUNDLE, ['--json', 'runs', 'get', missing]);
    const source = await cli(SOURCE, ['--json', 'runs', 'get', missing]);
    expect(bundled.code).toBe(1);
    expect(bundled.code).toBe(source.code);
    const error = JSON.parse(bundled.stderr).error;
    expect(error.status).toBe(404);
    expect(error.code).toBe(JSON.parse(source.stderr).error.code);
    // The human form too: one line naming the code.
    const human = await cli(BUNDLE, ['runs', 'get', missing]);
    expect(human.stderr.trim()).toBe(`error: ${error.code}: ${error.message}`);
  });

  it('shows a run with runs get', async () => {
    const client = createClient({ baseUrl: stack.url, token: stack.token });
    const created = await client.createRun({ subject: { workspace: 'cli', path: '/bundle/1' }, input: null });
    const shown = await cli(BUNDLE, ['--json', 'runs', 'get', created.run.run_id]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      run_id: created.run.run_id,
      status: created.run.status,
    });
    const human = await cli(BUNDLE, ['runs', 'get', created.run.run_id]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(created.run.run_id);
  });
});
