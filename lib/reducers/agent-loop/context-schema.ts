/**
 * The context of the default agent loop (`run_started.data.context`): the one description of its
 * shape. Every context type is derived from it. Callers that create runs bound to the agent loop
 * validate with `AgentLoopContext` (strict: a bad field is an error, defaults filled in). The
 * reducer reads the same shape leniently, through the JSON Schema derived from this one
 * (context-json-schema.ts, inlined into the artifact by the build): a bad field falls back to its
 * default (context.ts says how). The artifact never imports this module's values, so zod stays
 * out of the sandbox. docs/contracts/run-lifecycle.md, "Where runs are used";
 * docs/contracts/reducer.md, "Effects" (the call_tool flags).
 *
 * Property order is the order the reducer's state keeps them in.
 */
import { z } from 'zod';
import { JsonObject } from '../../contracts/index.ts';

/** How a hand-off tool ends the run (the `complete` outcomes). */
export const AgentLoopOutcome = z.enum(['succeeded', 'partial', 'blocked']);

/** One tool of the context: what the model is offered plus the flags call_tool carries. */
export const AgentLoopToolEntry = z.object({
  /** The name the model calls the tool by; unique within the context (the first one counts). */
  name: z.string().min(1),
  /** `domain` tools are offered as such; every call, function or domain, runs as call_tool. */
  kind: z.enum(['function', 'domain']).default('function'),
  /** JSON Schema of the arguments, offered to the model as is. */
  schema: JsonObject.default({ type: 'object', properties: {} }),
  /** True by default: a tool not declared read-only may change something. */
  mutating: z.boolean().default(true),
  /**
   * Omitted: `!mutating` (a mutating tool is replay-safe only when it declares that it keys its
   * writes on the operation id).
   */
  replay_safe: z.boolean().optional(),
  description: z.string().optional(),
  /** What call_tool names (`tool`); omitted: the tool's name. */
  function_path: z.string().min(1).optional(),
  /** call_tool's timeout, milliseconds. */
  timeout_ms: z.number().int().positive().optional(),
  /** false: a steer or a stop does not interrupt a running call (the default is true). */
  interruptible: z.boolean().optional(),
  /** A succeeded result of this tool ends the run with complete{outcome: ends_run} (a hand-off). */
  ends_run: AgentLoopOutcome.optional(),
});

/** `run_started.data.context` of a run bound to the agent loop; every field optional. */
export const AgentLoopContext = z.object({
  /** conversation: a text reply asks the user; task: a text reply completes the run. */
  mode: z.enum(['conversation', 'task']).default('conversation'),
  /** The same call (name + canonical args) this many times in a row is a loop. */
  loop_limit: z.number().int().min(2).default(3),
  /** Re-issues of a failed operation after its first attempt, per call and per model turn. */
  max_retries: z.number().int().min(0).max(10).default(2),
  tools: z.array(AgentLoopToolEntry).optional(),
  /** The instructions of every model turn. */
  instructions: z.string().optional(),
  /**
   * Ask for a compaction (a checkpoint effect of reason `compaction`) before the next model turn
   * once a model turn reports this many input tokens (its usage.input_tokens) or more.
   */
  compact_above_tokens: z.number().int().positive().optional(),
  /**
   * Off unless set. `track`: the model is offered the reserved domain tools `propose_plan`
   * ({items: [{key, title}]}, replaces the plan) and `update_plan` ({key, status, note?}), which
   * the reducer answers itself; the projection shows the plan's items with their statuses.
   * `approve`: as `track`, and a proposed plan needs an approval (request_approval, subject kind
   * `plan`, digest sha256:rfc8785 over the plan's keys and titles) before any other tool runs; the
   * reducer proceeds only on an approval quoting that digest, and a changed plan needs a new one.
   */
  plan: z.enum(['track', 'approve']).optional(),
  /**
   * Off unless set: the no-progress guard. After this many model turns in a row that each come
   * without progress since the turn before (a new succeeded tool result, a plan item done, or
   * an answer from the user) a turn that asks for tools ends the run: capability_gap, then
   * complete{blocked}.
   */
  no_progress_turns: z.number().int().min(1).optional(),
  /**
   * Off unless set (or verifier_tool is set): verified completion. A claim of success (a task's
   * final reply, or a hand-off tool with ends_run `succeeded`) completes `succeeded` only with
   * evidence: ok evidence entries of trusted tool envelopes covering every primary artifact the
   * run's tools reported, or a verifier_tool result that proves it. Without it the run completes
   * `partial` (`partial`) or asks the user (`ask_user`, choices accept | continue), and the
   * summary or question says why.
   */
  verify_completion: z.enum(['partial', 'ask_user']).optional(),
  /**
   * The name of a tool of `tools` that re-reads the authoritative system to check a claim of
   * success: called (without a model call) with {summary, artifacts} when the evidence so far
   * does not cover the claim; its succeeded envelope with evidence entries all ok proves it.
   * Turns verified completion on (`partial` unless verify_completion says otherwise).
   */
  verifier_tool: z.string().min(1).optional(),
});

/** A context as a caller writes it (defaults may be left out). */
export type AgentLoopContext = z.input<typeof AgentLoopContext>;
/** One tool entry as a caller writes it. */
export type AgentLoopToolEntry = z.input<typeof AgentLoopToolEntry>;
/** A context with every default filled in: what the reducer runs with. */
export type AgentLoopSettings = z.output<typeof AgentLoopContext>;
/** One tool entry with its defaults filled in. */
export type AgentLoopToolSettings = z.output<typeof AgentLoopToolEntry>;
export type AgentLoopOutcome = z.infer<typeof AgentLoopOutcome>;
