/**
 * Which checkpoints a commit writes, and what each captures: every `checkpoint_written` event
 * among the commit's events calls for one, capturing what core owns from the record as it will
 * be committed (status, open requests, queued steers, usage, budgets, counters, the operation,
 * and what a fork restores: turn, unanswered calls, inbox, last seq, the latest compaction) and referencing, not
 * copying, the domain state revision, the transcript cutoff, the children and the mailbox, the
 * window of large tool results and, for a compaction, the window of recent events.
 * docs/contracts/run-lifecycle.md, "Checkpoints".
 */
import { type Checkpoint, CompactionSection, type RunEvent, type RunRecord } from '../contracts/index.ts';

/** The checkpoints the `checkpoint_written` events of `events` call for, over `record`. */
export function checkpointsOf(record: RunRecord, events: RunEvent[]): Checkpoint[] {
  return events
    .filter((e) => e.kind === 'checkpoint_written')
    .map((e) => {
      const compaction = CompactionSection.safeParse(e.data.compaction);
      const resumeKeys = record.open_requests.flatMap((r) => (r.kind === 'result' ? [r.resume_key] : []));
      return {
        n: Number(e.data.checkpoint_no),
        reason: String(e.data.reason ?? 'checkpoint'),
        core: coreOf(record),
        state_rev: Number(e.data.state_rev ?? record.state_rev),
        transcript_cutoff_seq: e.seq,
        at: e.at,
        ...(typeof e.data.summary === 'string' ? { summary: e.data.summary } : {}),
        children: {
          live: [...record.live_children],
          started: record.counters.children,
          list: `/runs/${record.run_id}/children`,
        },
        mailbox: { resume_keys: resumeKeys },
        large_results: [...(record.large_results ?? [])],
        ...(compaction.success ? { compaction: compaction.data } : {}),
      };
    });
}

/** What core owns of `record`, copied into a checkpoint. */
function coreOf(record: RunRecord): Record<string, unknown> {
  return {
    status: record.status,
    open_requests: record.open_requests,
    queued_steers: record.queued_steers,
    usage: record.usage,
    budgets: record.budgets,
    counters: record.counters,
    operation: record.operation,
    turn: record.turn,
    unanswered_calls: record.unanswered_calls,
    inbox: record.inbox,
    last_seq: record.last_seq,
    ...(record.compaction !== undefined ? { compaction: record.compaction } : {}),
    ...('pause_reason' in record ? { pause_reason: record.pause_reason } : {}),
  };
}
