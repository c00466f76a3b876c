/**
 * Bookkeeping of the current turn's calls: which call is in progress, answering a call without
 * running it, skipping the rest, and the tool_results list the next model turn reads. A call the
 * reducer answers itself drops its args and keeps a note (at most 1,000 characters) the model
 * will see.
 */
import { clip } from './json.ts';
import type { AgentLoopCall, AgentLoopState, AgentLoopTool, AgentLoopTurn } from './state.ts';

/** The longest note the reducer answers a call with, or puts in a capability gap. */
export const MAX_NOTE_CHARS = 1000;

/** The call in progress (the turn's `next`), or null when every call was answered. */
export function currentCall(state: AgentLoopState): AgentLoopCall | null {
  const turn = state.turn;
  if (turn === null || turn.next >= turn.calls.length) return null;
  return turn.calls[turn.next] ?? null;
}

/** The tool named `name` in the context, or null. */
export function findTool(state: AgentLoopState, name: string): AgentLoopTool | null {
  for (const tool of state.tools) if (tool.name === name) return tool;
  return null;
}

/** Marks `call` answered by the reducer itself with a note the model will see. */
export function answer(call: AgentLoopCall, status: string, content: string): void {
  call.state = 'done';
  call.result = { status, content: clip(content, MAX_NOTE_CHARS) };
  delete call.args;
}

/** Answers every call of the turn not answered yet with `content` (not_executed). */
export function skipRemaining(state: AgentLoopState, content: string): void {
  const turn = state.turn;
  if (turn === null) return;
  for (const call of turn.calls) if (call.state !== 'done') answer(call, 'not_executed', content);
  turn.next = turn.calls.length;
}

/** One entry of request_model_turn's tool_results. */
export type ToolResultEntry = {
  call_id: string;
  name: string;
  status: string;
  /** The tool_result event that answered the call. */
  seq?: number;
  /** The reducer's own answer (refused, error, outcome_unknown, not_executed). */
  content?: string;
};

/** Every call of `turn`: `{call_id, name, status, seq}` or `{call_id, name, status, content}`. */
export function toolResults(turn: AgentLoopTurn | null): ToolResultEntry[] {
  if (turn === null) return [];
  return turn.calls.map((call) => {
    const result = call.result || { status: 'not_executed', content: 'Not executed.' };
    const ref: ToolResultEntry = { call_id: call.call_id, name: call.name, status: result.status };
    if (result.seq !== undefined) ref.seq = result.seq;
    if (result.content !== undefined) ref.content = result.content;
    return ref;
  });
}
