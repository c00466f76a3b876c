/**
 * Loads the tau-bench airline recordings (sierra-research/tau-bench, MIT: 160 GPT-4o
 * conversations in OpenAI chat format, and the 14 airline tool definitions) and turns them into
 * model-neutral RecordedConversations for the recorded model and the context-compiler tests.
 * Data: data/tau-bench-airline in this repository (README there). Files are read with node:fs and
 * validated with zod safeParse; a file that does not match throws TauBenchFormatError.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { ContextMessage, ToolOffered } from '../contracts/index.ts';
import { ModelsModuleError } from './errors.ts';
import type { RecordedConversation } from './recorded.ts';

/** Stable code of {@link TauBenchFormatError}. */
export const TAU_BENCH_FORMAT = 'tau_bench_format';

/** A tau-bench file (or one conversation) does not have the documented shape. Terminal. */
export class TauBenchFormatError extends ModelsModuleError {
  override readonly name = 'TauBenchFormatError';
  readonly code = TAU_BENCH_FORMAT;
  readonly retryable = false;
}

/** Stable code of {@link DataFileMissingError}. */
export const DATA_FILE_MISSING = 'data_file_missing';

/** A data file the caller named does not exist. Terminal: the message names the file and where the data comes from. */
export class DataFileMissingError extends ModelsModuleError {
  override readonly name = 'DataFileMissingError';
  readonly code = DATA_FILE_MISSING;
  readonly retryable = false;
}

/**
 * Reads a data file as UTF-8 text. A missing file throws DataFileMissingError naming it and how
 * to get the airline data (it ships in the repository at data/tau-bench-airline/); other fs
 * errors are thrown as they are.
 */
export async function readDataFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
    throw new DataFileMissingError(
      `data file missing: ${path}. The tau-bench airline data ships in this repository at ` +
        'data/tau-bench-airline/ (restore it with `git checkout -- data/`, or pass the path of a copy)',
      { cause },
    );
  }
}

const OpenAiToolCall = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

/** One message of a trajectory, in OpenAI chat format. */
export const TauMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(OpenAiToolCall).optional(),
  }),
  z.object({
    role: z.literal('tool'),
    tool_call_id: z.string().min(1),
    name: z.string(),
    content: z.string(),
  }),
]);
export type TauMessage = z.infer<typeof TauMessage>;

/** One recorded conversation: `{task_id, trial, reward, info, traj}` (info is kept opaque). */
export const TauTrajectory = z.object({
  task_id: z.number().int().nonnegative(),
  trial: z.number().int().nonnegative(),
  reward: z.number(),
  info: z.record(z.string(), z.unknown()),
  traj: z.array(TauMessage).min(1),
});
export type TauTrajectory = z.infer<typeof TauTrajectory>;

/** One tool definition in OpenAI function format. */
export const TauTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()),
  }),
});

/** Reads and validates trajectories.json (a JSON array). Throws TauBenchFormatError (or the fs error). */
export async function loadTrajectories(path: string): Promise<TauTrajectory[]> {
  const parsed = z.array(TauTrajectory).safeParse(await readJson(path));
  if (!parsed.success) throw new TauBenchFormatError(`${path}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Reads tools.json and returns the tools as ToolOffered (kind function, schema = parameters). */
export async function loadToolsOffered(path: string): Promise<ToolOffered[]> {
  const parsed = z.array(TauTool).safeParse(await readJson(path));
  if (!parsed.success) throw new TauBenchFormatError(`${path}: ${z.prettifyError(parsed.error)}`);
  return parsed.data.map((t) => ({
    name: t.function.name,
    kind: 'function',
    ...(t.function.description !== undefined && { description: t.function.description }),
    schema: t.function.parameters,
  }));
}

/** The key a trajectory is selected by: `"{task_id}:{trial}"`. */
export function trajectoryKey(traj: Pick<TauTrajectory, 'task_id' | 'trial'>): string {
  return `${traj.task_id}:${traj.trial}`;
}

/** A tau-bench conversation as a RecordedConversation, plus its task id, trial and reward. */
export interface TauRecordedConversation extends RecordedConversation {
  task_id: number;
  trial: number;
  reward: number;
}

/**
 * Converts a trajectory to model-neutral messages: system/user content verbatim; assistant
 * content verbatim (null stays null) with tool calls `{call_id: id, name, args: JSON.parse(arguments)}`
 * (always `tool_calls: []` when there are none); tool messages `{call_id: tool_call_id, name,
 * content}` verbatim. `system` is the first message's content when it is a system message.
 * Throws TauBenchFormatError when tool call arguments are not a JSON object.
 */
export function toRecordedConversation(traj: TauTrajectory): TauRecordedConversation {
  const key = trajectoryKey(traj);
  const messages = traj.traj.map((m, i): ContextMessage => {
    switch (m.role) {
      case 'system':
      case 'user':
        return { role: m.role, content: m.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: m.content,
          tool_calls: (m.tool_calls ?? []).map((c) => ({
            call_id: c.id,
            name: c.function.name,
            args: parseArgs(c.function.arguments, `${key} message ${i} call ${c.id}`),
          })),
        };
    }
    return { role: 'tool', call_id: m.tool_call_id, name: m.name, content: m.content };
  });
  const first = messages[0];
  return {
    key,
    task_id: traj.task_id,
    trial: traj.trial,
    reward: traj.reward,
    system: first?.role === 'system' ? first.content : null,
    messages,
  };
}

function parseArgs(text: string, where: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new TauBenchFormatError(`${where}: arguments are not JSON`, { cause });
  }
  const parsed = z.record(z.string(), z.unknown()).safeParse(value);
  if (!parsed.success) throw new TauBenchFormatError(`${where}: arguments are not a JSON object`);
  return parsed.data;
}

async function readJson(path: string): Promise<unknown> {
  const text = await readDataFile(path);
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new TauBenchFormatError(`${path}: not JSON`, { cause });
  }
}
