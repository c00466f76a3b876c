/**
 * A run's exported log: one JSON document holding what `agent-runs reducers check` replays
 * (`agent-runs runs export` writes it). Shape `raisin.run-log/1`:
 * `{format, exported_at (ms epoch), run, events, checkpoints, states}`: the run record as the
 * API returns it without `capability_hash` (the hash of its control capability), every event
 * from seq 1, every checkpoint, and each domain state revision the store still holds
 * (`{state_rev, state}`; a revision an answer replaced inside one commit was never stored).
 * docs/contracts/run-lifecycle.md, "Checkpoints", "Storage and cluster behaviour".
 */
import { z } from 'zod';
import { Budgets, Checkpoint, ReducerBinding, RunEvent, Subject } from '../../contracts/index.ts';

export const RUN_LOG_FORMAT = 'raisin.run-log/1';

/** The record fields a check reads; the rest of the record is kept as exported. */
const ExportedRun = z
  .object({
    run_id: z.string().min(1),
    status: z.string(),
    subject: Subject,
    budgets: Budgets,
    reducer: ReducerBinding.nullable(),
    origin: z.unknown().optional(),
  })
  .passthrough();

export const RunLog = z.object({
  format: z.literal(RUN_LOG_FORMAT),
  exported_at: z.number(),
  run: ExportedRun,
  events: z.array(RunEvent),
  checkpoints: z.array(Checkpoint).default([]),
  states: z.array(z.object({ state_rev: z.number().int().nonnegative(), state: z.unknown() })).default([]),
});
export type RunLog = z.infer<typeof RunLog>;

/** A document that is not a run log. `code` is stable: `invalid_run_log`. Terminal. */
export class RunLogError extends Error {
  override name = 'RunLogError';
  readonly code = 'invalid_run_log';
}

/**
 * Parses a run log (already JSON-decoded). Throws RunLogError naming the first issue's path
 * (e.g. `events.3.seq`) and `source` (a file name) when it does not have the shape, or when its
 * events do not run contiguously from seq 1.
 */
export function parseRunLog(value: unknown, source = 'run log'): RunLog {
  const parsed = RunLog.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RunLogError(
      `${source}: ${issue?.path.join('.') || '(document)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  for (const [i, e] of parsed.data.events.entries()) {
    if (e.seq !== i + 1) throw new RunLogError(`${source}: events.${i}: seq ${e.seq}, expected ${i + 1}`);
  }
  return parsed.data;
}

/** Builds the log of a run from its parts (the record without `capability_hash`). */
export function runLogOf(parts: {
  run: Record<string, unknown>;
  events: readonly RunEvent[];
  checkpoints: readonly Checkpoint[];
  states: readonly { state_rev: number; state: unknown }[];
  exportedAt: number;
}): Record<string, unknown> {
  const { capability_hash: _secret, ...run } = parts.run;
  return {
    format: RUN_LOG_FORMAT,
    exported_at: parts.exportedAt,
    run,
    events: parts.events,
    checkpoints: parts.checkpoints,
    states: parts.states,
  };
}

/** What exportRunLog reads: the client's read calls (lib/client's AgentRunsClient fits). */
export interface RunLogReader {
  getRun(runId: string): Promise<Record<string, unknown> & { state_rev: number; last_seq: number }>;
  events(runId: string, params: { after: number; limit: number }): Promise<{ events: RunEvent[] }>;
  checkpoints(runId: string): Promise<Checkpoint[]>;
  state(runId: string, options: { rev: number }): Promise<{ state_rev: number; state: unknown }>;
}

/**
 * Reads a whole run through the API (`GET /runs/{id}`, the events route page by page, the
 * checkpoints, and the state revisions the API serves: the current one and each checkpoint's)
 * and returns its `raisin.run-log/1` document. `now`: ms epoch for `exported_at`. Rejects with
 * the client's ApiError (e.g. run_not_found).
 */
export async function exportRunLog(
  reader: RunLogReader,
  runId: string,
  now: number,
): Promise<Record<string, unknown>> {
  const run = await reader.getRun(runId);
  const events: RunEvent[] = [];
  for (;;) {
    const page = await reader.events(runId, { after: events.length, limit: 1000 });
    events.push(...page.events);
    if (page.events.length === 0 || events.length >= run.last_seq) break;
  }
  const checkpoints = await reader.checkpoints(runId);
  const revs = [...new Set([run.state_rev, ...checkpoints.map((c) => c.state_rev)])].filter((r) => r > 0);
  const states = [];
  for (const rev of revs.sort((a, b) => a - b)) {
    const s = await reader.state(runId, { rev });
    states.push({ state_rev: s.state_rev, state: s.state });
  }
  return runLogOf({ run, events, checkpoints, states, exportedAt: now });
}
