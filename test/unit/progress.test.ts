/** Progress of long work as plain lines when there is no terminal (lib/progress.ts), on a fake clock. */
import { describe, expect, it } from 'vitest';
import { formatDuration, startProgress } from '../../lib/progress.ts';

describe('progress lines without a terminal', () => {
  it('prints the count, the rate and the time left every 5 %, the expected duration once, and the end', () => {
    // Prepare: 40 units, one done every 500 ms of a fake clock.
    let now = 0;
    const lines: string[] = [];
    const progress = startProgress({
      label: 'replay',
      total: 40,
      unit: 'conversations',
      out: (line) => lines.push(line),
      now: () => now,
      estimateAfter: 4,
    });

    // Act
    for (let i = 1; i <= 40; i += 1) {
      now += 500;
      progress.tick(1, `${i > 30 ? 1 : 0} diverged`);
    }
    progress.stop();

    // Assess
    expect(lines[0]).toBe('replay: 0/40 conversations');
    expect(lines[1]).toBe('replay: 2/40 conversations (5%), 0 diverged, 2.00/s, about 19s left, 1s elapsed');
    expect(lines).toContain('replay: expected about 20s in all (from the first 4 conversations, 2s)');
    expect(lines.at(-1)).toBe('replay: 40/40 conversations (100%), 1 diverged, 2.00/s, done, 20s elapsed');
    // One line per 5 % (2 units), plus the first line and the estimate.
    expect(lines).toHaveLength(22);
  });

  it('prints a line when 15 s passed without 5 % more, and the last count on a stop short of the end', () => {
    let now = 0;
    const lines: string[] = [];
    const progress = startProgress({
      label: 'bench',
      total: 1000,
      unit: 'runs',
      out: (l) => lines.push(l),
      now: () => now,
    });
    now = 16_000;
    progress.tick();
    now = 17_000;
    progress.tick();
    progress.stop();
    expect(lines).toEqual([
      'bench: 0/1000 runs',
      'bench: 1/1000 runs (0%), 0.06/s, about 4h 26m left, 16s elapsed',
      'bench: 2/1000 runs (0%), 0.12/s, about 2h 21m left, 17s elapsed',
    ]);
  });

  it('leaves the rate and the time left out for a few steps of unlike length (pace false)', () => {
    let now = 0;
    const lines: string[] = [];
    const progress = startProgress({
      label: 'start',
      total: 5,
      unit: 'steps',
      out: (l) => lines.push(l),
      now: () => now,
      pace: false,
    });
    now = 23;
    progress.tick(1, 'HTTP port 8890 bound');
    progress.stop();
    expect(lines).toEqual(['start: 0/5 steps', 'start: 1/5 steps (20%), HTTP port 8890 bound']);
  });

  it('words durations in hours, minutes and seconds', () => {
    expect(formatDuration(9_400)).toBe('9s');
    expect(formatDuration(125_000)).toBe('2m 05s');
    expect(formatDuration(3_720_000)).toBe('1h 02m');
  });
});
