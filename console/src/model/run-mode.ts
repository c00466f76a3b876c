/**
 * The default agent reducer's two modes, in words for the person a question is put to
 * (lib/reducers/agent-loop/context-schema.ts: `context.mode`, default conversation). The mode
 * is read from the run's first event (run_started `data.context.mode`); a run of another
 * reducer has none. Pure.
 */
import type { RunEvent } from '../../../lib/contracts/index.ts';

export type RunMode = 'conversation' | 'task';

/** What a question means in each mode. */
export const MODE_WORDS: Record<RunMode, string> = {
  conversation:
    'Conversation mode: every reply of the agent is a question to you, and the run waits for your answer. ' +
    'It does not end by itself; stop it when the conversation is over.',
  task:
    'Task mode: the agent works on its own until the task is done, and asks only when it cannot go on ' +
    'without you. Your answer lets it continue.',
};

/** The mode of the run whose run_started event is `first` (null: not the agent reducer's, or not known). */
export function runModeOf(
  first: Pick<RunEvent, 'kind' | 'data'> | undefined,
  agentReducer: boolean,
): RunMode | null {
  if (first === undefined || first.kind !== 'run_started' || !agentReducer) return null;
  const context = first.data.context;
  const mode =
    context !== null && typeof context === 'object' && !Array.isArray(context)
      ? (context as { mode?: unknown }).mode
      : undefined;
  if (mode === 'task' || mode === 'conversation') return mode;
  return mode === undefined ? 'conversation' : null;
}
