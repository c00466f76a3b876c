/**
 * The benchmark's verdict, recomputed: a conversation is correct when the database after the
 * agent's tool calls equals the database after the task's ground-truth actions
 * (`info.task.actions`, run in order with the same tools on a fresh copy, the terminating
 * `transfer_to_human_agents` skipped), compared with object key order ignored and list order
 * kept; and, when `info.task.outputs` is not empty, each output, lowercased, is contained in
 * some text reply of the agent to the customer (an assistant message without tool calls),
 * lowercased with commas removed. Reward 1 when both hold, else 0. Data set README,
 * "The benchmark's judge"; tau-bench `Env.calculate_reward`.
 */
import { z } from 'zod';
import type { ContextMessage } from '../../contracts/index.ts';
import { type AirlineBase, AirlineStore, compareStores, type RecordDifference } from './database.ts';
import { AIRLINE_TOOLS, runTool } from './tools.ts';

/** The benchmark's tools that end the episode; ground truth does not run them. */
const TERMINATE_TOOLS: ReadonlySet<string> = new Set(['transfer_to_human_agents']);

/** The part of a trajectory's `info` the judge reads. */
export const TauTaskInfo = z.object({
  task: z.object({
    actions: z.array(z.object({ name: z.string(), kwargs: z.record(z.string(), z.unknown()) })),
    outputs: z.array(z.string()).default([]),
  }),
  /** Absent or null when the benchmark never judged the conversation (it ran out of steps). */
  reward_info: z.unknown().optional(),
});
export type TauTaskInfo = z.infer<typeof TauTaskInfo>;

/** The recomputed verdict of one conversation. */
export interface Verdict {
  /** 1 when the database and the outputs rule both hold, else 0. */
  reward: 0 | 1;
  /** The final database equals the ground-truth database. */
  database_matches: boolean;
  /** Records that differ (path, canonical JSON on each side; left = the run, right = ground truth). */
  differences: RecordDifference[];
  /** Each required output and whether some reply said it (empty when the task has none). */
  outputs: Record<string, boolean>;
  /** The recorded reward, and whether the benchmark computed it (false: it ran out of steps). */
  recorded_reward: number;
  recorded_judged: boolean;
  agrees: boolean;
}

/** The database after the task's ground-truth actions, on a fresh copy of `base`. Unknown actions change nothing. */
export function groundTruthStore(base: AirlineBase, actions: TauTaskInfo['task']['actions']): AirlineStore {
  const store = new AirlineStore(base);
  for (const action of actions) {
    const tool = AIRLINE_TOOLS.get(action.name);
    if (tool === undefined || TERMINATE_TOOLS.has(action.name)) continue;
    const tx = store.begin();
    runTool(tool, tx, action.kwargs);
    store.commit(tx, undefined);
  }
  return store;
}

/** The agent's text replies to the customer: assistant messages without tool calls. */
export function agentReplies(transcript: readonly ContextMessage[]): string[] {
  return transcript.flatMap((m) =>
    m.role === 'assistant' && m.tool_calls.length === 0 && typeof m.content === 'string' ? [m.content] : [],
  );
}

/** The outputs rule: each output, lowercased, in some reply lowercased with commas removed. */
export function outputsSaid(outputs: readonly string[], replies: readonly string[]): Record<string, boolean> {
  const said = replies.map((r) => r.toLowerCase().replaceAll(',', ''));
  return Object.fromEntries(outputs.map((o) => [o, said.some((r) => r.includes(o.toLowerCase()))]));
}

/**
 * Judges one conversation: `final` is the run's database, `transcript` the run's messages,
 * `info` the trajectory's info, `recordedReward` its reward.
 */
export function judgeConversation(
  final: AirlineStore,
  transcript: readonly ContextMessage[],
  info: TauTaskInfo,
  recordedReward: number,
): Verdict {
  const truth = groundTruthStore(final.base, info.task.actions);
  const differences = compareStores(final, truth);
  const outputs = outputsSaid(info.task.outputs, agentReplies(transcript));
  const reward = differences.length === 0 && Object.values(outputs).every(Boolean) ? 1 : 0;
  return {
    reward,
    database_matches: differences.length === 0,
    differences,
    outputs,
    recorded_reward: recordedReward,
    recorded_judged: info.reward_info !== undefined && info.reward_info !== null,
    agrees: reward === recordedReward,
  };
}
