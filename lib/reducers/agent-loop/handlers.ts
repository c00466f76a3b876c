/**
 * One handler per event kind the loop reacts to (the loop's behaviour is described in
 * reduce.ts). Each reads the reduction, changes its state copy and emits effects, or answers
 * IGNORED (with a diagnostic when the event was not for the awaited effect).
 */
import { advance, answerCurrentAndAdvance, issueCall, readCalls, reissue } from './calls.ts';
import { readContext } from './context.ts';
import { isObject, type JsonRecord, utf8Length } from './json.ts';
import { askUser, complete, fail, requestModelTurn } from './operations.ts';
import { isPlanCall, onPlanDecision, PROPOSE_PLAN, UPDATE_PLAN } from './plan.ts';
import { countTurn, noteToolResult, noteUserProgress, progressOf } from './progress.ts';
import {
  type AgentLoopAnswer,
  type AgentLoopDiagnostic,
  type AgentLoopEvent,
  changed,
  diag,
  emit,
  eventData,
  type HandlerResult,
  IGNORED,
  ignore,
  isAwaited,
  newReduction,
  notAwaited,
  type Reduction,
} from './response.ts';
import { type AgentLoopState, type AgentLoopTool, STATE_VERSION } from './state.ts';
import { answer, currentCall, findTool, skipRemaining } from './turn.ts';
import {
  claimSuccess,
  onVerificationAnswer,
  onVerifierFailed,
  onVerifierResult,
  recordEnvelope,
  verificationOf,
} from './verification.ts';

const ENVELOPE_STATUSES = ['succeeded', 'waiting', 'retryable', 'blocked', 'failed'];

export function onModelTurnCompleted(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  if (state.phase !== 'model' || !isAwaited(ctx, false)) return notAwaited(ctx);
  const data = ctx.data;
  state.counters.model_turns += 1;
  state.budget = null;
  const usage = isObject(data.usage) ? data.usage : {};
  const used = typeof usage.input_tokens === 'number' ? usage.input_tokens : 0;
  if (state.compact_above_tokens !== undefined && used >= state.compact_above_tokens) state.compact = true;
  const steered = state.steer_seq > state.cutoff_seq;
  state.steer_seq = 0;
  const calls = readCalls(ctx, Array.isArray(data.tool_calls) ? data.tool_calls : []);
  if (calls.length > 0) {
    state.turn = { seq: ctx.event.seq, next: 0, calls };
    if (countTurn(ctx, true)) return;
    advance(ctx);
    return;
  }
  countTurn(ctx, false);
  state.turn = null;
  const message = isObject(data.message) ? data.message : {};
  const text = typeof message.text === 'string' ? message.text : '';
  if (steered) {
    requestModelTurn(ctx, false);
    return;
  }
  if (text.trim() === '') {
    if (state.model_attempt <= state.max_retries) {
      state.model_attempt += 1;
      state.counters.retries += 1;
      requestModelTurn(ctx, true);
    } else {
      fail(
        ctx,
        'empty_model_reply',
        `the model replied with neither text nor tool calls ${state.model_attempt} times`,
      );
    }
    return;
  }
  if (state.mode === 'task') {
    if (data.finish_reason === 'length') complete(ctx, 'partial', text);
    else claimSuccess(ctx, text);
    return;
  }
  askUser(ctx, text);
}

export function onToolResult(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  if (state.phase === 'verify') {
    if (!isAwaited(ctx, false)) return notAwaited(ctx);
    const envelope = isObject(ctx.data.envelope) ? ctx.data.envelope : {};
    // A verifier that parks is awaited until its result is delivered.
    if (envelope.status === 'waiting') return IGNORED;
    onVerifierResult(ctx, envelope);
    return;
  }
  const call = currentCall(state);
  const data = ctx.data;
  const callId = typeof data.call_id === 'string' ? data.call_id : undefined;
  if (state.phase !== 'tool' || call === null || state.turn === null) return notAwaited(ctx);
  if (!isAwaited(ctx, callId === call.call_id)) return notAwaited(ctx);
  if (callId !== undefined && callId !== call.call_id) {
    return ignore(
      ctx,
      'unexpected_call',
      `tool_result for call ${callId} ignored: waiting for call ${call.call_id}`,
    );
  }
  const envelope = isObject(data.envelope) ? data.envelope : {};
  const status =
    typeof envelope.status === 'string' && ENVELOPE_STATUSES.includes(envelope.status)
      ? envelope.status
      : 'failed';
  if (status === 'waiting') {
    call.state = 'waiting';
    return;
  }
  call.state = 'done';
  call.result = { status, seq: ctx.event.seq };
  delete call.args;
  state.turn.next += 1;
  recordEnvelope(state, envelope);
  noteToolResult(state, call.name, status, envelope.payload);
  const tool = findTool(state, call.name);
  if (tool !== null && tool.ends_run !== undefined && status === 'succeeded') {
    const payload = envelope.payload;
    const detail = typeof payload === 'string' && payload !== '' ? `: ${payload}` : '';
    if (tool.ends_run === 'succeeded') claimSuccess(ctx, `Ended by ${call.name}${detail}`);
    else complete(ctx, tool.ends_run, `Ended by ${call.name}${detail}`);
    return;
  }
  advance(ctx);
}

export function onRequestResolved(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  const data = ctx.data;
  if (data.kind === 'input') {
    if (state.phase !== 'user' || !isAwaited(ctx, true)) return notAwaited(ctx);
    state.streak = { key: '', count: 0 };
    state.steer_seq = 0;
    noteUserProgress(state);
    if (onVerificationAnswer(ctx)) return;
    requestModelTurn(ctx, false);
    return;
  }
  if (data.kind === 'approval') {
    const call = currentCall(state);
    if (state.phase !== 'tool' || call === null || state.turn === null || !isAwaited(ctx, true))
      return notAwaited(ctx);
    if (isPlanCall(state, call.name)) {
      noteUserProgress(state);
      onPlanDecision(ctx, call);
      state.turn.next += 1;
      advance(ctx);
      return;
    }
    if (data.decision !== 'rejected') return IGNORED;
    const reason = typeof data.reason === 'string' && data.reason !== '' ? ` (${data.reason})` : '';
    answerCurrentAndAdvance(
      ctx,
      'refused',
      `Not executed: the user did not approve this call${reason}. Do not repeat it unless the user asks for it.`,
    );
    return;
  }
  return ignore(ctx, 'request_kind_unknown', `request_resolved of kind ${String(data.kind)} ignored`);
}

export function onRequestClosed(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  const reason = ctx.data.reason;
  const hasEffectId = typeof ctx.event.effect_id === 'string';
  const call = currentCall(state);
  // Without an effect_id only our question or a parked call (waiting for its result) can be meant.
  const mine =
    (state.phase === 'user' && isAwaited(ctx, true)) ||
    (state.phase === 'tool' && call !== null && isAwaited(ctx, call.state === 'waiting'));
  if (!mine) {
    // Closing a request we withdrew ourselves is expected; anything else is worth a diagnostic.
    if (hasEffectId && reason !== 'withdrawn') return notAwaited(ctx);
    return IGNORED;
  }
  if (reason !== 'expired') return IGNORED;
  if (state.phase === 'user') {
    const claim = state.verify?.pending;
    if (claim?.asked === true && state.verify !== undefined) {
      delete state.verify.pending;
      complete(ctx, 'partial', `Not verified, and the user did not answer in time. ${claim.summary}`);
      return;
    }
    complete(ctx, 'blocked', 'The user did not answer before the question expired.');
    return;
  }
  if (call?.state === 'waiting') {
    answerCurrentAndAdvance(
      ctx,
      'outcome_unknown',
      'The outcome of this call is unknown: its result did not arrive before the request expired. It may or may not have taken effect; re-read the affected data before calling it again.',
    );
    return;
  }
  answerCurrentAndAdvance(
    ctx,
    'refused',
    'Not executed: the approval for this call expired before anyone decided.',
  );
}

export function onUserInput(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  const open = Array.isArray(ctx.run.open_requests) ? ctx.run.open_requests : [];
  state.streak = { key: '', count: 0 };
  noteUserProgress(state);
  // Core delivers a steer only between operations, so an awaited model turn has not started:
  // it is asked again with the transcript cut at the steer (core replaces the pending turn).
  const interrupts =
    state.phase === 'user' || state.phase === 'model' || (state.phase === 'tool' && open.length > 0);
  if (!interrupts) {
    // A tool call is pending: the model turn after it will see the steer.
    state.steer_seq = ctx.event.seq;
    return;
  }
  for (const request of open) {
    if (isObject(request) && typeof request.request_id === 'string') {
      emit(ctx, { kind: 'withdraw_request', request_id: request.request_id });
    }
  }
  if (state.phase === 'tool') {
    const call = currentCall(state);
    if (call !== null && call.state === 'waiting') {
      answer(
        call,
        'outcome_unknown',
        'The outcome of this call is unknown: it was still waiting for its result when the user sent new input. Re-read before calling it again.',
      );
    }
    skipRemaining(state, 'Not executed: the user sent new input before this call ran.');
  }
  state.steer_seq = 0;
  requestModelTurn(ctx, false);
}

export function onOperationFailed(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  if (state.phase === 'user' || !isAwaited(ctx, false)) return notAwaited(ctx);
  const data = ctx.data;
  const errorClass = typeof data.error_class === 'string' ? data.error_class : 'error';
  const message = typeof data.message === 'string' ? data.message : '';
  const retryable = data.retryable === true;
  const unknown = data.outcome_unknown === true;
  if (state.phase === 'verify') {
    // The verifier only reads: an unknown outcome is safe to repeat.
    onVerifierFailed(ctx, retryable || unknown, `${errorClass}: ${message}`);
    return;
  }
  if (state.phase === 'model') {
    if ((retryable || unknown) && state.model_attempt <= state.max_retries) {
      state.model_attempt += 1;
      reissue(ctx);
    } else {
      fail(ctx, 'model_turn_failed', `${errorClass}: ${message}`);
    }
    return;
  }
  const call = currentCall(state);
  if (call === null) return notAwaited(ctx);
  const tool = findTool(state, call.name);
  const retriesLeft = call.attempts <= state.max_retries && tool !== null && call.args !== undefined;
  if (unknown) {
    if (tool !== null && !tool.mutating && retriesLeft) {
      issueCall(ctx, call, tool);
      return;
    }
    answerCurrentAndAdvance(
      ctx,
      'outcome_unknown',
      `The outcome of this call is unknown (${errorClass}: ${message}): the operation was abandoned before it reported. It may or may not have taken effect. Re-read the affected data before deciding whether to call it again.`,
    );
    return;
  }
  if (retryable && retriesLeft && tool !== null) {
    issueCall(ctx, call, tool);
    return;
  }
  answerCurrentAndAdvance(ctx, 'error', `Error (${errorClass}): ${message}`);
}

export function onOperationCancelled(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  if (state.phase === 'user' || !isAwaited(ctx, false)) return notAwaited(ctx);
  if (ctx.run.status === 'running') {
    reissue(ctx);
    return;
  }
  state.interrupted = true;
}

export function onResumed(ctx: Reduction): HandlerResult {
  const state = ctx.state;
  const hadBudget = state.budget !== null;
  state.budget = null;
  if (state.interrupted && (state.phase === 'model' || state.phase === 'tool' || state.phase === 'verify')) {
    reissue(ctx);
    return;
  }
  if (!hadBudget) return IGNORED;
}

export function onBudgetExceeded(ctx: Reduction): undefined {
  const data = ctx.data;
  ctx.state.budget = {
    which: typeof data.which === 'string' ? data.which : 'unknown',
    limit: typeof data.limit === 'number' ? data.limit : 0,
    used: typeof data.used === 'number' ? data.used : 0,
  };
}

export function onStopped(ctx: Reduction): void {
  ctx.state.phase = 'stopped';
  ctx.state.awaiting = null;
}

export function onDuplicateRunStarted(ctx: Reduction): HandlerResult {
  return ignore(ctx, 'duplicate_run_started', 'run_started after the run began is ignored');
}

/** The longest configuration (instructions, objective and tools, UTF-8 of JSON). */
const MAX_CONFIG_BYTES = 160 * 1024;

/** The first event: reads the context, builds the state and asks for the first model turn. */
export function onRunStarted(request: JsonRecord, event: AgentLoopEvent): AgentLoopAnswer {
  const data = eventData(event);
  const diagnostics: AgentLoopDiagnostic[] = [];
  const config = readContext(data.context, (code, message) => {
    diagnostics.push(diag(code, 'warning', message, event));
  });
  const state: AgentLoopState = {
    v: STATE_VERSION,
    last_event_seq: event.seq,
    phase: 'model',
    awaiting: null,
    cutoff_seq: event.seq,
    steer_seq: 0,
    mode: config.mode,
    loop_limit: config.loop_limit,
    max_retries: config.max_retries,
    tools: config.tools,
    turn: null,
    model_attempt: 1,
    streak: { key: '', count: 0 },
    interrupted: false,
    budget: null,
    outcome: null,
    counters: { model_turns: 0, tool_calls: 0, retries: 0, loops: 0 },
  };
  if (config.instructions !== undefined) state.instructions = config.instructions;
  if (config.compact_above_tokens !== undefined) state.compact_above_tokens = config.compact_above_tokens;
  if (config.plan !== undefined) {
    state.plan_mode = config.plan;
    state.tools = withoutPlanTools(state.tools, diagnostics, event);
  }
  const progress = progressOf(config.no_progress_turns);
  if (progress !== undefined) state.progress = progress;
  const verifier = verifierOf(state.tools, config.verifier_tool, diagnostics, event);
  const verify = verificationOf(config.verify_completion, verifier);
  if (verify !== undefined) state.verify = verify;
  if (typeof data.objective === 'string') state.objective = data.objective;
  const ctx = newReduction(request, event, state, diagnostics);
  const size = utf8Length(JSON.stringify([state.instructions, state.objective, state.tools]));
  if (size > MAX_CONFIG_BYTES) {
    delete state.instructions;
    delete state.objective;
    state.tools = [];
    fail(
      ctx,
      'context_too_large',
      `instructions, objective and tools take ${size} bytes; the limit is ${MAX_CONFIG_BYTES}`,
    );
    return changed(ctx);
  }
  requestModelTurn(ctx, false);
  return changed(ctx);
}

/** context.verifier_tool when it names a tool of the context; else dropped with a warning. */
function verifierOf(
  tools: AgentLoopTool[],
  name: string | undefined,
  diagnostics: AgentLoopDiagnostic[],
  event: AgentLoopEvent,
): string | undefined {
  if (name === undefined || tools.some((t) => t.name === name)) return name;
  diagnostics.push(
    diag('context_invalid', 'warning', `verifier_tool ${name} is not one of context.tools; ignored`, event),
  );
  return undefined;
}

/** The context's tools without any named like a plan tool (the reducer's own win), each warned. */
function withoutPlanTools(
  tools: AgentLoopTool[],
  diagnostics: AgentLoopDiagnostic[],
  event: AgentLoopEvent,
): AgentLoopTool[] {
  return tools.filter((tool) => {
    if (tool.name !== PROPOSE_PLAN && tool.name !== UPDATE_PLAN) return true;
    diagnostics.push(
      diag('tool_reserved', 'warning', `tool ${tool.name} is the reducer's own plan tool; skipped`, event),
    );
    return false;
  });
}
