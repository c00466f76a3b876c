import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_FILE_MISSING, loadToolsOffered, loadTrajectories } from '../../lib/models/tau-bench.ts';
import { loadAirlineBase } from '../../lib/replay/airline/database.ts';

const repoData = resolve(import.meta.dirname, '../../data/tau-bench-airline');

describe('the airline data the repository carries', () => {
  it('has every file the demo and its verdict read, and the licence notice', () => {
    for (const file of [
      'trajectories.json',
      'tools.json',
      'db/flights.json',
      'db/reservations.json',
      'db/users.json',
      'LICENSE',
      'README.md',
    ]) {
      expect(existsSync(join(repoData, file)), file).toBe(true);
    }
  });

  it('loads all 160 recorded conversations and the 14 tools from the in-repo copy', async () => {
    expect(await loadTrajectories(join(repoData, 'trajectories.json'))).toHaveLength(160);
    expect(await loadToolsOffered(join(repoData, 'tools.json'))).toHaveLength(14);
  });
});

describe('a missing data file', () => {
  const empty = mkdtempSync(join(tmpdir(), 'no-data-'));

  it('is refused with a stable code, the file and how to get it (trajectories)', async () => {
    const file = join(empty, 'trajectories.json');
    const error = await loadTrajectories(file).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: DATA_FILE_MISSING });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain('data/tau-bench-airline/');
  });

  it('is refused the same way for the airline database', async () => {
    const error = await loadAirlineBase(empty).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: DATA_FILE_MISSING });
    expect((error as Error).message).toMatch(/flights\.json|reservations\.json|users\.json/);
  });
});
