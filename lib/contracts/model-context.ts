/**
 * The model-neutral context the context compiler builds from a run's event log for one model
 * turn: messages plus the manifest of what it included. Model-turn functions translate these
 * messages into their provider's format. docs/architecture.md, "The seams of a step" ("The context
 * compiler ... Output includes both the model payload and a manifest of included artifacts").
 */
import { z } from 'zod';

export const ContextToolCall = z.object({
  call_id: z.string(),
  name: z.string(),
  args: z.record(z.string(), z.unknown()),
});

/** One model-neutral message, compiled from the event log. */
export const ContextMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(ContextToolCall),
  }),
  z.object({ role: z.literal('tool'), call_id: z.string(), name: z.string(), content: z.string() }),
]);
export type ContextMessage = z.infer<typeof ContextMessage>;

/** What the compiler included: the seqs and kinds of the events used, and the cutoff. */
export const ContextManifest = z.object({
  from_seq: z.number().int(),
  to_seq: z.number().int(),
  included: z.array(z.object({ seq: z.number().int(), kind: z.string(), role: z.string() })),
  /**
   * The events of the window that could have become a message and did not, with why:
   * `waiting` (a parked call's result, not its answer), `reducer_call` (a tool_result of a call
   * the reducer made itself, not the model), `superseded` (a failed attempt of a call later
   * retried), `not_a_call` (a failure of no model call), `no_text` (input without user text),
   * `not_an_answer` (an approval's resolution). Events before `from_seq` were cut by the
   * transcript window (or by the compaction `compacted` names).
   */
  excluded: z
    .array(
      z.object({
        seq: z.number().int(),
        kind: z.string(),
        reason: z.enum(['waiting', 'reducer_call', 'superseded', 'not_a_call', 'no_text', 'not_an_answer']),
      }),
    )
    .optional(),
  /**
   * The tool calls that had no result in the window and were given a synthetic one (a tool
   * message labelled as the runtime's), with why: `not_run` (cancelled before dispatch),
   * `cancelled`, `outcome_unknown` (its wait closed), `stopped`, `no_result`. Absent when none.
   */
  synthesized: z
    .array(
      z.object({
        call_id: z.string(),
        reason: z.enum(['not_run', 'cancelled', 'outcome_unknown', 'stopped', 'no_result']),
      }),
    )
    .optional(),
  /**
   * Set when the transcript was compiled from a compaction checkpoint: the run holding it, its
   * number, and the window of events kept verbatim (from `window_from_seq`); events 2 to
   * `window_from_seq - 1` are represented by the structured state message instead.
   */
  compacted: z
    .object({ run_id: z.string(), checkpoint_no: z.number().int(), window_from_seq: z.number().int() })
    .optional(),
});
export type ContextManifest = z.infer<typeof ContextManifest>;

/**
 * The manifest as a `model_turn_completed` event keeps it (`data.manifest`): `included` as
 * inclusive `[from, to]` seq ranges (the events' kinds are the log's); the rest as compiled.
 */
export const StoredContextManifest = ContextManifest.extend({
  included: z.array(z.tuple([z.number().int(), z.number().int()])),
});
export type StoredContextManifest = z.infer<typeof StoredContextManifest>;

export const CompiledContext = z.object({
  messages: z.array(ContextMessage),
  manifest: ContextManifest,
});
export type CompiledContext = z.infer<typeof CompiledContext>;
