/**
 * Running a model turn's tool calls, one at a time in order: reading them from the turn (bad
 * ones answered at once), issuing call_tool (for_call_id = call_id), re-issuing, and moving on
 * to the next call or the next model turn. At most 32 calls of one turn run; further ones, calls with non-object args and
 * calls to unknown tools are answered by the reducer without a call_tool. Model-supplied
 * `__raisin_context` args are dropped.
 */
import { clone, isObject, type JsonRecord, utf8Length } from './json.ts';
import { countRepeat, loopDetected } from './loop-detection.ts';
import { requestModelTurn } from './operations.ts';
import { GATED_NOTE, isPlanCall, planGateClosed, runPlanCall } from './plan.ts';
import { diag, emit, type Reduction } from './response.ts';
import type { AgentLoopCall, AgentLoopTool } from './state.ts';
import { answer, currentCall, findTool } from './turn.ts';
import { issueVerifier } from './verification.ts';

const MAX_CALLS_PER_TURN = 32;
const MAX_TURN_ARGS_BYTES = 64 * 1024;
/** Args the runtime adds itself; a model must not set them. */
const RUN_CONTEXT_KEY = '__raisin_context';

/** The calls of a model turn, each {call_id, name, args?, state, attempts, result?}; bad ones pre-answered. */
export function readCalls(ctx: Reduction, raw: unknown[]): AgentLoopCall[] {
  const calls: AgentLoopCall[] = [];
  const ids = new Set<string>();
  let argsBytes = 0;
  for (let i = 0; i < raw.length; i++) {
    const item = raw[i];
    if (!isObject(item) || typeof item.call_id !== 'string' || item.call_id === '') {
      ctx.diagnostics.push(
        diag('tool_call_invalid', 'warning', `tool_calls[${i}] has no call_id; dropped`, ctx.event),
      );
      continue;
    }
    if (ids.has(item.call_id)) {
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
    ids.add(item.call_id);
    const name = typeof item.name === 'string' ? item.name : '';
    const call: AgentLoopCall = { call_id: item.call_id, name, state: 'pending', attempts: 0 };
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
    const args: JsonRecord = clone(item.args);
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

/** Issues call_tool for `call` (a first attempt or a re-issue). */
export function issueCall(ctx: Reduction, call: AgentLoopCall, tool: AgentLoopTool): void {
  const state = ctx.state;
  const effectId = emit(ctx, {
    kind: 'call_tool',
    tool: tool.function_path !== undefined ? tool.function_path : tool.name,
    args: call.args ?? {},
    mutating: tool.mutating,
    replay_safe: tool.replay_safe,
    for_call_id: call.call_id,
    ...(tool.interruptible === false && { interruptible: false }),
    ...(tool.timeout_ms !== undefined && { timeout_ms: tool.timeout_ms }),
  });
  call.state = 'running';
  call.attempts += 1;
  if (call.attempts > 1) state.counters.retries += 1;
  else state.counters.tool_calls += 1;
  state.phase = 'tool';
  state.interrupted = false;
  state.awaiting = effectId;
}

/** Re-issues the operation the reducer waits for (after a retryable failure or a cancellation). */
export function reissue(ctx: Reduction): void {
  const state = ctx.state;
  if (state.phase === 'verify') {
    issueVerifier(ctx);
    return;
  }
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
export function advance(ctx: Reduction): void {
  const state = ctx.state;
  const turn = state.turn;
  while (turn !== null && turn.next < turn.calls.length) {
    const call = turn.calls[turn.next];
    if (call === undefined) break;
    if (call.state === 'done') {
      turn.next += 1;
      continue;
    }
    if (isPlanCall(state, call.name)) {
      if (runPlanCall(ctx, call)) return;
      turn.next += 1;
      continue;
    }
    if (planGateClosed(state)) {
      answer(call, 'refused', GATED_NOTE);
      turn.next += 1;
      continue;
    }
    const tool = findTool(state, call.name);
    if (tool === null) {
      answer(call, 'error', `Error: there is no tool named "${call.name}". Use one of the tools offered.`);
      turn.next += 1;
      continue;
    }
    if (countRepeat(state, call)) {
      loopDetected(ctx, call);
      return;
    }
    issueCall(ctx, call, tool);
    return;
  }
  requestModelTurn(ctx, false);
}

/** Answers the current call and moves on (next call or next model turn). */
export function answerCurrentAndAdvance(ctx: Reduction, status: string, content: string): void {
  const state = ctx.state;
  const call = currentCall(state);
  if (call !== null && state.turn !== null) {
    answer(call, status, content);
    state.turn.next += 1;
  }
  advance(ctx);
}
