/**
 * The recorded model: a model-turn function that answers from a recorded conversation instead
 * of calling a provider, and refuses (divergence) as soon as the run's transcript leaves the
 * recording. It is how production traces are replayed with external calls disabled.
 *
 * docs/architecture.md, "The seams of a step" (recorded model outputs for the reducer
 * and the decoder; a replay of recorded runs with the outside world switched off);
 * docs/contracts/model-turn.md.
 */
import type { CompiledContext, ContextMessage, RunEvent } from '../contracts/index.ts';
import { canonicalJson } from '../core/canonical.ts';
import {
  type Divergence,
  estimateTokens,
  failure,
  type ModelTurnFunction,
  type ModelTurnResult,
  messageChars,
} from './types.ts';

/**
 * A recorded conversation in model-neutral form. `messages` is the whole transcript, starting
 * with the system message when there is one (its text is also in `system`, to pass as the
 * run's instructions so the compiled transcript starts the same way).
 */
export interface RecordedConversation {
  /** Key the run selects it by (`executor_config.recording`). */
  key: string;
  system: string | null;
  messages: ContextMessage[];
}

/** The executor_config field that names the recording to replay. */
export const RECORDING_CONFIG_KEY = 'recording';

/**
 * Creates the recorded model over `conversations` (key → recording). On each call:
 * - the recording is `conversations.get(input.executor_config.recording)`; missing or unknown →
 *   ModelTurnError recording_not_found (not retryable);
 * - n = number of assistant messages in `context.messages`; the answer is the recording's
 *   (n+1)-th assistant message, provided `context.messages` equals the recording's messages
 *   before it (role, content, tool calls by call_id/name/args, tool call_id/name; args compared
 *   as canonical JSON). The first difference → ModelTurnError divergence (not retryable) with
 *   `divergence: {position, expected, got}`. No (n+1)-th assistant message and no difference →
 *   recording_exhausted (not retryable);
 * - the answer carries the recorded text (null when none), tool calls with the recorded ids,
 *   finish_reason `tool_calls` when there are calls else `stop`, and usage estimated as chars/4
 *   (`usage_fidelity: 'estimated'`);
 * - an already aborted signal → cancelled (not retryable).
 */
export function createRecordedModel(
  conversations: ReadonlyMap<string, RecordedConversation>,
): ModelTurnFunction {
  return async (input, context, signal) => {
    if (signal.aborted) return failure('cancelled', 'the model turn was cancelled before it started', false);
    const key = input.executor_config[RECORDING_CONFIG_KEY];
    if (typeof key !== 'string') {
      return failure(
        'recording_not_found',
        `executor_config.${RECORDING_CONFIG_KEY} must name a recording`,
        false,
      );
    }
    const recording = conversations.get(key);
    if (recording === undefined) return failure('recording_not_found', `no recording with key ${key}`, false);

    const turn = replayTurn(recording, context);
    if (turn.kind === 'divergence') {
      const { position } = turn.divergence;
      return failure(
        'divergence',
        `transcript diverges from recording ${key} at message ${position}`,
        false,
        { divergence: turn.divergence },
      );
    }
    if (turn.kind === 'exhausted') {
      return failure(
        'recording_exhausted',
        `recording ${key} has no assistant message after the ${turn.assistants} already in the transcript`,
        false,
      );
    }
    const answer = turn.message;
    const inputChars = context.messages.reduce((n, m) => n + messageChars(m), 0);
    const result: ModelTurnResult = {
      message: { text: answer.content },
      tool_calls: answer.tool_calls.map((c) => ({ call_id: c.call_id, name: c.name, args: c.args })),
      finish_reason: answer.tool_calls.length > 0 ? 'tool_calls' : 'stop',
      usage: {
        input_tokens: estimateTokens(inputChars),
        output_tokens: estimateTokens(messageChars(answer)),
      },
      usage_fidelity: 'estimated',
      call: { provider: 'recorded', model_id: `recording:${key}`, attempts: 1 },
    };
    return result;
  };
}

type AssistantMessage = Extract<ContextMessage, { role: 'assistant' }>;

/** The outcome of matching a transcript against a recording. */
export type ReplayTurn =
  | { kind: 'answer'; position: number; message: AssistantMessage }
  | { kind: 'divergence'; divergence: Divergence }
  | { kind: 'exhausted'; assistants: number };

/**
 * Matches `context.messages` against `recording.messages` (see createRecordedModel) and returns
 * the recorded assistant answer with its index, the first divergence, or exhaustion. Pure.
 */
export function replayTurn(recording: RecordedConversation, context: CompiledContext): ReplayTurn {
  const got = context.messages;
  const assistants = got.filter((m) => m.role === 'assistant').length;
  const position = nthAssistantIndex(recording.messages, assistants);
  const prefixLength = position ?? recording.messages.length;
  const compared =
    position === undefined ? Math.min(got.length, prefixLength) : Math.max(got.length, prefixLength);
  for (let i = 0; i < compared; i++) {
    const expected = i < prefixLength ? recording.messages[i] : undefined;
    const actual = got[i];
    if (expected === undefined || actual === undefined || !sameMessage(expected, actual)) {
      return {
        kind: 'divergence',
        divergence: { position: i, expected: recording.messages[i] ?? null, got: actual ?? null },
      };
    }
  }
  if (position === undefined) return { kind: 'exhausted', assistants };
  const message = recording.messages[position];
  if (message?.role !== 'assistant') return { kind: 'exhausted', assistants };
  return { kind: 'answer', position, message };
}

function nthAssistantIndex(messages: readonly ContextMessage[], n: number): number | undefined {
  let seen = 0;
  for (let i = 0; i < messages.length; i++) {
    if (messages[i]?.role !== 'assistant') continue;
    if (seen === n) return i;
    seen++;
  }
  return undefined;
}

/** Deep equality of two messages on the fields a model sees (args compared as canonical JSON). */
export function sameMessage(a: ContextMessage, b: ContextMessage): boolean {
  return canonicalJson(comparable(a)) === canonicalJson(comparable(b));
}

function comparable(m: ContextMessage): unknown {
  switch (m.role) {
    case 'assistant':
      return {
        role: m.role,
        content: m.content,
        tool_calls: m.tool_calls.map((c) => ({ call_id: c.call_id, name: c.name, args: c.args })),
      };
    case 'tool':
      return { role: m.role, call_id: m.call_id, name: m.name, content: m.content };
    default:
      return { role: m.role, content: m.content };
  }
}

/** Options of {@link eventsFromRecording}. */
export interface EventsFromRecordingOptions {
  /** Number of messages of the recording to turn into events (default: all). */
  upTo?: number | undefined;
  /** `at` of every event (ms epoch; default 0): the log is synthetic. */
  at?: number | undefined;
}

/**
 * Synthesizes the run event log a recorded conversation would leave, as a runtime driving it
 * would write it: the first user message → run_started{input}; each assistant message →
 * model_turn_completed (with a request_opened + request_resolved{kind: input} pair when the next
 * message is a user answer to an assistant question, i.e. an assistant message without tool
 * calls); every other user message → steer_queued + steer_consumed; each tool message →
 * operation_started + tool_result. A tool output `Error: <m>` is recorded as a failed envelope
 * with diagnostic `<m>` and no payload (the compiler renders it back as `Error: <m>`); any other
 * output as a succeeded envelope with the string payload. Bookkeeping events
 * (operation_started, request_opened, steer_queued) are included so the compiler must skip them.
 * The system message is not an event (it is the run's instructions). Seqs start at 1.
 */
export function eventsFromRecording(
  recording: RecordedConversation,
  opts: EventsFromRecordingOptions = {},
): RunEvent[] {
  const at = opts.at ?? 0;
  const messages = recording.messages.slice(0, opts.upTo ?? recording.messages.length);
  const events: RunEvent[] = [];
  const add = (
    kind: RunEvent['kind'],
    data: Record<string, unknown>,
    extra: Partial<RunEvent> = {},
  ): void => {
    events.push({ seq: events.length + 1, kind, at, data, ...extra });
  };
  let started = false;
  let ops = 0;
  let previous: ContextMessage | undefined;
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user': {
        if (!started) {
          add('run_started', { input: message.content });
          started = true;
        } else if (previous?.role === 'assistant' && previous.tool_calls.length === 0) {
          const request_id = `req/${events.length}`;
          add('request_opened', { request_id, kind: 'input' });
          // Answers alternate between the two input shapes the compiler accepts.
          const value = events.length % 2 === 0 ? message.content : { text: message.content };
          add('request_resolved', { request_id, kind: 'input', value });
        } else {
          const steer_id = `steer/${events.length}`;
          add('steer_queued', { steer_id });
          add('steer_consumed', { steer_id, input: message.content });
        }
        break;
      }
      case 'assistant': {
        ops++;
        const op = `op/${ops}`;
        add('operation_started', { kind: 'model_turn' }, { operation_id: op });
        add(
          'model_turn_completed',
          {
            message: { text: message.content },
            tool_calls: message.tool_calls.map((c) => ({ call_id: c.call_id, name: c.name, args: c.args })),
            finish_reason: message.tool_calls.length > 0 ? 'tool_calls' : 'stop',
            usage: { input_tokens: 0, output_tokens: 0 },
          },
          { operation_id: op },
        );
        break;
      }
      case 'tool': {
        ops++;
        const op = `op/${ops}`;
        add('operation_started', { kind: 'tool_call', call_id: message.call_id }, { operation_id: op });
        const isError = message.content.startsWith('Error: ');
        const envelope = isError
          ? {
              envelope: 'raisin.tool-result/1',
              operation_id: op,
              status: 'failed',
              diagnostics: [{ code: 'tool_error', severity: 'error', message: message.content.slice(7) }],
              error_class: 'tool_error',
            }
          : {
              envelope: 'raisin.tool-result/1',
              operation_id: op,
              status: 'succeeded',
              payload: message.content,
            };
        add('tool_result', { call_id: message.call_id, tool: message.name, envelope }, { operation_id: op });
        break;
      }
    }
    previous = message;
  }
  return events;
}
