/**
 * The body of a create request (`POST /runs`). docs/contracts/run-lifecycle.md, "Subject, principal
 * and admission", "Server-driven and client-driven runs" (a run without a reducer is
 * client-driven).
 */
import { z } from 'zod';
import { cleanId, refuseControlChars } from './clean-text.ts';
import { CallerSubject, Count } from './common.ts';
import { jsonBytes, MAX_CONTEXT_BYTES, overLimitMessage } from './limits.ts';
import { Budgets, OnExceeded, OnProviderOutage, ReducerBinding, RiskTier } from './run.ts';

/**
 * How the runtime executes the run's operations: an open object; `model_turn_function`, when
 * given, is the function path of its model turns (a printed identifier: a string, cleanId).
 */
const ExecutorConfig = z.looseObject({ model_turn_function: cleanId(1024).optional() }).default({});

/** A subject bounded in length and free of control and bidirectional characters (common.ts CallerSubject). */
const CleanSubject = CallerSubject;

/**
 * What `POST /runs` takes: the `subject` (`{workspace, path, node_id?}`) the run works on; the
 * `reducer` (`{function_path, handler?}`) that drives it, or null for a client-driven run; the
 * first `input`; `objective` and `context` (together at most 160 KiB as JSON, `too_large`);
 * `budgets` (limits such as `max_turns`, `max_total_tokens`, `max_wall_ms` in ms) and what
 * happens when one is reached (`on_exceeded`, default `pause`); `create_key` (1..256 chars) to
 * make a retried create answer the same run. Unknown keys are refused (`validation_failed`).
 */
export const CreateRunInput = z
  .strictObject({
    /** Strict here: an unknown key in a client's subject is a typo, never silently kept. Bounded; no control characters. */
    subject: CleanSubject,
    /** No control characters in the function path or the handler. */
    reducer: ReducerBinding.pick({ function_path: true, handler: true })
      .extend({ function_path: cleanId(1024), handler: cleanId(256).optional() })
      .nullable()
      .optional(),
    /** The run's first input (run_started.data.input); null when absent. */
    input: z.unknown().default(null),
    /** No control characters but tab and newline. */
    objective: z
      .string()
      .max(10_000)
      .superRefine((text, ctx) => refuseControlChars(ctx, [], text, '\t\n'))
      .optional(),
    context: z.unknown().optional(),
    budgets: Budgets.default({}),
    on_exceeded: OnExceeded.default('pause'),
    on_provider_outage: OnProviderOutage.default('pause'),
    as_agent: cleanId(256).optional(),
    on_behalf_of: cleanId(256).optional(),
    create_key: cleanId(256).optional(),
    executor_config: ExecutorConfig,
    /** The tier asked for; the deployment's floor applies when absent or lower. */
    risk_tier: RiskTier.optional(),
  })
  .superRefine((input, ctx) => {
    // Checked here, not when the reducer first reads it: a run that cannot start is never created.
    const bytes = jsonBytes(input.context) + jsonBytes(input.objective);
    if (bytes > MAX_CONTEXT_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: ['context'],
        params: { code: 'too_large', limit_bytes: MAX_CONTEXT_BYTES, bytes },
        message: overLimitMessage('context and objective', MAX_CONTEXT_BYTES, bytes),
      });
    }
  });
export type CreateRunInput = z.input<typeof CreateRunInput>;

/**
 * The body of `POST /runs/{id}/fork`. `checkpoint`: the number of the checkpoint to fork from.
 * `state`: the domain state to start from instead of the checkpoint's (at most 256 KiB as
 * canonical JSON). `input`: the input of the fork's run_started instead of the original's (the
 * first user message its model turns see). `budgets` / `on_exceeded`: the fork's (default: the
 * checkpoint's budgets and the original's on_exceeded; usage always starts at zero). `subject`:
 * default the original's (refused `subject_taken` while another run lives on it). `create_key`:
 * as for a create (scoped to the caller, bound to this request). Admission is a create's: the
 * caller's quotas, the original's risk tier raised to the deployment's floor.
 */
export const ForkRunInput = z.strictObject({
  checkpoint: Count,
  state: z.unknown().optional(),
  input: z.unknown().optional(),
  budgets: Budgets.optional(),
  on_exceeded: OnExceeded.optional(),
  subject: CleanSubject.optional(),
  create_key: cleanId(256).optional(),
});
export type ForkRunInput = z.input<typeof ForkRunInput>;
