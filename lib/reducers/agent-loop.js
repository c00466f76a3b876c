/**
 * The default agent reducer, `/lib/raisin/ai/agent-run-reducer`: the model loop a conversation
 * (or a flow's ai_agent step) runs on. One self-contained ES module, evaluated by the QuickJS
 * sandbox under the deterministic execution policy: no imports, no host calls, no clock, no
 * randomness. Exports `reduce(request)`: a `raisin.agent-run.reducer/1` request in, the response
 * out. Seeds: agent-run-contracts ("The reducer contract", "Validation", "Writing a
 * deterministic reducer", "Projection"); agent-runs ("Domain reducers", "Where runs are used").
 *
 * Context (run_started.data.context, every field optional):
 *   {instructions?: string,
 *    tools?: [{name, description?, schema, kind: 'function'|'domain', function_path?,
 *              mutating?, replay_safe?, timeout_ms?, interruptible?, ends_run?}],
 *    mode?: 'conversation' (default) | 'task', loop_limit?: integer >= 2 (default 3),
 *    max_retries?: integer 0..10 (default 2)}
 *   - mutating defaults to TRUE (a tool not declared read-only may change something);
 *     replay_safe defaults to !mutating (a mutating tool is replay-safe only when it declares
 *     that it keys its writes on the operation id).
 *   - ends_run: 'succeeded' | 'partial' | 'blocked': a succeeded result of this tool ends the
 *     run with complete{outcome: ends_run} (a hand-off such as transfer_to_human_agents).
 *   - Every call, function or domain, is executed with call_tool; `tool` is the entry's
 *     function_path when set, else its name. Model-supplied `__raisin_context` args are dropped.
 *
 * The loop:
 *   run_started → request_model_turn {tools_offered, instructions, tool_results: [],
 *     context: {transcript: {from_seq: 1, to_seq: <cutoff_seq>}, mode, objective?}}.
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
 *   request_resolved input (the answer to our ask_user) → request_model_turn.
 *   request_resolved approval rejected (the pending call) → the call is answered 'refused';
 *     approved → nothing changes (core runs the call; its tool_result follows).
 *   request_closed expired: our ask_user → complete{blocked}; the pending call's approval →
 *     answered 'refused'; the pending call's external result → answered 'outcome_unknown'.
 *     Other reasons (withdrawn, cancelled) change nothing.
 *   user_input (a steer): when requests are open (run.open_requests) and the reducer waits for
 *     the user or for an approval/external result, every open request is withdrawn, calls not
 *     run are answered 'not_executed', and a model turn is requested. Otherwise (a model turn or
 *     a tool call is in progress) the steer is recorded and the next model turn sees it; a
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
 *   stopped → phase 'stopped', no effects. Events after the run ended change nothing.
 *   Loop detection: the same call (name + canonical args) loop_limit times in a row (user input
 *     resets the streak) is not executed: conversation → ask_user explaining; task →
 *     capability_gap then complete{blocked}.
 *   At most 32 calls of one turn run; further ones, calls with non-object args and calls to
 *   unknown tools are answered by the reducer without a call_tool.
 *
 * Projection: one item per call of the current turn (key `call:<call_id>`; pending, in_progress,
 * waiting, paused, completed, failed, blocked for not executed, stopped), then `respond` (the reply
 * or the task's end: in_progress while the model works, pending during tools, waiting for the
 * user, then completed / blocked / failed / stopped), and a one-line summary.
 *
 * Determinism and idempotency: an event with seq <= state.last_event_seq returns the same state,
 * the same state_rev and no effects. An event that is not for the effect the reducer waits for
 * (effect_id mismatch, wrong phase) returns the same state and state_rev with a diagnostic
 * {code, severity, message, seq}. Any other event bumps state_rev by one; effect i has id
 * `${state_rev}:${i}`.
 *
 * State (small and bounded: the transcript stays in the event log and is referenced by seq):
 *   {v: 1, last_event_seq, phase: 'model'|'tool'|'user'|'ended'|'stopped', awaiting (effect_id),
 *    cutoff_seq, steer_seq, mode, loop_limit, max_retries, instructions?, objective?, tools,
 *    turn: {seq, next, calls: [{call_id, name, args?, state, attempts, result?}]} | null,
 *    model_attempt, streak: {key, count}, interrupted, budget, outcome, counters}
 *   Only the current turn's pending calls keep their args; answered calls drop them. The
 *   configuration is capped at 160 KiB and one turn's args at 64 KiB (UTF-8 of canonical JSON),
 *   so the canonical state stays below the contract's 256 KiB however long the run.
 */

const CONTRACT = 'raisin.agent-run.reducer/1';
const STATE_VERSION = 1;
const DEFAULT_LOOP_LIMIT = 3;
const DEFAULT_MAX_RETRIES = 2;
const MAX_RETRIES_CAP = 10;
const MAX_CALLS_PER_TURN = 32;
const MAX_CONFIG_BYTES = 160 * 1024;
const MAX_TURN_ARGS_BYTES = 64 * 1024;
const MAX_NOTE_CHARS = 1000;
const MAX_SUMMARY_CHARS = 2000;
const RUN_CONTEXT_KEY = '__raisin_context';
const OUTCOMES = ['succeeded', 'partial', 'blocked'];
const ENVELOPE_STATUSES = ['succeeded', 'waiting', 'retryable', 'blocked', 'failed'];
const STOPPING_STATUSES = ['completed', 'failed', 'stopped', 'cancelling'];

/**
 * Reduces one event. Never throws: an unexpected fault comes back as
 * `refused: {code: 'internal_error', message}` (which fails the run, as a throw would).
 * @param {any} request a raisin.agent-run.reducer/1 request
 * @returns {any} the response {contract, state, state_rev, effects, projection, diagnostics, refused}
 */
export function reduce(request) {
  try {
    return reduceChecked(request);
  } catch (error) {
    const message = error && typeof error.message === 'string' ? error.message : String(error);
    return refusal(request, 'internal_error', clip(message, MAX_NOTE_CHARS));
  }
}

function reduceChecked(request) {
  if (!isObject(request) || !Array.isArray(request.accept) || request.accept.indexOf(CONTRACT) < 0) {
    return refusal(request, 'contract_mismatch', `this reducer speaks ${CONTRACT} only`);
  }
  const event = request.event;
  if (!isObject(event) || typeof event.kind !== 'string' || !isInt(event.seq)) {
    return refusal(request, 'event_invalid', 'the request has no event {seq, kind, data}');
  }
  const prev = request.state;
  if (prev === null || prev === undefined) {
    if (event.kind !== 'run_started') {
      return refusal(request, 'state_missing', `first event must be run_started, got ${event.kind}`);
    }
    return start(request);
  }
  if (!isObject(prev) || prev.v !== STATE_VERSION) {
    return refusal(request, 'state_unrecognized', `state is not an agent-loop state v${STATE_VERSION}`);
  }
  // Re-delivered event: same state, same revision, no effects.
  if (event.seq <= prev.last_event_seq) return unchanged(request, []);
  // After the run ended nothing changes any more.
  if (prev.phase === 'ended' || prev.phase === 'stopped') return unchanged(request, []);

  const ctx = newContext(request, clone(prev));
  if (event.kind === 'stopped') {
    onStopped(ctx);
    return changed(ctx);
  }
  const status = request.run?.status;
  if (STOPPING_STATUSES.indexOf(status) >= 0) {
    return unchanged(request, [
      diag('run_not_running', 'info', `${event.kind} ignored: the run is ${status}`, event),
    ]);
  }
  const handler = Object.hasOwn(HANDLERS, event.kind) ? HANDLERS[event.kind] : null;
  if (handler === null) {
    return unchanged(request, [
      diag('unknown_event_kind', 'warning', `event kind ${event.kind} is not handled`, event),
    ]);
  }
  const outcome = handler(ctx);
  if (outcome === IGNORED) return unchanged(request, ctx.diagnostics);
  return changed(ctx);
}

/** A handler's answer when the event changes nothing (the response keeps state and state_rev). */
const IGNORED = 'ignored';

const HANDLERS = {
  run_started: (ctx) => ignore(ctx, 'duplicate_run_started', 'run_started after the run began is ignored'),
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

// ---------------------------------------------------------------- responses

function newContext(request, state) {
  const rev = isInt(request.state_rev) ? request.state_rev : 0;
  return {
    request,
    event: request.event,
    data: isObject(request.event.data) ? request.event.data : {},
    run: isObject(request.run) ? request.run : {},
    state,
    rev: rev + 1,
    effects: [],
    diagnostics: [],
  };
}

/** Pushes an effect with the id `${rev}:${i}` and returns the id. */
function emit(ctx, effect) {
  const id = `${ctx.rev}:${ctx.effects.length}`;
  const withId = { effect_id: id };
  for (const key of Object.keys(effect)) withId[key] = effect[key];
  ctx.effects.push(withId);
  return id;
}

function changed(ctx) {
  ctx.state.last_event_seq = ctx.event.seq;
  return {
    contract: CONTRACT,
    state: ctx.state,
    state_rev: ctx.rev,
    effects: ctx.effects,
    projection: project(ctx.state),
    diagnostics: ctx.diagnostics,
    refused: null,
  };
}

function unchanged(request, diagnostics) {
  const state = request.state === undefined ? null : request.state;
  return {
    contract: CONTRACT,
    state,
    state_rev: isInt(request.state_rev) ? request.state_rev : 0,
    effects: [],
    projection: isObject(state) && state.v === STATE_VERSION ? project(state) : null,
    diagnostics,
    refused: null,
  };
}

function refusal(request, code, message) {
  const state = isObject(request) && request.state !== undefined ? request.state : null;
  return {
    contract: CONTRACT,
    state,
    state_rev: isObject(request) && isInt(request.state_rev) ? request.state_rev : 0,
    effects: [],
    projection: null,
    diagnostics: [],
    refused: { code, message },
  };
}

function diag(code, severity, message, event) {
  return { code, severity, message, seq: event.seq };
}

function ignore(ctx, code, message) {
  ctx.diagnostics.push(diag(code, 'warning', message, ctx.event));
  return IGNORED;
}

/** The event is for the effect the reducer waits for: effect_id equal, or absent and `fallback` holds. */
function isAwaited(ctx, fallback) {
  const effectId = ctx.event.effect_id;
  if (typeof effectId === 'string') return effectId === ctx.state.awaiting;
  return fallback === true;
}

function notAwaited(ctx) {
  const effectId = ctx.event.effect_id;
  const got = typeof effectId === 'string' ? `effect ${effectId}` : 'no effect_id';
  const want = ctx.state.awaiting ? `effect ${ctx.state.awaiting}` : 'nothing';
  return ignore(
    ctx,
    'unexpected_effect',
    `${ctx.event.kind} for ${got} ignored: waiting for ${want} (phase ${ctx.state.phase})`,
  );
}

// ---------------------------------------------------------------- run_started

function start(request) {
  const ctx = newContext(request, null);
  const data = ctx.data;
  const config = readContext(data.context, ctx);
  const state = {
    v: STATE_VERSION,
    last_event_seq: ctx.event.seq,
    phase: 'model',
    awaiting: null,
    cutoff_seq: ctx.event.seq,
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
  if (typeof data.objective === 'string') state.objective = data.objective;
  ctx.state = state;
  const size = utf8Length(JSON.stringify([state.instructions, state.objective, state.tools]));
  if (size > MAX_CONFIG_BYTES) {
    delete state.instructions;
    delete state.objective;
    state.tools = [];
    finish(
      ctx,
      'fail',
      'context_too_large',
      `instructions, objective and tools take ${size} bytes; the limit is ${MAX_CONFIG_BYTES}`,
    );
    return changed(ctx);
  }
  requestModelTurn(ctx, false);
  return changed(ctx);
}

/** Reads run_started.data.context; bad parts fall back to defaults with a diagnostic. */
function readContext(raw, ctx) {
  const context = isObject(raw) ? raw : {};
  if (raw !== undefined && raw !== null && !isObject(raw)) {
    ctx.diagnostics.push(
      diag('context_invalid', 'warning', 'context is not an object; defaults used', ctx.event),
    );
  }
  const config = {
    mode: context.mode === 'task' ? 'task' : 'conversation',
    loop_limit: DEFAULT_LOOP_LIMIT,
    max_retries: DEFAULT_MAX_RETRIES,
    tools: [],
    instructions: typeof context.instructions === 'string' ? context.instructions : undefined,
  };
  if (context.mode !== undefined && context.mode !== 'task' && context.mode !== 'conversation') {
    ctx.diagnostics.push(
      diag('context_invalid', 'warning', 'mode is not conversation|task; conversation used', ctx.event),
    );
  }
  if (context.loop_limit !== undefined) {
    if (isInt(context.loop_limit) && context.loop_limit >= 2) config.loop_limit = context.loop_limit;
    else
      ctx.diagnostics.push(
        diag('context_invalid', 'warning', 'loop_limit must be an integer >= 2', ctx.event),
      );
  }
  if (context.max_retries !== undefined) {
    if (isInt(context.max_retries) && context.max_retries >= 0) {
      config.max_retries = Math.min(context.max_retries, MAX_RETRIES_CAP);
    } else
      ctx.diagnostics.push(
        diag('context_invalid', 'warning', 'max_retries must be an integer >= 0', ctx.event),
      );
  }
  const tools = Array.isArray(context.tools) ? context.tools : [];
  const seen = Object.create(null);
  for (let i = 0; i < tools.length; i++) {
    const entry = readTool(tools[i]);
    if (entry === null) {
      ctx.diagnostics.push(
        diag('tool_invalid', 'warning', `context.tools[${i}] has no name; skipped`, ctx.event),
      );
    } else if (seen[entry.name] === true) {
      ctx.diagnostics.push(
        diag('tool_duplicate', 'warning', `tool ${entry.name} is listed twice; first kept`, ctx.event),
      );
    } else {
      seen[entry.name] = true;
      config.tools.push(entry);
    }
  }
  return config;
}

function readTool(raw) {
  if (!isObject(raw) || typeof raw.name !== 'string' || raw.name === '') return null;
  const mutating = raw.mutating !== false;
  const tool = {
    name: raw.name,
    kind: raw.kind === 'domain' ? 'domain' : 'function',
    schema: isObject(raw.schema) ? raw.schema : { type: 'object', properties: {} },
    mutating,
    replay_safe: typeof raw.replay_safe === 'boolean' ? raw.replay_safe : !mutating,
  };
  if (typeof raw.description === 'string') tool.description = raw.description;
  if (typeof raw.function_path === 'string' && raw.function_path !== '')
    tool.function_path = raw.function_path;
  if (isInt(raw.timeout_ms) && raw.timeout_ms > 0) tool.timeout_ms = raw.timeout_ms;
  if (raw.interruptible === false) tool.interruptible = false;
  if (OUTCOMES.indexOf(raw.ends_run) >= 0) tool.ends_run = raw.ends_run;
  return tool;
}

function findTool(state, name) {
  for (const tool of state.tools) if (tool.name === name) return tool;
  return null;
}

// ---------------------------------------------------------------- operations

/** Asks for a model turn answering every call of the current turn. `retry` keeps the attempt count. */
function requestModelTurn(ctx, retry) {
  const state = ctx.state;
  state.phase = 'model';
  state.cutoff_seq = ctx.event.seq;
  state.interrupted = false;
  if (!retry) state.model_attempt = 1;
  const context = { transcript: { from_seq: 1, to_seq: state.cutoff_seq }, mode: state.mode };
  if (state.objective !== undefined) context.objective = state.objective;
  const effect = {
    kind: 'request_model_turn',
    tools_offered: state.tools.map(offered),
    tool_results: toolResults(state.turn),
    context,
  };
  if (state.instructions !== undefined) effect.instructions = state.instructions;
  state.awaiting = emit(ctx, effect);
}

function offered(tool) {
  const entry = { name: tool.name, kind: tool.kind, schema: tool.schema };
  if (tool.function_path !== undefined) entry.function_path = tool.function_path;
  if (tool.description !== undefined) entry.description = tool.description;
  return entry;
}

function toolResults(turn) {
  if (turn === null) return [];
  return turn.calls.map((call) => {
    const result = call.result || { status: 'not_executed', content: 'Not executed.' };
    const ref = { call_id: call.call_id, name: call.name, status: result.status };
    if (result.seq !== undefined) ref.seq = result.seq;
    if (result.content !== undefined) ref.content = result.content;
    return ref;
  });
}

/** Issues call_tool for `call` (a first attempt or a re-issue). */
function issueCall(ctx, call, tool) {
  const state = ctx.state;
  const effect = {
    kind: 'call_tool',
    tool: tool.function_path !== undefined ? tool.function_path : tool.name,
    args: call.args,
    mutating: tool.mutating,
    replay_safe: tool.replay_safe,
    for_call_id: call.call_id,
  };
  if (tool.interruptible === false) effect.interruptible = false;
  if (tool.timeout_ms !== undefined) effect.timeout_ms = tool.timeout_ms;
  call.state = 'running';
  call.attempts += 1;
  if (call.attempts > 1) state.counters.retries += 1;
  else state.counters.tool_calls += 1;
  state.phase = 'tool';
  state.interrupted = false;
  state.awaiting = emit(ctx, effect);
}

/** Re-issues the operation the reducer waits for (after a retryable failure or a cancellation). */
function reissue(ctx) {
  const state = ctx.state;
  if (state.phase === 'model') {
    state.counters.retries += 1;
    requestModelTurn(ctx, true);
    return;
  }
  const call = currentCall(state);
  const tool = call && findTool(state, call.name);
  if (call && tool && call.args !== undefined) {
    issueCall(ctx, call, tool);
  } else {
    advance(ctx);
  }
}

/** Runs the next call of the turn that is still pending, or asks for the next model turn. */
function advance(ctx) {
  const state = ctx.state;
  const turn = state.turn;
  while (turn !== null && turn.next < turn.calls.length) {
    const call = turn.calls[turn.next];
    if (call.state === 'done') {
      turn.next += 1;
      continue;
    }
    const tool = findTool(state, call.name);
    if (tool === null) {
      answer(call, 'error', `Error: there is no tool named "${call.name}". Use one of the tools offered.`);
      turn.next += 1;
      continue;
    }
    const key = fingerprint(call.name, call.args);
    if (state.streak.key === key) state.streak.count += 1;
    else state.streak = { key, count: 1 };
    if (state.streak.count >= state.loop_limit) {
      loopDetected(ctx, call);
      return;
    }
    issueCall(ctx, call, tool);
    return;
  }
  requestModelTurn(ctx, false);
}

function currentCall(state) {
  const turn = state.turn;
  if (turn === null || turn.next >= turn.calls.length) return null;
  return turn.calls[turn.next];
}

/** Marks `call` answered by the reducer itself with a note the model will see. */
function answer(call, status, content) {
  call.state = 'done';
  call.result = { status, content: clip(content, MAX_NOTE_CHARS) };
  delete call.args;
}

/** Answers the current call and moves on (next call or next model turn). */
function answerCurrentAndAdvance(ctx, status, content) {
  const state = ctx.state;
  const call = currentCall(state);
  if (call !== null) {
    answer(call, status, content);
    state.turn.next += 1;
  }
  advance(ctx);
}

/** Answers every call of the turn not answered yet with `content` (not_executed). */
function skipRemaining(state, content) {
  const turn = state.turn;
  if (turn === null) return;
  for (const call of turn.calls) if (call.state !== 'done') answer(call, 'not_executed', content);
  turn.next = turn.calls.length;
}

function loopDetected(ctx, call) {
  const state = ctx.state;
  const times = state.streak.count;
  state.counters.loops += 1;
  answer(
    call,
    'not_executed',
    `Not executed: ${call.name} was requested with the same arguments ${times} times in a row, which looks like a loop. Do not repeat it; change the approach or ask the user.`,
  );
  state.turn.next += 1;
  skipRemaining(state, 'Not executed: an earlier call of this turn was stopped by loop detection.');
  state.streak = { key: '', count: 0 };
  const why = `the same call to ${call.name} (same arguments) was requested ${times} times in a row without progress`;
  if (state.mode === 'conversation') {
    askUser(ctx, `I seem to be going in circles: ${why}. How would you like me to continue?`);
    return;
  }
  emit(ctx, {
    kind: 'capability_gap',
    gap: {
      requested_outcome:
        state.objective !== undefined ? clip(state.objective, MAX_NOTE_CHARS) : 'the task of this run',
      missing: 'progress: repeating the same tool call returns nothing new',
      inspected: { tool: call.name, repeated: times, model_turns: state.counters.model_turns },
      why_insufficient: why,
      proposed: {
        layer: 'instructions',
        description:
          'Give the agent the missing information or a tool that can make progress, then run the task again.',
      },
    },
  });
  finish(ctx, 'complete', 'blocked', `Stopped: ${why}.`);
}

function askUser(ctx, question) {
  const state = ctx.state;
  state.phase = 'user';
  state.awaiting = emit(ctx, { kind: 'ask_user', question });
}

/** Emits complete{outcome, summary} or fail{code, message}; the run ends. */
function finish(ctx, kind, outcomeOrCode, text) {
  const state = ctx.state;
  state.phase = 'ended';
  state.awaiting = null;
  if (kind === 'complete') {
    state.outcome = outcomeOrCode;
    const effect = { kind: 'complete', outcome: outcomeOrCode };
    if (text) effect.summary = clip(text, MAX_SUMMARY_CHARS);
    emit(ctx, effect);
  } else {
    state.outcome = 'failed';
    emit(ctx, { kind: 'fail', code: outcomeOrCode, message: clip(text, MAX_SUMMARY_CHARS) });
  }
}

// ---------------------------------------------------------------- event handlers

function onModelTurnCompleted(ctx) {
  const state = ctx.state;
  if (state.phase !== 'model' || !isAwaited(ctx, false)) return notAwaited(ctx);
  const data = ctx.data;
  state.counters.model_turns += 1;
  state.budget = null;
  const steered = state.steer_seq > state.cutoff_seq;
  state.steer_seq = 0;
  const calls = readCalls(ctx, Array.isArray(data.tool_calls) ? data.tool_calls : []);
  if (calls.length > 0) {
    state.turn = { seq: ctx.event.seq, next: 0, calls };
    advance(ctx);
    return;
  }
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
      finish(
        ctx,
        'fail',
        'empty_model_reply',
        `the model replied with neither text nor tool calls ${state.model_attempt} times`,
      );
    }
    return;
  }
  if (state.mode === 'task') {
    finish(ctx, 'complete', data.finish_reason === 'length' ? 'partial' : 'succeeded', text);
    return;
  }
  askUser(ctx, text);
}

/** The calls of a model turn, each {call_id, name, args?, state, attempts, result?}; bad ones pre-answered. */
function readCalls(ctx, raw) {
  const calls = [];
  const ids = Object.create(null);
  let argsBytes = 0;
  for (let i = 0; i < raw.length; i++) {
    const item = raw[i];
    if (!isObject(item) || typeof item.call_id !== 'string' || item.call_id === '') {
      ctx.diagnostics.push(
        diag('tool_call_invalid', 'warning', `tool_calls[${i}] has no call_id; dropped`, ctx.event),
      );
      continue;
    }
    if (ids[item.call_id] === true) {
      ctx.diagnostics.push(
        diag(
          'tool_call_duplicate',
          'warning',
          `tool_calls[${i}] repeats call_id ${item.call_id}; dropped`,
          ctx.event,
        ),
      );
      continue;
    }
    ids[item.call_id] = true;
    const name = typeof item.name === 'string' ? item.name : '';
    const call = { call_id: item.call_id, name, state: 'pending', attempts: 0 };
    calls.push(call);
    if (calls.length > MAX_CALLS_PER_TURN) {
      answer(
        call,
        'not_executed',
        `Not executed: at most ${MAX_CALLS_PER_TURN} tool calls are run per turn.`,
      );
      continue;
    }
    if (!isObject(item.args)) {
      answer(call, 'error', 'Error: the arguments must be a JSON object.');
      continue;
    }
    const args = clone(item.args);
    delete args[RUN_CONTEXT_KEY];
    const bytes = utf8Length(JSON.stringify(args));
    if (argsBytes + bytes > MAX_TURN_ARGS_BYTES) {
      answer(
        call,
        'error',
        `Error: the arguments of this call are too large (${bytes} bytes); send smaller ones.`,
      );
      continue;
    }
    argsBytes += bytes;
    call.args = args;
  }
  return calls;
}

function onToolResult(ctx) {
  const state = ctx.state;
  const call = currentCall(state);
  const data = ctx.data;
  const callId = typeof data.call_id === 'string' ? data.call_id : undefined;
  if (state.phase !== 'tool' || call === null) return notAwaited(ctx);
  if (!isAwaited(ctx, callId === call.call_id)) return notAwaited(ctx);
  if (callId !== undefined && callId !== call.call_id) {
    return ignore(
      ctx,
      'unexpected_call',
      `tool_result for call ${callId} ignored: waiting for call ${call.call_id}`,
    );
  }
  const envelope = isObject(data.envelope) ? data.envelope : {};
  const status = ENVELOPE_STATUSES.indexOf(envelope.status) >= 0 ? envelope.status : 'failed';
  if (status === 'waiting') {
    call.state = 'waiting';
    return;
  }
  call.state = 'done';
  call.result = { status, seq: ctx.event.seq };
  delete call.args;
  state.turn.next += 1;
  const tool = findTool(state, call.name);
  if (tool !== null && tool.ends_run !== undefined && status === 'succeeded') {
    const payload = envelope.payload;
    const detail = typeof payload === 'string' && payload !== '' ? `: ${payload}` : '';
    finish(ctx, 'complete', tool.ends_run, `Ended by ${call.name}${detail}`);
    return;
  }
  advance(ctx);
}

function onRequestResolved(ctx) {
  const state = ctx.state;
  const data = ctx.data;
  if (data.kind === 'input') {
    if (state.phase !== 'user' || !isAwaited(ctx, true)) return notAwaited(ctx);
    state.streak = { key: '', count: 0 };
    state.steer_seq = 0;
    requestModelTurn(ctx, false);
    return;
  }
  if (data.kind === 'approval') {
    if (state.phase !== 'tool' || currentCall(state) === null || !isAwaited(ctx, true))
      return notAwaited(ctx);
    if (data.decision !== 'rejected') return IGNORED;
    const reason = typeof data.reason === 'string' && data.reason !== '' ? ` (${data.reason})` : '';
    answerCurrentAndAdvance(
      ctx,
      'refused',
      `Not executed: the user did not approve this call${reason}. Do not repeat it unless the user asks for it.`,
    );
    return;
  }
  return ignore(ctx, 'request_kind_unknown', `request_resolved of kind ${data.kind} ignored`);
}

function onRequestClosed(ctx) {
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
    finish(ctx, 'complete', 'blocked', 'The user did not answer before the question expired.');
    return;
  }
  if (call.state === 'waiting') {
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

function onUserInput(ctx) {
  const state = ctx.state;
  const open = Array.isArray(ctx.run.open_requests) ? ctx.run.open_requests : [];
  state.streak = { key: '', count: 0 };
  const interrupts = state.phase === 'user' || (state.phase === 'tool' && open.length > 0);
  if (!interrupts) {
    // A model turn or a tool call is in progress: the next model turn will see the steer.
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

function onOperationFailed(ctx) {
  const state = ctx.state;
  if (state.phase === 'user' || !isAwaited(ctx, false)) return notAwaited(ctx);
  const data = ctx.data;
  const errorClass = typeof data.error_class === 'string' ? data.error_class : 'error';
  const message = typeof data.message === 'string' ? data.message : '';
  const retryable = data.retryable === true;
  const unknown = data.outcome_unknown === true;
  if (state.phase === 'model') {
    if ((retryable || unknown) && state.model_attempt <= state.max_retries) {
      state.model_attempt += 1;
      reissue(ctx);
    } else {
      finish(ctx, 'fail', 'model_turn_failed', `${errorClass}: ${message}`);
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
  if (retryable && retriesLeft) {
    issueCall(ctx, call, tool);
    return;
  }
  answerCurrentAndAdvance(ctx, 'error', `Error (${errorClass}): ${message}`);
}

function onOperationCancelled(ctx) {
  const state = ctx.state;
  if (state.phase === 'user' || !isAwaited(ctx, false)) return notAwaited(ctx);
  if (ctx.run.status === 'running') {
    reissue(ctx);
    return;
  }
  state.interrupted = true;
}

function onResumed(ctx) {
  const state = ctx.state;
  const hadBudget = state.budget !== null;
  state.budget = null;
  if (state.interrupted && (state.phase === 'model' || state.phase === 'tool')) {
    reissue(ctx);
    return;
  }
  if (!hadBudget) return IGNORED;
}

function onBudgetExceeded(ctx) {
  const data = ctx.data;
  ctx.state.budget = {
    which: typeof data.which === 'string' ? data.which : 'unknown',
    limit: typeof data.limit === 'number' ? data.limit : 0,
    used: typeof data.used === 'number' ? data.used : 0,
  };
}

function onStopped(ctx) {
  const state = ctx.state;
  state.phase = 'stopped';
  state.awaiting = null;
}

// ---------------------------------------------------------------- projection

/** The plan the UI shows: one item per call of the current turn, then the reply. */
function project(state) {
  const items = [];
  let done = 0;
  const calls = state.turn !== null ? state.turn.calls : [];
  for (const call of calls) {
    const status = callStatus(state, call);
    if (call.state === 'done') done += 1;
    items.push({
      key: `call:${call.call_id}`,
      title: `Call ${call.name || '(unnamed tool)'}`,
      status,
      detail: {
        call_id: call.call_id,
        tool: call.name,
        attempts: call.attempts,
        result: call.result ? call.result.status : null,
      },
    });
  }
  items.push({
    key: 'respond',
    title: state.mode === 'task' ? 'Finish the task' : 'Reply to the user',
    status: respondStatus(state),
  });
  return { items, summary: summary(state, done, calls.length) };
}

function callStatus(state, call) {
  if (call.state === 'pending') return state.phase === 'stopped' ? 'stopped' : 'pending';
  if (call.state === 'waiting') return state.phase === 'stopped' ? 'stopped' : 'waiting';
  if (call.state === 'running') {
    if (state.phase === 'stopped') return 'stopped';
    return state.budget !== null ? 'paused' : 'in_progress';
  }
  const result = call.result ? call.result.status : 'error';
  if (result === 'succeeded') return 'completed';
  if (result === 'not_executed' || result === 'blocked') return 'blocked';
  return 'failed';
}

function respondStatus(state) {
  switch (state.phase) {
    case 'model':
      return state.budget !== null ? 'paused' : 'in_progress';
    case 'tool':
      return 'pending';
    case 'user':
      return 'waiting';
    case 'stopped':
      return 'stopped';
    default:
      if (state.outcome === 'failed') return 'failed';
      if (state.outcome === 'blocked') return 'blocked';
      return 'completed';
  }
}

function summary(state, done, total) {
  const calls = total > 0 ? ` (${done} of ${total} tool calls done)` : '';
  if (state.budget !== null) {
    return `Paused: budget ${state.budget.which} exceeded (used ${state.budget.used} of ${state.budget.limit})`;
  }
  switch (state.phase) {
    case 'model':
      return `Thinking${calls}`;
    case 'tool':
      return `Running tools${calls}`;
    case 'user':
      return 'Waiting for the user';
    case 'stopped':
      return `Stopped${calls}`;
    default:
      return state.outcome === 'failed' ? 'Failed' : `Completed (${state.outcome})`;
  }
}

// ---------------------------------------------------------------- helpers

function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isInt(value) {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function clone(value) {
  return JSON.parse(JSON.stringify(value));
}

function clip(text, max) {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Canonical JSON: object keys sorted by UTF-16 code units, no whitespace (RFC 8785 for JSON input). */
function canonical(value) {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const keys = Object.keys(value)
    .filter((key) => value[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(',')}}`;
}

/** UTF-8 byte length of `text` (native encoder; a lone surrogate counts 3 bytes like U+FFFD). */
function utf8Length(text) {
  try {
    return unescape(encodeURIComponent(text)).length;
  } catch {
    let bytes = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code < 0x80) bytes += 1;
      else if (code < 0x800) bytes += 2;
      else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) {
          bytes += 4;
          i += 1;
        } else bytes += 3;
      } else bytes += 3;
    }
    return bytes;
  }
}

/** A 64-bit fingerprint (two 32-bit FNV-1a/murmur-mixed lanes, hex) of a call's name and canonical args. */
function fingerprint(name, args) {
  const text = canonical({ args: args === undefined ? null : args, name });
  let h1 = 0x811c9dc5;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ code, 0x01000193);
    h2 = Math.imul(h2 ^ code, 0x5bd1e995);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b) ^ Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x85ebca6b) ^ Math.imul(h1 ^ (h1 >>> 13), 0xc2b2ae35);
  return hex32(h1) + hex32(h2);
}

function hex32(value) {
  return `00000000${(value >>> 0).toString(16)}`.slice(-8);
}
