/**
 * Which checkpoints a commit writes, and what each captures: every `checkpoint_written` event
 * among the commit's events calls for one, capturing what core owns from the record as it will
 * be committed and referencing (not copying) the domain state revision and the transcript
 * cutoff. Seed: agent-runs, "Checkpoints".
 */
import type { Checkpoint, RunEvent, RunRecord } from '../contracts/index.ts';

/** The checkpoints the `checkpoint_written` events of `events` call for, over `record`. */
export function checkpointsOf(record: RunRecord, events: RunEvent[]): Checkpoint[] {
  return events
    .filter((e) => e.kind === 'checkpoint_written')
    .map((e) => ({
      n: Number(e.data.checkpoint_no),
      reason: String(e.data.reason ?? 'checkpoint'),
      core: {
        status: record.status,
        open_requests: record.open_requests,
        queued_steers: record.queued_steers,
        usage: record.usage,
        budgets: record.budgets,
        counters: record.counters,
        operation: record.operation,
      },
      state_rev: Number(e.data.state_rev ?? record.state_rev),
      transcript_cutoff_seq: e.seq,
      at: e.at,
    }));
}
