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

/** The steer box's words: its label, its button, its placeholder, and what a steer does there. */
export interface SteerWords {
  label: string;
  button: string;
  placeholder: string;
  hint: string;
}

/**
 * What a steer does, by the kind of run: on the default agent reducer's conversation run it is
 * your next message to the agent (a question its last reply left open is withdrawn, and the
 * agent answers the message instead); on a task run it adds to the task between two steps; a
 * client-driven run's own code decides; another reducer's run reads it between two steps.
 * lib/reducers/agent-loop/reduce.ts (user_input); docs/concepts.md, "Operation" (its steers).
 */
export function steerWords(mode: RunMode | null, clientDriven: boolean): SteerWords {
  if (clientDriven) {
    return {
      label: 'Steer the run',
      button: 'Send steer',
      placeholder: "A message for the run's own loop: it is queued until the client's code takes it",
      hint: "A client-driven run's own code decides what a steer does: the message waits, queued, until the client reads it.",
    };
  }
  if (mode === 'conversation') {
    return {
      label: 'Steer the run: your next message to the agent',
      button: 'Send steer (your message)',
      placeholder: 'Your next message in the conversation',
      hint:
        'On a conversation run a steer is your next message to the agent. If its last reply waits ' +
        'for your answer (or an approval is open), that request is withdrawn and the agent answers ' +
        'this message instead; while it is working, it reads the message once its current step ' +
        'ends. The run goes on after its answer: it ends only when someone stops it.',
    };
  }
  const between = 'A message the agent reads between two steps (after the current one ends)';
  if (mode === 'task') {
    return {
      label: 'Steer the run',
      button: 'Send steer',
      placeholder: between,
      hint:
        'On a task run a steer adds to the task: the agent reads it between two steps and takes it ' +
        'into account. A question or approval it waits on is withdrawn, and the model is asked ' +
        'again with your message.',
    };
  }
  return {
    label: 'Steer the run',
    button: 'Send steer',
    placeholder: between,
    hint: "The run's reducer reads the message between two steps and decides what it changes.",
  };
}
