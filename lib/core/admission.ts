/**
 * Admission limits of a deployment, decided before any model call: how many live runs one
 * principal may hold, how many runs it may create per minute, and the lowest risk tier a run
 * may have. Pure (the environment is read by lib/config.ts admissionFromEnv): the engine reads what the principal holds now and commits what this decides in
 * the run's create transaction. docs/architecture.md, "The seams of a step" (admission:
 * tenant quotas, abuse controls and an explicit risk tier).
 */
import { RISK_TIERS, type RiskTier } from '../contracts/index.ts';
import type { WorkspaceMode } from './workspaces.ts';

/**
 * A deployment's admission settings. Every limit is optional: absent means unlimited, except the
 * two tree bounds, whose absence means their defaults (16 children per run, depth 4).
 */
export interface AdmissionConfig {
  /** Most runs one principal may have that have not ended (queued, running, waiting, paused, cancelling). */
  max_live_runs?: number;
  /** Most runs one principal may create in one clock minute (fixed window, UTC minute). */
  max_creates_per_minute?: number;
  /** The lowest risk tier a run may have (default `standard`). */
  risk_tier_floor?: RiskTier;
  /** A workspace nobody was granted: refused (`owned`, the default) or open to every caller (`open`, a migration opt-in). */
  workspaces?: WorkspaceMode;
  /**
   * Most children one run may start (default 16, core/delegation.ts); past it a delegation is
   * refused `child_limit_reached` as its tool result. Applies whatever the run's budgets say
   * (`max_children` can only be tighter).
   */
  max_children_per_run?: number;
  /**
   * Deepest a tree may grow (the root is 0; default 4); a delegation whose child would be deeper
   * is refused `tree_depth_exceeded` as its tool result. Applies whatever `max_depth` says.
   */
  max_tree_depth?: number;
  /**
   * Queued steers one run may hold (default 32, core DEFAULT_MAX_QUEUED_STEERS); one more is
   * rejected `steer_queue_full` (a control_rejected event). Each lives in the run record until
   * the run consumes it at its next boundary.
   */
  max_queued_steers?: number;
}

/** What the principal holds now, as the store read it (strongly consistent). */
export interface QuotaUsage {
  /** The live-run slots its live runs hold (0-based indexes). */
  held_slots: number[];
  /** Runs it created in the current window. */
  window_count: number;
}

/** The window (ms epoch of its start) that `now` falls in. */
export const quotaWindowOf = (now: number): number => now - (now % 60_000);

export type Admission =
  | {
      ok: true;
      risk_tier: RiskTier;
      /** The live-run slot to take, when live runs are limited. */
      slot?: number;
      /** The window's count after this create, when the creation rate is limited. */
      window?: { start: number; count: number };
    }
  | {
      ok: false;
      code: 'quota_exceeded';
      message: string;
      limit: 'max_live_runs' | 'max_creates_per_minute';
      max: number;
      /** Seconds until a retry can succeed (the window's end); absent for the live-run limit. */
      retry_after_s?: number;
    };

/** The tier of a new run: the one asked for, raised to the deployment's floor. */
export function riskTierOf(requested: RiskTier | undefined, floor: RiskTier = 'standard'): RiskTier {
  const asked = requested ?? floor;
  return RISK_TIERS.indexOf(asked) >= RISK_TIERS.indexOf(floor) ? asked : floor;
}

/**
 * Admits one create by a principal that holds `usage`, or refuses it with `quota_exceeded`
 * naming the limit. `exempt` (system callers, the runtime's own child runs) skips the quotas but
 * not the risk tier. The slot taken is the free one `spread` picks (0: the lowest).
 */
export function admit(
  config: AdmissionConfig,
  usage: QuotaUsage,
  requested: RiskTier | undefined,
  now: number,
  exempt = false,
  spread = 0,
): Admission {
  const risk_tier = riskTierOf(requested, config.risk_tier_floor);
  if (exempt) return { ok: true, risk_tier };
  const maxLive = config.max_live_runs;
  if (maxLive !== undefined && usage.held_slots.length >= maxLive) {
    return {
      ok: false,
      code: 'quota_exceeded',
      message: `the principal already has ${usage.held_slots.length} live runs (limit ${maxLive}); stop or finish one first`,
      limit: 'max_live_runs',
      max: maxLive,
    };
  }
  const maxRate = config.max_creates_per_minute;
  const start = quotaWindowOf(now);
  if (maxRate !== undefined && usage.window_count >= maxRate) {
    return {
      ok: false,
      code: 'quota_exceeded',
      message: `the principal created ${usage.window_count} runs this minute (limit ${maxRate})`,
      limit: 'max_creates_per_minute',
      max: maxRate,
      retry_after_s: Math.max(1, Math.ceil((start + 60_000 - now) / 1000)),
    };
  }
  // Concurrent creates of one principal each take a free slot; spreading them over the free
  // slots (by `spread`, any integer) makes two of them rarely claim the same one.
  const held = new Set(usage.held_slots);
  const free: number[] = [];
  for (let n = 0; maxLive !== undefined && n < maxLive; n += 1) if (!held.has(n)) free.push(n);
  const slot = free[Math.abs(spread) % Math.max(free.length, 1)] ?? 0;
  return {
    ok: true,
    risk_tier,
    ...(maxLive !== undefined ? { slot } : {}),
    ...(maxRate !== undefined ? { window: { start, count: usage.window_count + 1 } } : {}),
  };
}
