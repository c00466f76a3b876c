/**
 * Where the recorded tau-bench airline conversations are (shared/data/tau-bench-airline): the
 * TAU_BENCH_DIR environment variable, else `shared/` beside this checkout, else the machine's
 * shared folder (/work/shared), so that a clone made anywhere on this machine finds them.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

function locate(): string {
  if (process.env.TAU_BENCH_DIR !== undefined) return resolve(process.env.TAU_BENCH_DIR);
  const candidates = [
    resolve(import.meta.dirname, '../../../shared/data/tau-bench-airline'),
    '/work/shared/data/tau-bench-airline',
  ];
  const found = candidates.find((dir) => existsSync(resolve(dir, 'trajectories.json')));
  if (found === undefined) {
    throw new Error(`tau-bench data not found in ${candidates.join(' or ')}; set TAU_BENCH_DIR`);
  }
  return found;
}

export const TAU_BENCH_DIR = locate();
