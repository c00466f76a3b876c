/**
 * Compaction's shapes: the run's policy (`executor_config.compaction`), the reference to a
 * large tool result, and the record's reference to the compaction its model turns are compiled
 * from. docs/contracts/run-lifecycle.md ("one active operation at a time (a model turn, a tool
 * call, a compaction)", "Operations": compactions are replay-safe, "Checkpoints": "Compaction
 * writes one too, so a long conversation can be rebuilt from structured state rather than from a
 * prose summary").
 */
import { z } from 'zod';
import { Count } from './common.ts';

/** How many model turns a compacted transcript keeps verbatim unless the policy says otherwise. */
export const DEFAULT_KEEP_TURNS = 4;

/**
 * `executor_config.compaction` of a run (every field optional; strict, so a typo is an error
 * at create time, `validation_failed` naming `executor_config.compaction.<field>`):
 * - `max_input_tokens`: the runtime compacts before a model turn whose input, as compiled and
 *   estimated (a token per 4 characters), would exceed this many tokens. Absent: the runtime
 *   never decides to compact on its own (a reducer may still ask, with a checkpoint effect of
 *   reason `compaction`).
 * - `keep_turns`: model turns kept verbatim after the structured state (default 4).
 */
export const CompactionPolicy = z.strictObject({
  max_input_tokens: z.number().int().positive().optional(),
  keep_turns: z.number().int().min(1).max(100).optional(),
});
export type CompactionPolicy = z.infer<typeof CompactionPolicy>;

/** A tool result too large to repeat: referenced by its event, never copied. */
export const LargeResultRef = z.object({
  /** The seq of the tool_result event holding it. */
  seq: z.number().int().positive(),
  call_id: z.string().optional(),
  tool: z.string(),
  /** Length of the text the model sees (characters). */
  chars: Count,
});
export type LargeResultRef = z.infer<typeof LargeResultRef>;

/** A tool result whose model-visible text is at least this long (characters) is "large". */
export const LARGE_RESULT_CHARS = 8 * 1024;
/** How many references to large tool results a run keeps (the most recent ones). */
export const LARGE_RESULT_WINDOW = 16;

/**
 * The compaction a run's model turns are compiled from (on the record): the checkpoint that
 * holds the structured state (in `run_id`, the run itself or, for a fork, its origin), and the
 * window of recent events kept verbatim, from `window_from_seq` on. Events after
 * `transcript_cutoff_seq` were not there when it was written and are always compiled verbatim.
 */
export const CompactionRef = z.object({
  run_id: z.string().min(1),
  checkpoint_no: z.number().int().positive(),
  window_from_seq: z.number().int().positive(),
  transcript_cutoff_seq: z.number().int().positive(),
});
export type CompactionRef = z.infer<typeof CompactionRef>;

/**
 * What a compaction checkpoint adds: the window it keeps, what it leaves out, and the size of
 * the model input before it (estimated tokens of the transcript as it would have been compiled).
 */
export const CompactionSection = z.object({
  window_from_seq: z.number().int().positive(),
  /** Events before the window that the transcript no longer repeats: [1 + 1, window_from_seq - 1]. */
  omitted: z.object({ from_seq: Count, to_seq: Count, messages: Count }),
  /** Estimated input tokens of the full transcript when it was compacted. */
  tokens_before: Count,
  /** Estimated input tokens of the same turn compiled from this checkpoint. */
  tokens_after: Count,
});
export type CompactionSection = z.infer<typeof CompactionSection>;
