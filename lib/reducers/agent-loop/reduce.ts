/**
 * The default agent reducer, `/lib/raisin/ai/agent-run-reducer`: the model loop a conversation
 * (or a flow's ai_agent step) runs on. These TypeScript modules are bundled by
 * lib/reducers/build.ts (`npm run build:reducers`) into lib/reducers/agent-loop.js, one
 * self-contained ES module the QuickJS sandbox evaluates under the deterministic execution
 * policy: no imports, no host calls, no clock, no randomness. It exports `reduce(request)`: a
 * `raisin.agent-run.reducer/1` request in, the response out. docs/contracts/reducer.md
 * ("Validation", "Writing a deterministic reducer", "Projection"); docs/contracts/run-lifecycle.md
 * ("Where runs are used").
 *
 * Where the rest is described: the context (run_started.data.context) in context-schema.ts and
 * how a bad one is read in context.ts; the state in state.ts; running a turn's calls in
 * calls.ts; loop detection in loop-detection.ts; the projection in projection.ts. Three opt-in
 * checks, each off unless its context field is set (so a run without them behaves as below):
 * the plan tools and plan approval (context.plan) in plan.ts, the no-progress guard
 * (context.no_progress_turns) in progress.ts, verified completion (context.verify_completion,
 * context.verifier_tool) in verification.ts.
 *
 * The loop:
 *   run_started → request_model_turn {tools_offered, instructions, tool_results: [],
 *     context: {transcript: {from_seq: 1, to_seq: <cutoff_seq>}, mode, objective?}}.
 *   Every request_model_turn is preceded by a checkpoint {reason: 'compaction'} effect when the
 *     last model turn reported usage.input_tokens >= context.compact_above_tokens (core then runs
 *     a compaction before that turn; without the setting the loop never asks for one).
 *   model_turn_completed with tool calls → call_tool for the first call (for_call_id = call_id),
 *     then one call per tool_result, in order; when every call of the turn is answered →
 *     request_model_turn whose tool_results lists every call of that turn:
 *     {call_id, name, status, seq} for a call answered by a tool_result event (seq = that event),
 *     {call_id, name, status, content} for a call the reducer answered itself (refused, error,
 *     outcome_unknown, not_executed); `content` is the text the model should see.
 *   model_turn_completed without tool calls → conversation: ask_user {question: the text};
 *     task: complete {succeeded (partial when finish_reason is 'length'), summary: the text}.
 *     An empty reply (no text, no calls) is retried like a retryable failure, then fails the run
 *     with fail{code: 'empty_model_reply'}.
 *   tool_result of a tool with ends_run, succeeded → complete{outcome: ends_run} (a hand-off).
 *   request_resolved input (the answer to our ask_user) → request_model_turn.
 *   request_resolved approval rejected (the pending call) → the call is answered 'refused';
 *     approved → nothing changes (core runs the call; its tool_result follows).
 *   request_closed expired: our ask_user → complete{blocked}; the pending call's approval →
 *     answered 'refused'; the pending call's external result → answered 'outcome_unknown'.
 *     Other reasons (withdrawn, cancelled) change nothing.
 *   user_input (a steer): when requests are open (run.open_requests) and the reducer waits for
 *     the user or for an approval/external result, every open request is withdrawn, calls not
 *     run are answered 'not_executed', and a model turn is requested. While a model turn is
 *     awaited (core delivers steers only between operations, so it has not started) the turn is
 *     requested again with the transcript cut at the steer: core replaces the pending one.
 *     While a tool call is awaited the steer is recorded and the next model turn sees it; a
 *     text-only reply that predates the steer is followed by a new model turn, not ask_user.
 *   operation_failed (the awaited effect): a model turn is re-requested while retries are left,
 *     then fail{code: 'model_turn_failed'}; a tool call is re-issued (same call, same args) when
 *     retryable and retries are left, or when its outcome is unknown and the tool is not
 *     mutating; a mutating call with an unknown outcome is never repeated: it is answered
 *     'outcome_unknown' (the model is told to re-read); otherwise answered 'error'.
 *     Retries are counted per call (context.max_retries re-issues after the first attempt).
 *   operation_cancelled (the awaited effect): re-issued at once when the run is running, else
 *     remembered and re-issued on `resumed`.
 *   budget_exceeded → recorded (projection shows paused), no effects: core pauses the run and
 *     keeps the pending operation. resumed → clears it; re-issues only an operation that was
 *     cancelled (a kept operation is started by core with its original effect id).
 *   stopped → phase 'stopped', no effects. Events after the run ended change nothing, and so do
 *     events while the run is completed, failed, stopped or cancelling (`run_not_running`).
 *
 * Determinism and idempotency: an event with seq <= state.last_event_seq returns the same state,
 * the same state_rev and no effects. An event that is not for the effect the reducer waits for
 * (effect_id mismatch, wrong phase) returns the same state and state_rev with a diagnostic
 * {code, severity, message, seq}. Any other event bumps state_rev by one; effect i has id
 * `${state_rev}:${i}`.
 */
import {
  onBudgetExceeded,
  onDuplicateRunStarted,
  onModelTurnCompleted,
  onOperationCancelled,
  onOperationFailed,
  onRequestClosed,
  onRequestResolved,
  onResumed,
  onRunStarted,
  onStopped,
  onToolResult,
  onUserInput,
} from './handlers.ts';
import { clip, clone, isObject } from './json.ts';
import {
  type AgentLoopAnswer,
  CONTRACT,
  changed,
  diag,
  type HandlerResult,
  IGNORED,
  isAgentLoopState,
  isEvent,
  newReduction,
  type Reduction,
  refusal,
  unchanged,
} from './response.ts';
import { STATE_VERSION } from './state.ts';
import { MAX_NOTE_CHARS } from './turn.ts';

/** Run statuses in which events change nothing any more. */
const STOPPING_STATUSES = ['completed', 'failed', 'stopped', 'cancelling'];

const HANDLERS: Record<string, (ctx: Reduction) => HandlerResult> = {
  run_started: onDuplicateRunStarted,
  model_turn_completed: onModelTurnCompleted,
  tool_result: onToolResult,
  request_resolved: onRequestResolved,
  request_closed: onRequestClosed,
  user_input: onUserInput,
  operation_failed: onOperationFailed,
  operation_cancelled: onOperationCancelled,
  resumed: onResumed,
  budget_exceeded: onBudgetExceeded,
};

/**
 * Reduces one `raisin.agent-run.reducer/1` request (untrusted JSON) to the response
 * `{contract, state, state_rev, effects, projection, diagnostics, refused}`. Never throws: an
 * unexpected fault comes back as `refused: {code: 'internal_error', message}` (which fails the
 * run, as a throw would); a request this reducer cannot read is refused with contract_mismatch,
 * event_invalid, state_missing or state_unrecognized.
 */
export function reduce(request: unknown): AgentLoopAnswer {
  try {
    return reduceChecked(request);
  } catch (error) {
    return refusal(request, 'internal_error', clip(messageOf(error), MAX_NOTE_CHARS));
  }
}

function reduceChecked(request: unknown): AgentLoopAnswer {
  if (!isObject(request) || !Array.isArray(request.accept) || request.accept.indexOf(CONTRACT) < 0) {
    return refusal(request, 'contract_mismatch', `this reducer speaks ${CONTRACT} only`);
  }
  const event = request.event;
  if (!isEvent(event)) {
    return refusal(request, 'event_invalid', 'the request has no event {seq, kind, data}');
  }
  const prev = request.state;
  if (prev === null || prev === undefined) {
    if (event.kind !== 'run_started') {
      return refusal(request, 'state_missing', `first event must be run_started, got ${event.kind}`);
    }
    return onRunStarted(request, event);
  }
  if (!isAgentLoopState(prev)) {
    return refusal(request, 'state_unrecognized', `state is not an agent-loop state v${STATE_VERSION}`);
  }
  // Re-delivered event: same state, same revision, no effects.
  if (event.seq <= prev.last_event_seq) return unchanged(request, []);
  // After the run ended nothing changes any more.
  if (prev.phase === 'ended' || prev.phase === 'stopped') return unchanged(request, []);

  const ctx = newReduction(request, event, clone(prev));
  if (event.kind === 'stopped') {
    onStopped(ctx);
    return changed(ctx);
  }
  const status = ctx.run.status;
  if (typeof status === 'string' && STOPPING_STATUSES.includes(status)) {
    return unchanged(request, [
      diag('run_not_running', 'info', `${event.kind} ignored: the run is ${status}`, event),
    ]);
  }
  const handler = Object.hasOwn(HANDLERS, event.kind) ? HANDLERS[event.kind] : undefined;
  if (handler === undefined) {
    return unchanged(request, [
      diag('unknown_event_kind', 'warning', `event kind ${event.kind} is not handled`, event),
    ]);
  }
  if (handler(ctx) === IGNORED) return unchanged(request, ctx.diagnostics);
  return changed(ctx);
}

/** The message of a thrown value (its `message` when it has one). */
function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  return error && typeof message === 'string' ? message : String(error);
}
