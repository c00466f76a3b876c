/**
 * Recorded tau-bench airline conversations prepared for replay: the run each one becomes
 * (subject, instructions, first input, the 14 tools), the people around the agent (customer
 * replies), the world (recorded tool outputs in call order), and what the oracle expects.
 * Data: data/tau-bench-airline in this repository (README there describes the format).
 */
import type { ContextMessage } from '../contracts/index.ts';
import {
  type TauRecordedConversation,
  type TauTrajectory,
  toRecordedConversation,
} from '../models/tau-bench.ts';
import type { AgentLoopToolEntry } from '../reducers/index.ts';

/** The six tools that change the booking database (README of the data set). */
export const MUTATING_TOOLS: ReadonlySet<string> = new Set([
  'book_reservation',
  'cancel_reservation',
  'update_reservation_baggages',
  'update_reservation_flights',
  'update_reservation_passengers',
  'send_certificate',
]);

/** The hand-off tool: a succeeded call ends the conversation (the run completes). */
export const HANDOFF_TOOL = 'transfer_to_human_agents';

export const REPLAY_WORKSPACE = 'tau-bench-airline';

export interface RecordedToolCall {
  /** Index of the tool message in the recording (the transcript position of its result). */
  position: number;
  call_id: string;
  name: string;
  args: Record<string, unknown>;
  output: string;
}

export interface ReplayConversation {
  key: string;
  task_id: number;
  trial: number;
  recording: TauRecordedConversation;
  /** The trajectory's `info` (the task, its ground-truth actions and outputs), opaque here. */
  info: Record<string, unknown>;
  subject: { workspace: string; path: string };
  instructions: string;
  firstInput: string;
  /** Customer messages after the first, in order. */
  replies: string[];
  /** For each reply: whether a recorded assistant message follows it (else the recording is exhausted there). */
  replyAnswered: boolean[];
  toolCalls: RecordedToolCall[];
  modelTurns: number;
  /** The final status the oracle expects. */
  expectedStatus: 'completed' | 'stopped';
  /** The transcript the run must end with: the recording up to its last non-customer message. */
  expectedTranscript: ContextMessage[];
}

export function subjectOf(traj: Pick<TauTrajectory, 'task_id' | 'trial'>): {
  workspace: string;
  path: string;
} {
  return { workspace: REPLAY_WORKSPACE, path: `/tasks/${traj.task_id}/trials/${traj.trial}` };
}

/** The recording key of a replay run's subject (inverse of subjectOf). */
export function keyOfSubject(subject: { path: string } | undefined): string | null {
  const m = subject?.path.match(/^\/tasks\/(\d+)\/trials\/(\d+)$/);
  return m ? `${m[1]}:${m[2]}` : null;
}

/** Prepares one trajectory. Throws when it does not start with system + user messages. */
export function prepareConversation(traj: TauTrajectory): ReplayConversation {
  const recording = toRecordedConversation(traj);
  const messages = recording.messages;
  const [system, first] = messages;
  if (system?.role !== 'system' || first?.role !== 'user') {
    throw new Error(`conversation ${recording.key} does not start with a system and a customer message`);
  }
  const replies: string[] = [];
  const replyAnswered: boolean[] = [];
  const toolCalls: RecordedToolCall[] = [];
  const callsById = new Map<string, { name: string; args: Record<string, unknown> }>();
  messages.forEach((m, i) => {
    if (m.role === 'user' && i > 1) {
      replies.push(m.content);
      replyAnswered.push(messages.slice(i + 1).some((x) => x.role === 'assistant'));
    }
    if (m.role === 'assistant')
      for (const c of m.tool_calls) callsById.set(c.call_id, { name: c.name, args: c.args });
    if (m.role === 'tool') {
      const call = callsById.get(m.call_id);
      toolCalls.push({
        position: i,
        call_id: m.call_id,
        name: m.name,
        args: call?.args ?? {},
        output: m.content,
      });
    }
  });
  let end = messages.length;
  while (end > 0 && messages[end - 1]?.role === 'user') end -= 1;
  const last = messages[messages.length - 1];
  const handedOff = last?.role === 'tool' && last.name === HANDOFF_TOOL;
  return {
    key: recording.key,
    task_id: traj.task_id,
    trial: traj.trial,
    recording,
    info: traj.info,
    subject: subjectOf(traj),
    instructions: system.content,
    firstInput: first.content,
    replies,
    replyAnswered,
    toolCalls,
    modelTurns: messages.filter((m) => m.role === 'assistant').length,
    expectedStatus: handedOff ? 'completed' : 'stopped',
    expectedTranscript: messages.slice(0, end),
  };
}

/**
 * The reducer's tool entries for the 14 airline tools (schemas from tools.json). Every tool is
 * replay-safe (the mutating ones key their change on the op_id) unless named in
 * `notReplaySafe`: a started call of such a tool is abandoned on takeover and reaches the
 * reducer as outcome_unknown.
 */
export function agentLoopTools(
  tools: { name: string; description?: string; schema: Record<string, unknown> }[],
  notReplaySafe: ReadonlySet<string> = new Set(),
): AgentLoopToolEntry[] {
  return tools.map((t) => ({
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    schema: t.schema,
    kind: 'function' as const,
    mutating: MUTATING_TOOLS.has(t.name),
    replay_safe: !notReplaySafe.has(t.name),
    ...(t.name === HANDOFF_TOOL ? { ends_run: 'partial' as const } : {}),
  }));
}
