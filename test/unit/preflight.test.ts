import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const noBrowser = { ...process.env, CHROMIUM_PATH: '/nonexistent/chromium', PREFLIGHT_NO_INSTALL: '1' };

describe('the test command pre-flight', () => {
  it('refuses a machine without the browser with one line naming it and its install command', () => {
    const result = spawnSync('bash', ['bin/preflight.sh'], { cwd: root, env: noBrowser, encoding: 'utf8' });
    expect(result.status).toBe(1);
    const lines = result.stderr.split('\n').filter((l) => l.startsWith('preflight: missing'));
    expect(lines.some((l) => l.includes('chromium') && l.includes('apt-get install -y chromium'))).toBe(true);
    expect(result.stderr).toContain('nothing was run');
  });

  it('stops `npm run verify` before any check or test runs', () => {
    const result = spawnSync('npm', ['run', 'verify'], { cwd: root, env: noBrowser, encoding: 'utf8' });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('preflight: missing chromium');
    expect(result.stdout).not.toContain('biome format');
    expect(result.stdout).not.toContain('vitest');
  });

  it('passes when everything is there (the browser path pointed at an executable)', () => {
    const result = spawnSync('bash', ['bin/preflight.sh'], {
      cwd: root,
      env: { ...process.env, CHROMIUM_PATH: process.execPath, PREFLIGHT_NO_INSTALL: '1' },
      encoding: 'utf8',
    });
    expect(result.stderr).not.toContain('missing chromium');
  });
});
