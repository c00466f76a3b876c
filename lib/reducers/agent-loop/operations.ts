/**
 * The effects that move the loop on: a model turn, a question to the user, the run's end.
 * Each sets the phase and the effect the reducer then waits for.
 */
import { clip } from './json.ts';
import { PLAN_TOOLS } from './plan.ts';
import { emit, type Reduction } from './response.ts';
import type { AgentLoopTool } from './state.ts';
import { toolResults } from './turn.ts';

/** The longest summary of complete and message of fail. */
const MAX_SUMMARY_CHARS = 2000;

/**
 * Asks for a model turn answering every call of the current turn:
 * `{tools_offered, instructions?, tool_results, context: {transcript: {from_seq: 1, to_seq}, mode, objective?}}`,
 * the transcript cut at this event, preceded by `checkpoint {reason: 'compaction'}` when the last
 * model turn reported input_tokens >= context.compact_above_tokens. `retry` keeps the attempt count.
 */
export function requestModelTurn(ctx: Reduction, retry: boolean): void {
  const state = ctx.state;
  state.phase = 'model';
  state.cutoff_seq = ctx.event.seq;
  state.interrupted = false;
  if (!retry) state.model_attempt = 1;
  const context: Record<string, unknown> = {
    transcript: { from_seq: 1, to_seq: state.cutoff_seq },
    mode: state.mode,
  };
  if (state.objective !== undefined) context.objective = state.objective;
  if (state.compact === true) {
    // Core runs a compaction before this model turn; the turn is then compiled from its checkpoint.
    delete state.compact;
    emit(ctx, { kind: 'checkpoint', reason: 'compaction' });
  }
  state.awaiting = emit(ctx, {
    kind: 'request_model_turn',
    tools_offered:
      state.plan_mode !== undefined ? [...state.tools.map(offered), ...PLAN_TOOLS] : state.tools.map(offered),
    tool_results: toolResults(state.turn),
    context,
    ...(state.instructions !== undefined && { instructions: state.instructions }),
  });
}

/** What the model is offered of a tool: name, kind, schema, function_path?, description?. */
function offered(tool: AgentLoopTool) {
  return {
    name: tool.name,
    kind: tool.kind,
    schema: tool.schema,
    ...(tool.function_path !== undefined && { function_path: tool.function_path }),
    ...(tool.description !== undefined && { description: tool.description }),
  };
}

/** Asks the user `question` (the reply of a conversation, or a loop's way out). */
export function askUser(ctx: Reduction, question: string): void {
  const state = ctx.state;
  state.phase = 'user';
  state.awaiting = emit(ctx, { kind: 'ask_user', question });
}

/**
 * Ends the run: complete{outcome, summary?, artifacts?, evidence?}; the summary at most 2,000
 * characters. `proof` carries what verified completion checked (absent otherwise).
 */
export function complete(
  ctx: Reduction,
  outcome: 'succeeded' | 'partial' | 'blocked',
  text: string,
  proof?: { artifacts: unknown[]; evidence: unknown[] },
): void {
  end(ctx);
  ctx.state.outcome = outcome;
  emit(ctx, {
    kind: 'complete',
    outcome,
    ...(text !== '' && { summary: clip(text, MAX_SUMMARY_CHARS) }),
    ...(proof !== undefined && { artifacts: proof.artifacts, evidence: proof.evidence }),
  });
}

/** Ends the run: fail{code, message}; the message at most 2,000 characters. */
export function fail(ctx: Reduction, code: string, message: string): void {
  end(ctx);
  ctx.state.outcome = 'failed';
  emit(ctx, { kind: 'fail', code, message: clip(message, MAX_SUMMARY_CHARS) });
}

function end(ctx: Reduction): void {
  ctx.state.phase = 'ended';
  ctx.state.awaiting = null;
}
