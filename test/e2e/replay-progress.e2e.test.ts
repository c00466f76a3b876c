/**
 * The replay's progress when its output is not a terminal (CI logs, `| tee`): the real CLI with
 * standard output on a pipe says up front how many conversations and where the report goes, the
 * expected duration after the first few, then plain progress lines with count, rate and time
 * left, and the end.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { TAU_BENCH_DIR } from '../support/data.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'agent-runs-replay-progress-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('replay progress without a terminal', () => {
  it('prints how many, where the report goes, the expected duration and progress lines', async () => {
    const report = join(dir, 'replay.json');
    const { stdout } = await run(
      process.execPath,
      [
        join(ROOT, 'bin/agent-runs.ts'),
        'replay',
        join(TAU_BENCH_DIR, 'trajectories.json'),
        '--limit',
        '4',
        '--concurrency',
        '2',
        '--report',
        report,
      ],
      { cwd: dir, env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'ERROR' }, maxBuffer: 16 * 1024 * 1024 },
    );
    const lines = stdout.split('\n');
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    const upFront = at(/^replaying 4 conversations \(world recorded, 2 at a time\); report: /);
    const estimate = at(/^replay: expected about \d+(m \d\ds|s) in all \(from the first 3 conversations, /);
    const progress = at(
      /^replay: 1\/4 conversations \(25%\), 0 diverged, [\d.]+\/s, about \S+( \S+)? left, /,
    );
    const end = at(/^replay: 4\/4 conversations \(100%\), 0 diverged, [\d.]+\/s, done, /);
    expect(lines[upFront]).toContain(report);
    expect(upFront).toBeGreaterThanOrEqual(0);
    expect([upFront, progress, estimate, end].every((i) => i >= 0)).toBe(true);
    expect(upFront).toBeLessThan(progress);
    expect(progress).toBeLessThan(estimate);
    expect(estimate).toBeLessThan(end);
    expect(lines).toContain(`report: ${report}`);
    // No terminal: no bar drawn (no carriage returns or cursor codes).
    expect(stdout.includes('\r') || stdout.includes(`${String.fromCharCode(27)}[`)).toBe(false);
  }, 300_000);
});
