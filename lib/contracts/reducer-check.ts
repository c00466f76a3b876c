/**
 * The answers of the reducer-upgrade routes and of time travel, shared by the HTTP layer (which
 * names them for OpenAPI, lib/http/reducer-schemas.ts) and the client (which parses with them):
 * `POST /admin/reducers/check`, `POST /admin/reducers/upgrade` and `GET /runs/{id}/at/{seq}`.
 * Browser-safe (zod only).
 */
import { z } from 'zod';

const CheckedArtifact = z.object({ kind: z.enum(['js', 'wasm', 'star']), hash: z.string() });

/** `POST /admin/reducers/check`: per run identical, diverged or skipped, and the totals. */
export const ReducerCheckReport = z.object({
  artifact: CheckedArtifact,
  runs: z.array(
    z
      .object({
        run_id: z.string(),
        result: z.enum(['identical', 'diverged', 'skipped']),
        deliveries: z.number(),
      })
      .passthrough()
      .describe(
        'identical; diverged with event_seq, answer_seq, old, new, diff (and reason); skipped with reason (a fork, no reducer, time budget spent).',
      ),
  ),
  totals: z.object({
    runs: z.number(),
    identical: z.number(),
    diverged: z.number(),
    skipped: z.number(),
    deliveries: z.number(),
  }),
  truncated: z.boolean().describe('More runs are bound to function_path than limit.'),
});
export type ReducerCheckReport = z.infer<typeof ReducerCheckReport>;

/** `POST /admin/reducers/upgrade`: per run upgraded (the resume's seq) or refused (why). */
export const ReducerUpgradeReport = z.object({
  artifact: CheckedArtifact,
  runs: z.array(
    z
      .object({ run_id: z.string(), result: z.enum(['upgraded', 'refused']) })
      .passthrough()
      .describe(
        'upgraded with seq (the resume); refused with reason (diverged with event_seq and diff, skipped: ..., or the resume rejection reason).',
      ),
  ),
  truncated: z.boolean(),
});
export type ReducerUpgradeReport = z.infer<typeof ReducerUpgradeReport>;

/** `GET /runs/{id}/at/{seq}`: a run as it stood at one seq of its log (time travel). */
export const RunAtSeq = z
  .object({
    run_id: z.string(),
    seq: z.number().int(),
    current_seq: z.number().int(),
    status: z.string(),
    turn: z.number().int(),
    last_seq: z.number().int(),
    usage: z.record(z.string(), z.unknown()),
    open_requests: z.array(z.record(z.string(), z.unknown())),
    unanswered_calls: z.array(z.string()),
    state_rev: z.number().int(),
    state: z.unknown().describe('The domain state of state_rev (null when state_known is false).'),
    state_known: z.boolean(),
    projection: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('The effective projection then; from the pinned reducer answering again (projection_known).'),
    projection_known: z.boolean(),
    unknown_reason: z.string().optional(),
    checkpoint: z
      .object({ n: z.number().int(), reason: z.string(), state_rev: z.number().int() })
      .nullable()
      .describe('The last checkpoint written at or before seq.'),
  })
  .passthrough();
export type RunAtSeq = z.infer<typeof RunAtSeq>;
