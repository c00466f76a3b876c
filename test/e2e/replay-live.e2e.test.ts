/**
 * The replay over the live airline world (the 14 tools executed over a private database per
 * conversation) on the local stack: conversations reproduced under chaos with every live output
 * equal to the recording and every mutating call applied once; the benchmark's verdict
 * recomputed; and a call abandoned by a crash reaching the reducer as outcome_unknown.
 */
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Chaos, SimulatedCrash } from '../../lib/replay/chaos.ts';
import { localReplayStack } from '../../lib/replay/local.ts';
import { CHAOS_LEASE_TTL_MS, runReplay, type StartReplayStack } from '../../lib/replay/run-replay.ts';
import type { ToolRegistry } from '../../lib/tools/registry.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

const FILE = join(TAU_BENCH_DIR, 'trajectories.json');
const TOOLS = join(TAU_BENCH_DIR, 'tools.json');
const DB = join(TAU_BENCH_DIR, 'db');
const quiet = () => {};

/**
 * A stack whose worker dies once, right after the first dispatch of `tool` (before its result
 * is committed), so that the sweeper takes the run over.
 */
function crashAfterFirst(tool: string): StartReplayStack {
  return (wiring) => {
    const lastTool = new Map<string, string>();
    let crashed = false;
    const chaos: Chaos = {
      stats: { kills: 0, duplicated: 0, delayed: 0, expired: 0, byPoint: {} },
      wrapQueue: (queue) => queue,
      async faults(point, runId) {
        if (point !== 'after_dispatch' || crashed || lastTool.get(runId) !== tool) return;
        crashed = true;
        chaos.stats.kills += 1;
        throw new SimulatedCrash(point);
      },
    };
    // Notes which tool each run dispatched last, around the world's own handlers.
    const watching = (registry: ToolRegistry): ToolRegistry => ({
      ...registry,
      register(definition) {
        const { handler } = definition;
        if (handler.kind !== 'module') return registry.register(definition);
        return registry.register({
          ...definition,
          handler: {
            kind: 'module',
            fn: async (args, ctx) => {
              lastTool.set(ctx.run_id, definition.name);
              return handler.fn(args, ctx);
            },
          },
        });
      },
    });
    return localReplayStack()({
      ...wiring,
      chaos,
      leaseTtlMs: CHAOS_LEASE_TTL_MS,
      registerTools: (registry) => wiring.registerTools(watching(registry)),
    });
  };
}

/** A trajectories file holding only conversation `taskId:trial`. */
async function only(taskId: number, trial: number): Promise<string> {
  const all = JSON.parse(await readFile(FILE, 'utf8')) as { task_id: number; trial: number }[];
  const dir = await mkdtemp(join(tmpdir(), 'live-one-'));
  const file = join(dir, 'trajectories.json');
  await writeFile(file, JSON.stringify(all.filter((t) => t.task_id === taskId && t.trial === trial)));
  return file;
}

describe('replay over the live airline world on the local stack', () => {
  it('reproduces 10 conversations with real tools while workers crash, messages repeat and leases expire', async () => {
    const finalDb = await mkdtemp(join(tmpdir(), 'final-db-'));
    const report = await runReplay({
      file: FILE,
      toolsFile: TOOLS,
      world: 'live',
      finalDbDir: finalDb,
      limit: 10,
      concurrency: 10,
      chaos: true,
      seed: 7,
      startStack: localReplayStack(),
      out: quiet,
    });
    expect(report.conversations.filter((c) => !c.identical)).toEqual([]);
    expect(report.summary.chaos?.kills).toBeGreaterThan(0);
    expect(report.summary.recoveries).toBeGreaterThan(0);
    const live = report.summary.live;
    expect(live?.outputs_compared).toBe(report.summary.tool_calls);
    expect(live?.outputs_identical).toBe(live?.outputs_compared);
    expect(live?.outputs_key_mapped).toBeGreaterThan(0);
    expect(live?.mutating_executed).toBe(live?.mutating_recorded);
    expect(live?.verdicts_agree).toBe(10);
    for (const c of report.conversations)
      expect(c.live?.verdict.reward).toBe(c.live?.verdict.recorded_reward);
    const files = await readdir(finalDb);
    expect(files.sort()).toEqual(report.conversations.map((c) => `${c.key.replace(':', '-')}.json`).sort());
    const first = JSON.parse(await readFile(join(finalDb, '0-0.json'), 'utf8')) as Record<string, unknown>;
    expect(Object.keys(first)).toEqual(['flights', 'reservations', 'users']);
  }, 600_000);

  it('issues a read abandoned by a crash again after outcome_unknown, and the conversation still matches', async () => {
    const report = await runReplay({
      file: await only(41, 0),
      toolsFile: TOOLS,
      databaseDir: DB,
      world: 'live',
      notReplaySafe: ['get_reservation_details'],
      startStack: crashAfterFirst('get_reservation_details'),
      out: quiet,
    });
    const [c] = report.conversations;
    expect(c?.first_difference ?? null).toBeNull();
    expect(c).toMatchObject({ identical: true, outcome_unknown: 1, recoveries: 1 });
    expect(c?.live).toMatchObject({ mutating_executed: 1, verdict: { agrees: true } });
  }, 300_000);

  it('applies a mutating call abandoned by a crash once and tells the model its outcome is unknown, which the recording cannot match', async () => {
    const finalDb = await mkdtemp(join(tmpdir(), 'final-db-'));
    const report = await runReplay({
      finalDbDir: finalDb,
      file: await only(41, 0),
      toolsFile: TOOLS,
      databaseDir: DB,
      world: 'live',
      notReplaySafe: ['cancel_reservation'],
      startStack: crashAfterFirst('cancel_reservation'),
      out: quiet,
    });
    const [c] = report.conversations;
    expect(c).toMatchObject({ identical: false, outcome_unknown: 1, status: 'failed' });
    expect(c?.first_difference?.source).toBe('model');
    expect(JSON.stringify(c?.first_difference?.got)).toContain('its outcome is unknown');
    // Executed once before the crash, never again: the cancellation is in the database once.
    expect(c?.live).toMatchObject({ mutating_executed: 1, receipts_replayed: 0 });
    type Db = { reservations: Record<string, { status?: string; payment_history: unknown[] }> };
    const final = JSON.parse(await readFile(join(finalDb, '41-0.json'), 'utf8')) as Db;
    const before = JSON.parse(await readFile(join(DB, 'reservations.json'), 'utf8')) as Db['reservations'];
    const cancelled = Object.entries(final.reservations).filter(([, r]) => r.status === 'cancelled');
    expect(cancelled).toHaveLength(1);
    const [id = '', record] = cancelled[0] ?? [];
    expect(record?.payment_history).toHaveLength(2 * (before[id]?.payment_history.length ?? 0));
  }, 300_000);
});
