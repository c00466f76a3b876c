import { describe, expect, it } from 'vitest';
import { admissionFromEnv } from '../../lib/config.ts';
import { admit, quotaWindowOf, riskTierOf } from '../../lib/core/admission.ts';

const at = 1_700_000_010_000; // 30 s into a minute
const none = { held_slots: [], window_count: 0 };

describe('admission', () => {
  it('admits anything when the deployment sets no limits, at the standard tier', () => {
    expect(admit({}, { held_slots: [0, 1, 2], window_count: 99 }, undefined, at)).toEqual({
      ok: true,
      risk_tier: 'standard',
    });
  });

  it('takes the lowest free live-run slot and refuses once every slot is held', () => {
    const config = { max_live_runs: 3 };
    expect(admit(config, { held_slots: [0, 2], window_count: 0 }, undefined, at)).toMatchObject({
      ok: true,
      slot: 1,
    });
    expect(admit(config, { held_slots: [0, 1, 2], window_count: 0 }, undefined, at)).toMatchObject({
      ok: false,
      code: 'quota_exceeded',
      limit: 'max_live_runs',
      max: 3,
    });
  });

  it('counts creates per minute and says when the window ends', () => {
    const config = { max_creates_per_minute: 2 };
    expect(admit(config, { held_slots: [], window_count: 1 }, undefined, at)).toMatchObject({
      ok: true,
      window: { start: quotaWindowOf(at), count: 2 },
    });
    expect(admit(config, { held_slots: [], window_count: 2 }, undefined, at)).toMatchObject({
      ok: false,
      limit: 'max_creates_per_minute',
      retry_after_s: 30,
    });
  });

  it('lets exempt callers past the quotas, not past the risk tier floor', () => {
    const config = { max_live_runs: 1, risk_tier_floor: 'high' as const };
    expect(admit(config, { held_slots: [0], window_count: 0 }, 'low', at, true)).toEqual({
      ok: true,
      risk_tier: 'high',
    });
  });

  it('raises a requested tier to the floor and keeps a higher one', () => {
    expect(riskTierOf('low')).toBe('standard');
    expect(riskTierOf('high')).toBe('high');
    expect(riskTierOf('low', 'low')).toBe('low');
    expect(riskTierOf(undefined, 'high')).toBe('high');
    expect(admit({}, none, 'high', at)).toMatchObject({ risk_tier: 'high' });
  });

  it('reads the settings from the environment and names a bad variable', () => {
    expect(
      admissionFromEnv({
        AGENT_RUNS_MAX_LIVE_RUNS: '5',
        AGENT_RUNS_MAX_CREATES_PER_MINUTE: '',
        AGENT_RUNS_RISK_TIER_FLOOR: 'high',
      }),
    ).toEqual({ max_live_runs: 5, risk_tier_floor: 'high' });
    expect(() => admissionFromEnv({ AGENT_RUNS_MAX_LIVE_RUNS: 'many' })).toThrow(/AGENT_RUNS_MAX_LIVE_RUNS/);
    expect(() => admissionFromEnv({ AGENT_RUNS_RISK_TIER_FLOOR: 'extreme' })).toThrow(
      /AGENT_RUNS_RISK_TIER_FLOOR/,
    );
    expect(
      admissionFromEnv({ AGENT_RUNS_MAX_CHILDREN_PER_RUN: '8', AGENT_RUNS_MAX_TREE_DEPTH: '2' }),
    ).toEqual({ max_children_per_run: 8, max_tree_depth: 2 });
    expect(() => admissionFromEnv({ AGENT_RUNS_MAX_TREE_DEPTH: '0' })).toThrow(/AGENT_RUNS_MAX_TREE_DEPTH/);
  });
});
