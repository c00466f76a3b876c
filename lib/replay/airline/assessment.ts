/**
 * What the live airline world reports for one replayed conversation: the outputs it compared
 * with the recording, the operations it executed or answered from receipts, and the verdict it
 * recomputed. Its own module so that the replay world's port (world.ts) and the airline world
 * that fills it (live-world.ts) both name it without importing each other.
 */
import type { Verdict } from './verdict.ts';

/** What the live world counted for one conversation, and the recomputed verdict. */
export interface LiveAssessment {
  /** Recorded tool outputs compared with the live ones, and how many were identical. */
  outputs_compared: number;
  outputs_identical: number;
  /** Recorded outputs in which `province` was read as `state`. */
  outputs_key_mapped: number;
  /** Mutating operations executed (changes applied, one receipt each). */
  mutating_executed: number;
  /** Re-dispatches of a mutating operation answered from its receipt (nothing changed). */
  receipts_replayed: number;
  /** Re-dispatches of a read, executed again. */
  reads_repeated: number;
  /** Bytes of records and receipts this conversation holds over the shared base. */
  private_bytes: number;
  verdict: Verdict & {
    /** The recording ended the benchmark's episode (###STOP### or the hand-off); else it hit the step limit. */
    episode_done: boolean;
    /** The reward the benchmark gives: the verdict when the episode was done, else 0 (never judged). */
    benchmark_reward: 0 | 1;
  };
}
