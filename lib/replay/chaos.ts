/**
 * Chaos for replays: kills the step worker at random commit boundaries, duplicates and delays
 * step messages, and forces leases to expire so that the sweeper takes over. Seeded, so a run
 * with the same seed injects the same sequence of decisions.
 */
import type { CrashPoint } from '../engine/engine.ts';
import type { StepQueue } from '../engine/ports.ts';

/** Thrown by the fault hook: the worker dies at that point, leaving its lease to expire. */
export class SimulatedCrash extends Error {
  override name = 'SimulatedCrash';
  readonly code = 'simulated_crash';
  readonly point: CrashPoint;
  constructor(point: CrashPoint) {
    super(`chaos killed the worker at ${point}`);
    this.point = point;
  }
}

export interface ChaosOptions {
  seed?: number;
  /** Probability of killing the worker at each crash point (default 0.03). */
  killProbability?: number;
  /** Probability that a step message is sent twice (default 0.1). */
  duplicateProbability?: number;
  /** Probability that a step message is delayed 1-2 s (default 0.1). */
  delayProbability?: number;
  /** Probability that a worker stalls past its lease after an operation (default 0.02). */
  expireProbability?: number;
  /** The lease TTL of the stack (ms): a stall lasts this plus a margin. */
  leaseTtlMs: number;
}

export interface ChaosStats {
  kills: number;
  duplicated: number;
  delayed: number;
  expired: number;
  byPoint: Record<string, number>;
}

export interface Chaos {
  faults(point: CrashPoint, runId: string): Promise<void>;
  wrapQueue(queue: StepQueue): StepQueue;
  readonly stats: ChaosStats;
}

/** mulberry32: a small seeded PRNG (deterministic fault decisions for a given seed). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function createChaos(options: ChaosOptions): Chaos {
  const random = prng(options.seed ?? 1);
  const kill = options.killProbability ?? 0.03;
  const duplicate = options.duplicateProbability ?? 0.1;
  const delay = options.delayProbability ?? 0.1;
  const expire = options.expireProbability ?? 0.02;
  const stats: ChaosStats = { kills: 0, duplicated: 0, delayed: 0, expired: 0, byPoint: {} };
  return {
    stats,
    async faults(point) {
      if (point === 'after_dispatch' && random() < expire) {
        stats.expired += 1;
        await new Promise((r) => setTimeout(r, options.leaseTtlMs + 1_500));
        return;
      }
      if (random() < kill) {
        stats.kills += 1;
        stats.byPoint[point] = (stats.byPoint[point] ?? 0) + 1;
        throw new SimulatedCrash(point);
      }
    },
    wrapQueue(queue) {
      return {
        sent: queue.sent,
        async send(message, delaySeconds) {
          const r = random();
          if (r < delay) {
            stats.delayed += 1;
            await queue.send(message, Math.max(delaySeconds ?? 0, 1 + Math.round(random())));
            return;
          }
          await queue.send(message, delaySeconds);
          if (r < delay + duplicate) {
            stats.duplicated += 1;
            await queue.send(message, delaySeconds);
          }
        },
      };
    },
  };
}
