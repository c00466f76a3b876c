/**
 * A checkpoint: what core owns, copied, and the domain state and transcript referenced.
 * Checkpoints are numbered per run and read back with `GET /runs/{id}/checkpoints/{n}`.
 * Seed: agent-runs, "Checkpoints".
 */
import { z } from 'zod';

export const Checkpoint = z.object({
  n: z.number().int().min(0),
  /** Why it was written: `paused`, `reducer` (a checkpoint effect without a reason), or the effect's reason. */
  reason: z.string(),
  /** What core owns, copied: status, open requests, queued steers, usage, budgets, counters, operation. */
  core: z.record(z.string(), z.unknown()),
  /** The domain state revision it references. */
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
});
export type Checkpoint = z.infer<typeof Checkpoint>;
