/**
 * Delegation: an agent's sub-task is a child run. A reducer delegates with an ordinary
 * `call_tool` effect on the reserved tool {@link DELEGATE_TOOL}; core executes it itself: it
 * creates the child run (keyed on the operation id, so a re-dispatch finds the same child) and
 * answers `waiting` with `resume_key: "child:{child_run_id}"`. When the child ends, its outcome
 * comes back to the parent as that tool call's `tool_result` (the hand-back, owed by the child
 * until delivered). docs/contracts/run-lifecycle.md ("child runs with a durable mailbox",
 * "Budgets": max_children, max_live_children, max_depth; sweeper: "delivers owed child hand-backs,
 * stops children of ended parents"); docs/contracts/tool-result.md, "The tool-result envelope"
 * (resume_key `child:{run_id}` for a child run).
 */
import { z } from 'zod';
import { CallerSubject, JsonObject } from './common.ts';
import { Budgets, OnExceeded, RunScope, TreeAmounts } from './run.ts';

/** The reserved tool path a reducer calls to start a child run. */
export const DELEGATE_TOOL = '/lib/raisin/agent-runs/delegate';

/**
 * The codes of a delegation refused before anything was written (its args, the subject its
 * child would hold, the reducer it names, the deployment's bounds, the root principal's live-run
 * quota, the parent's remaining tree budget: `child_budget_exceeded:<which>` too): the parent's
 * `counters.children` does not count it, and no child, create key or quota slot exists for it.
 * Answered as a `failed` tool result whose first diagnostic has the code.
 */
export const DELEGATION_REFUSALS = [
  'quota_exceeded',
  'child_limit_reached',
  'tree_depth_exceeded',
  'scope_widened',
  'delegate_args_invalid',
  'delegate_reducer_missing',
  'delegate_subject_too_long',
  'reducer_not_found',
  'subject_taken',
] as const;
/** The prefix of the refusal of a child the parent's remaining tree budget cannot cover. */
export const CHILD_BUDGET_REFUSAL_PREFIX = 'child_budget_exceeded:';
export type DelegationRefusal = (typeof DELEGATION_REFUSALS)[number];

/** The resume key a parent waits on for its child `runId`. */
export function childResumeKey(runId: string): string {
  return `child:${runId}`;
}

/** The child run id named by a `child:{run_id}` resume key, or null for any other key. */
export function childOfResumeKey(key: string): string | null {
  return key.startsWith('child:') && key.length > 'child:'.length ? key.slice('child:'.length) : null;
}

/**
 * The delegate tool's args. Every field is optional: the child inherits the parent's reducer,
 * executor_config, on_exceeded and run context, and gets the subject `{parent workspace, parent path +
 * "/children/{n}"}` (n: 1 for the parent's first delegation, 2 for the next, ...). `max_depth` is inherited as a ceiling:
 * the child's own max_depth is the smaller of the two, and it cannot be raised on the child. A
 * given `subject` must stay in the parent's workspace and is bounded as a create's (common.ts
 * CallerSubject). Unknown keys are refused.
 */
export const DelegateArgs = z.strictObject({
  subject: CallerSubject.optional(),
  reducer: z.object({ function_path: z.string().min(1), handler: z.string().optional() }).optional(),
  input: z.unknown().optional(),
  objective: z.string().max(10_000).optional(),
  context: z.unknown().optional(),
  budgets: Budgets.optional(),
  on_exceeded: OnExceeded.optional(),
  executor_config: JsonObject.optional(),
  /**
   * false: the call answers `succeeded` with `{child_run_id}` at once (a background child, so the
   * parent can start more children or steer them); the child's hand-back then reaches the parent
   * as a `user_input` `{from_child, hand_back}`. Default true: the call waits for the hand-back.
   */
  wait: z.boolean().optional(),
  /**
   * What the child must return, checked at its hand-back: `schema`, a JSON Schema for the
   * child's result `{outcome, summary, artifacts}`; `evidence`, evidence kinds that some tool
   * envelope of the child must have reported with `ok: true`. A child that completed without
   * meeting it hands back `blocked` with a `handback_unchecked` diagnostic naming what is missing.
   */
  returns: z
    .strictObject({ schema: JsonObject.optional(), evidence: z.array(z.string().min(1)).max(32).optional() })
    .optional(),
  /**
   * Narrows what the child (and its own children) may call and write to a subset of the
   * parent's: `tools` (tool names) and `writable` (subjects, each with the paths below it). An
   * absent field inherits the parent's. A list the parent's scope does not cover is refused
   * `scope_widened` (a failed tool result; nothing is created). See {@link RunScope}.
   */
  scope: RunScope.optional(),
});
export type DelegateArgs = z.infer<typeof DelegateArgs>;

/** The payload of a delegate call's results: `waiting` names the child; the hand-back adds its end. */
export const HandBackPayload = z.object({
  child_run_id: z.string(),
  status: z.enum(['completed', 'failed', 'stopped']),
  outcome: z.enum(['succeeded', 'partial', 'blocked']).optional(),
  summary: z.string().optional(),
  terminal_reason: z.string(),
  usage: z.record(z.string(), z.number()),
  /** What the child used with its own descendants, per tree limit: what is charged to the parent. */
  tree_usage: TreeAmounts.optional(),
  /** The child's result as its `returns` checked it (present when the delegation stated `returns`). */
  result: z.unknown().optional(),
});
export type HandBackPayload = z.infer<typeof HandBackPayload>;

/** The payload of a delegate call that created its child: the child and what it reserved of the parent. */
export const ChildStartedPayload = z.object({
  child_run_id: z.string(),
  reserved: TreeAmounts.default({}),
  wait: z.boolean().default(true),
});
export type ChildStartedPayload = z.infer<typeof ChildStartedPayload>;

/** The reserved tool a reducer calls to send a message along a delegation link (the mailbox). */
export const DELEGATE_MESSAGE_TOOL = '/lib/raisin/agent-runs/delegate/message';

/**
 * The delegate-message tool's args: `child_run_id` names a child of the calling run (the child
 * sees `text` as a `user_input`); without it the message goes to the calling run's parent (which
 * sees a `user_input` `{from_child, text}`). Unknown keys are refused.
 */
export const DelegateMessageArgs = z.strictObject({
  child_run_id: z.string().min(1).optional(),
  text: z.string().min(1).max(10_000),
});
export type DelegateMessageArgs = z.infer<typeof DelegateMessageArgs>;
