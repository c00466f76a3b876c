/**
 * A checkpoint: what core owns, copied, and what it references without copying: the domain
 * state revision, the transcript cutoff, the children and the mailbox, the window of large tool
 * results (and, written by a compaction, the window of recent events the next model turns are
 * compiled from). Checkpoints are numbered per run and read back with
 * `GET /runs/{id}/checkpoints/{n}`; the state they reference with `GET /runs/{id}/state?rev=`.
 * docs/contracts/run-lifecycle.md, "Checkpoints". New fields are optional (growth rule).
 */
import { z } from 'zod';
import { Count } from './common.ts';
import { CompactionSection, LargeResultRef } from './compaction.ts';

export const Checkpoint = z.object({
  n: z.number().int().min(0),
  /** Why it was written: `paused`, `compaction`, `reducer` (a checkpoint effect without a reason), or the effect's reason. */
  reason: z.string(),
  /**
   * What core owns, copied: status, open requests, queued steers, usage, budgets, counters,
   * operation; and turn, unanswered_calls, inbox and last_seq (what a fork restores).
   */
  core: z.record(z.string(), z.unknown()),
  /** The domain state revision it references (read it with `GET /runs/{id}/state?rev=`). */
  state_rev: z.number().int().min(0),
  /**
   * The sort key of the item holding the domain state of `state_rev`; set by the store when
   * `state_rev` is the committed record's, absent otherwise (and for state 0).
   */
  state_at: z.string().optional(),
  /** The seq of the event that wrote it: the transcript it references ends here. */
  transcript_cutoff_seq: z.number().int().min(0),
  /** When it was written (ms since the epoch). */
  at: z.number(),
  /** The reducer's summary (a checkpoint effect's `summary`). */
  summary: z.string().optional(),
  /**
   * The children, referenced: the ids of those still live (not handed back), how many were
   * started, and where the full list is read (`GET /runs/{id}/children`).
   */
  children: z.object({ live: z.array(z.string()), started: Count, list: z.string() }).optional(),
  /** The mailbox, referenced: the resume keys the run waits on (results are delivered to them). */
  mailbox: z.object({ resume_keys: z.array(z.string()) }).optional(),
  /** The window of large tool results, referenced by event (the most recent ones, oldest first). */
  large_results: z.array(LargeResultRef).optional(),
  /** Written by a compaction: the window kept verbatim, what was left out, the sizes. */
  compaction: CompactionSection.optional(),
});
export type Checkpoint = z.infer<typeof Checkpoint>;
