/**
 * Where the recorded tau-bench airline conversations are: the TAU_BENCH_DIR environment
 * variable, else the copy this repository carries (data/tau-bench-airline). A missing copy
 * fails with the path and how to restore it.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

function locate(): string {
  const dir = resolve(
    process.env.TAU_BENCH_DIR ?? resolve(import.meta.dirname, '../../data/tau-bench-airline'),
  );
  if (!existsSync(resolve(dir, 'trajectories.json'))) {
    throw new Error(
      `tau-bench data not found: ${resolve(dir, 'trajectories.json')}; it ships in the repository at ` +
        'data/tau-bench-airline/ (git checkout -- data/), or set TAU_BENCH_DIR',
    );
  }
  return dir;
}

export const TAU_BENCH_DIR = locate();
