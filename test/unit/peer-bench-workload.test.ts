/**
 * The peer bench's reading of a step log (bench/peers/workload.ts) and its kill points
 * (bench/peers/processes.ts): what the crash table counts must be right before its figures mean
 * anything.
 */
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killPoints } from '../../bench/peers/processes.ts';
import {
  analyzeSteps,
  recoveryBreakdown,
  recoveryGaps,
  type StepLine,
  StepLogTail,
  stepKind,
} from '../../bench/peers/workload.ts';

const line = (run: string, n: number, t: number): StepLine => ({ run, n, kind: stepKind(n), t, pid: 1 });

describe('peer bench step log', () => {
  it('counts a charge logged twice as a duplicate side effect and a lookup logged twice as a re-run step', () => {
    // Prepare: run a, 5 steps; step 2 (lookup) and step 5 (charge) ran twice.
    const lines = [1, 2, 2, 3, 4, 5, 5].map((n, i) => line('a', n, i * 10));
    // Act
    const report = analyzeSteps(lines, ['a'], 5);
    // Assess
    expect(report).toMatchObject({
      executions: 7,
      expected: 5,
      steps_run_twice_or_more: 2,
      extra_executions: 2,
      duplicate_side_effects: 1,
      never_ran: 0,
    });
  });

  it('counts a step that never ran and measures gaps between first executions only', () => {
    const lines = [line('a', 1, 0), line('a', 2, 10), line('a', 2, 500), line('a', 4, 40)];
    const report = analyzeSteps(lines, ['a'], 4);
    expect(report.never_ran).toBe(1);
    // Gaps: 1 -> 2 (10 ms, the first execution of 2), 2 -> 4 (30 ms; 3 never ran).
    expect(report.step_gap).toMatchObject({ n: 2, p50_ms: 10, max_ms: 30 });
  });

  it('measures recovery from the kill to each run next step, skipping runs that had not started or had ended', () => {
    const lines = [
      line('a', 1, 0),
      line('a', 2, 1_500),
      line('b', 1, 0),
      line('b', 2, 1_100),
      line('c', 1, 2_000), // started after the kill
      line('d', 1, 100), // ended before the kill
    ];
    const gaps = recoveryGaps(lines, [1_000]);
    expect(gaps).toMatchObject({ n: 2, p50_ms: 100, max_ms: 500 });
  });

  it('splits a stalled run at its takeover, and counts a run that held no lease apart', () => {
    // Run a stalled across the kill at 1000 and was taken over at 7000, stepping at 8000; run b
    // had no takeover and stepped at 3000; run c was not stalled by that kill (nothing before it).
    const lines = [line('a', 1, 900), line('a', 2, 8_000), line('b', 1, 950), line('b', 2, 3_000)];
    lines.push(line('c', 1, 2_000));
    const split = recoveryBreakdown(lines, [1_000], new Map([['a', [500, 7_000]]]));
    expect(split.taken_over.kill_to_takeover).toMatchObject({ n: 1, p50_ms: 6_000 });
    expect(split.taken_over.takeover_to_step).toMatchObject({ n: 1, p50_ms: 1_000 });
    expect(split.no_lease.kill_to_step).toMatchObject({ n: 1, p50_ms: 2_000 });
  });
});

describe('peer bench step log tail', () => {
  it('returns each appended line once, keeping a line being written for the next read', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'step-log-')), 'steps.log');
    const tail = new StepLogTail(path);
    expect(tail.next()).toEqual([]);
    appendFileSync(
      path,
      `${JSON.stringify(line('a', 1, 1))}\n${JSON.stringify(line('a', 2, 2)).slice(0, 10)}`,
    );
    expect(tail.next().map((l) => l.n)).toEqual([1]);
    appendFileSync(path, `${JSON.stringify(line('a', 2, 2)).slice(10)}\n`);
    expect(tail.next().map((l) => l.n)).toEqual([2]);
    expect(tail.next()).toEqual([]);
  });
});

describe('peer bench kill points', () => {
  it('places the same kills for the same seed, in order, inside the workload', () => {
    const points = killPoints({ kills: 5, seed: 19 });
    expect(points).toEqual(killPoints({ kills: 5, seed: 19 }));
    expect(points).toHaveLength(5);
    expect([...points].sort((a, b) => a - b)).toEqual(points);
    for (const p of points) expect(p > 0 && p < 1).toBe(true);
    expect(killPoints({ kills: 5, seed: 20 })).not.toEqual(points);
  });
});
