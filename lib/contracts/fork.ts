/**
 * The origin a fork's `run_started` (and record) references: a run forked from one of its
 * checkpoints (`POST /runs/{id}/fork`; the request is ForkRunInput in create-run.ts).
 * docs/contracts/run-lifecycle.md, "Checkpoints" ("Checkpoints are numbered and can be read back"),
 * "Budgets".
 */
import { z } from 'zod';
import { Count, optionalField } from './common.ts';

/**
 * Where a fork comes from (`run_started.data.origin`, `record.origin`): the run, the checkpoint,
 * the seq its shared transcript ends at (events 2..`transcript_cutoff_seq` of the fork are the
 * origin's, read through), the state revision and the sha256 (canonical JSON) of the origin's
 * state; `forked_state_digest` the state the fork started from when it was edited.
 */
export const ForkOrigin = z.object({
  run_id: z.string().min(1),
  checkpoint_no: Count,
  transcript_cutoff_seq: z.number().int().positive(),
  state_rev: Count,
  state_digest: z.string(),
  state_edited: z.boolean(),
  input_edited: z.boolean(),
  forked_state_digest: optionalField(z.string()),
});
export type ForkOrigin = z.infer<typeof ForkOrigin>;
