/**
 * The one error type of the AI SDK adapter, with stable codes. What the API itself refuses stays
 * an `ApiError` of `@agent-runs/client`. docs/architecture.md, "Conventions".
 */

/**
 * The stable codes of {@link DurableAgentError}:
 * - `budget_exceeded`: a budget of the run was reached when an operation was to begin; the run
 *   is `paused` (on_exceeded `pause`, resume it to go on) or `failed`; terminal for this process.
 * - `outcome_unknown`: a tool that is not replay-safe was started by a process that died before
 *   its result was recorded; it is not run again (the agent sees this error as the tool's error).
 * - `replay_mismatch`: the agent asked for a different operation than the run recorded at that
 *   point (its code or its model is not deterministic given the recorded results); terminal.
 * - `run_stopped`: the run was stopped, or the lease lost, while the agent ran; terminal.
 * - `run_terminal`: the run already ended and the agent asked for an operation it never recorded.
 * - `not_running`: the middleware or a wrapped tool was called outside `DurableAgent.run`.
 * - `tool_failed`: a tool threw (now or in the recorded run); the message is the tool's.
 * - `approval_denied`: a tool call that needs an approval was rejected (or its request closed
 *   unanswered); the tool did not run (the agent sees this error as the tool's error).
 */
export type DurableAgentErrorCode =
  | 'budget_exceeded'
  | 'outcome_unknown'
  | 'replay_mismatch'
  | 'run_stopped'
  | 'run_terminal'
  | 'not_running'
  | 'tool_failed'
  | 'approval_denied';

/** An error of a durable AI SDK agent: a stable `code`, the run it concerns and what else is known. */
export class DurableAgentError extends Error {
  override name = 'DurableAgentError';
  /** One of {@link DurableAgentErrorCode}. */
  readonly code: DurableAgentErrorCode;
  /** The run's id, when one was created. */
  readonly runId: string | undefined;
  /** What else is known: the run's status, the op_id, the tool, ... ({} when nothing). */
  readonly details: Record<string, unknown>;
  constructor(
    code: DurableAgentErrorCode,
    message: string,
    details: Record<string, unknown> & { runId?: string } = {},
    options?: ErrorOptions,
  ) {
    super(`${code}: ${message}`, options);
    this.code = code;
    const { runId, ...rest } = details;
    this.runId = runId;
    this.details = rest;
  }
}
