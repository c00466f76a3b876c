/**
 * The context compiler: a pure function from a run's persisted event log to the model-neutral
 * transcript of a model turn, plus a manifest of what it included.
 *
 * docs/architecture.md, "The seams of a step" (the context compiler: a pure
 * function from the log to the model's input, with a manifest of what it included);
 * docs/contracts/reducer.md (event kinds and their data); docs/contracts/model-turn.md
 * (the transcript is compiled from the event log).
 *
 * Which events become which message (events are read in seq order; any other kind is skipped
 * and does not appear in the manifest):
 *
 * | event                                   | message                                            |
 * |-----------------------------------------|----------------------------------------------------|
 * | (opts.instructions)                     | system: the instructions (first; not in manifest)  |
 * | run_started                             | user: `data.input` as user text (see below)        |
 * | steer_consumed                          | user: `data.input` as user text                    |
 * | request_resolved, kind input            | user: `data.value` as user text (the answer)       |
 * | model_turn_completed                    | assistant: `data.message.text` (null when absent), |
 * |                                         | `data.tool_calls` [{call_id, name, args}]          |
 * | tool_result with call_id, not waiting   | tool: call_id, name, content = tool-visible text   |
 * | operation_failed with data.call_id,     | tool: call_id, name, `Error: <data.message>`       |
 * |   final for its call (see below)        |                                                    |
 * | (opts.answers, see below)               | tool: call_id, name, the answer's content          |
 *
 * A failed call attempt is shown only when it is the call's final outcome: an operation_failed
 * with a call_id produces a tool message only when no later operation_failed or tool_result
 * (of any status) for the same call_id comes before the next model_turn_completed. A call that
 * was retried and then succeeded therefore appears once, with its success; a call retried until
 * it failed for good appears once, with its last failure.
 *
 * The reducer's own answers (`opts.answers`: the entries of the request_model_turn effect's
 * `tool_results` that carry `content`, for calls the reducer answered without a tool_result
 * event: refused, outcome_unknown, error, not_executed, unknown tool). For each answer, in the
 * given order: find the latest assistant message (model_turn_completed in range) whose
 * tool_calls include its call_id; if there is none (the turn is outside the window, or the id
 * was never issued) the answer is dropped; if a tool message for that call_id already follows
 * that assistant message (from the log, or an earlier answer) the answer is dropped; otherwise
 * a tool message `{call_id, name: the name the model used in that turn, content}` is inserted
 * right after that assistant message and the tool messages immediately following it (so it
 * precedes any user message compiled after the turn). Answers are not events: they do not
 * appear in the manifest. Net effect: every call of an answered turn is followed by exactly one
 * tool message, as provider APIs require.
 *
 * Every call is paired: a tool call of an assistant message that no tool
 * message answers before the next assistant message (from the log or the reducer's answers) gets
 * a synthetic tool message, placed like an answer and labelled as the runtime's, never the
 * tool's: `Error: no result (synthesized by the runtime): <why>`, where why follows the call's
 * last ending in the window: `not_run` (operation_cancelled with before_dispatch: the tool was
 * never called), `cancelled` (operation_cancelled: stopped or interrupted while it ran),
 * `outcome_unknown` (its result request closed, e.g. expired, without a result), `stopped` (the
 * run stopped after the call, with no ending of its own logged), `no_result` (nothing: e.g. the
 * window ends before its result). Provider APIs (OpenAI chat, Anthropic, Bedrock Converse)
 * refuse a call without a result; a transcript compiled after a fork or a resume is sent as is.
 * Synthetic results are listed in the manifest's `synthesized` ({call_id, reason}), not in
 * `included`.
 *
 * User text of an input value: a string verbatim; an object with a string `text` field → that
 * text; null/undefined → no message (the event is skipped); anything else → canonical JSON.
 *
 * The tool-visible text of a raisin.tool-result/1 envelope (`toolResultContent`), first rule
 * that applies:
 *  1. `payload` is a string → the string verbatim, whatever the status (a recorded output such
 *     as `"Error: flight not available"` or `""` is seen exactly as recorded);
 *  2. status is failed, blocked or retryable and the envelope has a diagnostic → `Error: ` +
 *     the message of its first error-severity diagnostic (else its first diagnostic);
 *  3. `payload` is present (not undefined) → canonical JSON (RFC 8785) of the payload;
 *  4. status is failed, blocked or retryable → `Error: ` + (`error_class` ?? status);
 *  5. otherwise → canonical JSON of `{status}` (e.g. `{"status":"succeeded"}`).
 *
 * The tool message's `name` is the name the model used for that call_id in the latest
 * assistant turn that issued it (recorded transcripts reuse call ids across turns), falling
 * back to the event's `data.tool` (or `data.tool` of operation_failed, or "") when no
 * assistant turn issued it.
 *
 * Skipped on purpose: tool_result without call_id (a call the reducer made on its own, which
 * the model never asked for) and tool_result whose envelope is `waiting` (the model sees the
 * result delivered later for the same call); approvals (request_resolved kind approval);
 * operation_failed without call_id (e.g. a failed model turn) and operation_failed followed by
 * another outcome of its call before the next model turn (a retried attempt).
 *
 * Pure: no I/O, no clock. Throws ContextCompileError (`context_event_invalid`) when a relevant
 * event's data does not match its contract shape: a corrupt log is a bug, never silently
 * dropped.
 */

import type { z } from 'zod';
import type {
  CompiledContext,
  ContextManifest,
  ContextMessage,
  StoredContextManifest,
} from '../contracts/index.ts';
import {
  ModelTurnCompletedData,
  OperationFailedData,
  RequestResolvedData,
  type RunEvent,
  RunStartedData,
  ToolResultData,
  type ToolResultEnvelope,
  UserInputData,
} from '../contracts/index.ts';
import { canonicalJson } from './canonical.ts';

/** Stable code of {@link ContextCompileError}. */
export const CONTEXT_EVENT_INVALID = 'context_event_invalid';

/** A relevant event's data does not match its contract shape. Terminal: the same log always fails. */
export class ContextCompileError extends Error {
  override readonly name = 'ContextCompileError';
  readonly code = CONTEXT_EVENT_INVALID;
  readonly seq: number;
  readonly kind: string;
  constructor(seq: number, kind: string, message: string, options?: ErrorOptions) {
    super(`event seq ${seq} (${kind}): ${message}`, options);
    this.seq = seq;
    this.kind = kind;
  }
}

export interface CompileContextOptions {
  /** The system instructions (request_model_turn.instructions); the first message when set. */
  instructions?: string | undefined;
  /** First seq to include (default 1): events with a smaller seq are ignored. */
  from_seq?: number | undefined;
  /** Last seq to include (default: all): events with a larger seq are ignored. */
  to_seq?: number | undefined;
  /**
   * The reducer's own answers to tool calls (request_model_turn.tool_results entries carrying
   * `content`), placed as tool messages after the turn that issued each call (module docstring).
   * `name` is informational: the message carries the name the model gave the call.
   */
  answers?: readonly ToolCallAnswer[] | undefined;
}

/** A tool call the reducer answered itself: `content` is the text the model sees. */
export interface ToolCallAnswer {
  call_id: string;
  name?: string | undefined;
  content: string;
}

/** Envelope statuses whose absent string payload is shown to the model as `Error: ...`. */
const ERROR_STATUSES: ReadonlySet<string> = new Set(['failed', 'blocked', 'retryable']);

/**
 * Compiles the transcript of a model turn from the event log (any order; duplicates by seq are
 * read once). Returns the messages and the manifest `{from_seq, to_seq, included: [{seq, kind,
 * role}]}` where `from_seq` is the option (default 1), `to_seq` the largest seq considered (or
 * `from_seq - 1` when no event is in range) and `included` lists the events that produced a
 * message, in message order (reducer answers, which are not events, are not listed). Throws
 * ContextCompileError on a malformed relevant event.
 */
export function compileContext(
  events: readonly RunEvent[],
  opts: CompileContextOptions = {},
): CompiledContext {
  const fromSeq = opts.from_seq ?? 1;
  const toSeq = opts.to_seq ?? Number.POSITIVE_INFINITY;
  const inRange = events.filter((e) => e.seq >= fromSeq && e.seq <= toSeq);
  const ordered = dedupeBySeq([...inRange].sort((a, b) => a.seq - b.seq));
  const finalFailures = finalFailureSeqs(ordered);

  const messages: ContextMessage[] = [];
  const included: CompiledContext['manifest']['included'] = [];
  /** call_id → the name the model gave it in the latest assistant turn that issued it. */
  const callNames = new Map<string, string>();
  /** call_id → index in `messages` of the latest assistant message that issued it. */
  const callTurns = new Map<string, number>();

  const excluded: NonNullable<CompiledContext['manifest']['excluded']> = [];
  const push = (event: RunEvent, message: ContextMessage): void => {
    messages.push(message);
    included.push({ seq: event.seq, kind: event.kind, role: message.role });
  };
  type Reason = (typeof excluded)[number]['reason'];
  const cut = (event: RunEvent, reason: Reason): void => {
    excluded.push({ seq: event.seq, kind: event.kind, reason });
  };

  if (opts.instructions !== undefined) messages.push({ role: 'system', content: opts.instructions });

  for (const event of ordered) {
    switch (event.kind) {
      case 'run_started': {
        const text = userText(parse(RunStartedData, event).input);
        if (text !== null) push(event, { role: 'user', content: text });
        else cut(event, 'no_text');
        break;
      }
      case 'steer_consumed': {
        const text = userText(parse(UserInputData, event).input);
        if (text !== null) push(event, { role: 'user', content: text });
        else cut(event, 'no_text');
        break;
      }
      case 'request_resolved': {
        const data = parse(RequestResolvedData, event);
        if (data.kind !== 'input') {
          cut(event, 'not_an_answer');
          break;
        }
        const text = userText(data.value);
        if (text !== null) push(event, { role: 'user', content: text });
        else cut(event, 'no_text');
        break;
      }
      case 'model_turn_completed': {
        const data = parse(ModelTurnCompletedData, event);
        const toolCalls = data.tool_calls.map((c) => ({ call_id: c.call_id, name: c.name, args: c.args }));
        for (const call of toolCalls) {
          callNames.set(call.call_id, call.name);
          callTurns.set(call.call_id, messages.length);
        }
        push(event, { role: 'assistant', content: data.message.text ?? null, tool_calls: toolCalls });
        break;
      }
      case 'tool_result': {
        const data = parse(ToolResultData, event);
        if (data.call_id === undefined || data.envelope.status === 'waiting') {
          cut(event, data.envelope.status === 'waiting' ? 'waiting' : 'reducer_call');
          break;
        }
        push(event, {
          role: 'tool',
          call_id: data.call_id,
          name: callNames.get(data.call_id) ?? data.tool,
          content: toolResultContent(data.envelope),
        });
        break;
      }
      case 'operation_failed': {
        const data = parse(OperationFailedData, event);
        const callId = event.data.call_id;
        if (typeof callId !== 'string' || callId === '' || !finalFailures.has(event.seq)) {
          cut(event, typeof callId !== 'string' || callId === '' ? 'not_a_call' : 'superseded');
          break;
        }
        const tool = typeof event.data.tool === 'string' ? event.data.tool : '';
        push(event, {
          role: 'tool',
          call_id: callId,
          name: callNames.get(callId) ?? tool,
          content: `Error: ${data.message}`,
        });
        break;
      }
      default:
        break;
    }
  }

  const toSeqOut = ordered.length > 0 ? (ordered[ordered.length - 1]?.seq ?? fromSeq - 1) : fromSeq - 1;
  const answered = placeAnswers(messages, opts.answers ?? [], callTurns, callNames);
  const paired = pairCalls(answered, callEndings(ordered));
  return {
    messages: paired.messages,
    manifest: {
      from_seq: fromSeq,
      to_seq: toSeqOut,
      included,
      excluded,
      ...(paired.synthesized.length > 0 ? { synthesized: paired.synthesized } : {}),
    },
  };
}

/** Why a call has no result, as a synthetic tool message says (module docstring). */
export type UnpairedReason = 'not_run' | 'cancelled' | 'outcome_unknown' | 'stopped' | 'no_result';

/** The text of each reason, after `Error: no result (synthesized by the runtime): `. */
const UNPAIRED_TEXT: Record<UnpairedReason, string> = {
  not_run: 'the run was stopped before this call was dispatched; the tool did not run.',
  cancelled:
    'the call was cancelled while it ran (the run was stopped or interrupted); whether it took effect is unknown.',
  outcome_unknown: 'its result never arrived (the wait for it closed); its outcome is unknown.',
  stopped: 'the run was stopped before this call returned; whether it took effect is unknown.',
  no_result: 'none was recorded for this call.',
};

/** The content of the synthetic result of a call that ended `reason`. */
export function syntheticResultContent(reason: UnpairedReason): string {
  return `Error: no result (synthesized by the runtime): ${UNPAIRED_TEXT[reason]}`;
}

/**
 * call_id → how its latest ending in `ordered` left it without a result: operation_cancelled
 * naming it (`not_run` when before_dispatch), request_closed of its result request (opened by
 * a request_opened naming it; reason `stopped` → stopped, else outcome_unknown), or a `stopped`
 * event after it was issued (only for calls with no ending of their own). Reads only ids.
 */
function callEndings(ordered: readonly RunEvent[]): ReadonlyMap<string, UnpairedReason> {
  const endings = new Map<string, UnpairedReason>();
  const issued = new Set<string>();
  const requestCalls = new Map<string, string>();
  const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
  for (const event of ordered) {
    const callId = str(event.data.call_id);
    switch (event.kind) {
      case 'model_turn_completed': {
        const calls = Array.isArray(event.data.tool_calls) ? event.data.tool_calls : [];
        for (const call of calls) {
          const id = str((call as { call_id?: unknown } | null)?.call_id);
          if (id === null) continue;
          issued.add(id);
          endings.delete(id); // issued again (recorded transcripts reuse ids): a new call
        }
        break;
      }
      case 'operation_cancelled':
        if (callId !== null)
          endings.set(callId, event.data.before_dispatch === true ? 'not_run' : 'cancelled');
        break;
      case 'request_opened': {
        const requestId = str(event.data.request_id);
        if (callId !== null && requestId !== null) requestCalls.set(requestId, callId);
        break;
      }
      case 'request_closed': {
        const call = requestCalls.get(String(event.data.request_id));
        if (call !== undefined)
          endings.set(call, event.data.reason === 'stopped' ? 'stopped' : 'outcome_unknown');
        break;
      }
      case 'stopped':
        for (const id of issued) if (!endings.has(id)) endings.set(id, 'stopped');
        break;
      default:
        break;
    }
  }
  return endings;
}

/**
 * `messages` with a synthetic tool message for each call of an assistant message that no tool
 * message answers before the next assistant message, inserted after the tool messages that
 * immediately follow that assistant message (module docstring). `endings`: why each call has no
 * result (`no_result` when absent). Returns the messages and the list of what was synthesized.
 */
function pairCalls(
  messages: readonly ContextMessage[],
  endings: ReadonlyMap<string, UnpairedReason>,
): { messages: ContextMessage[]; synthesized: { call_id: string; reason: UnpairedReason }[] } {
  const out: ContextMessage[] = [];
  const synthesized: { call_id: string; reason: UnpairedReason }[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as ContextMessage;
    out.push(message);
    if (message.role !== 'assistant' || message.tool_calls.length === 0) continue;
    const answered = new Set<string>();
    for (let k = i + 1; k < messages.length; k++) {
      const later = messages[k];
      if (later === undefined || later.role === 'assistant') break;
      if (later.role === 'tool') answered.add(later.call_id);
    }
    while (messages[i + 1]?.role === 'tool') out.push(messages[++i] as ContextMessage);
    for (const call of message.tool_calls) {
      if (answered.has(call.call_id)) continue;
      answered.add(call.call_id);
      const reason = endings.get(call.call_id) ?? 'no_result';
      out.push({
        role: 'tool',
        call_id: call.call_id,
        name: call.name,
        content: syntheticResultContent(reason),
      });
      synthesized.push({ call_id: call.call_id, reason });
    }
  }
  return { messages: out, synthesized };
}

/** `sorted` (by seq) without repeated seqs: the first event of each seq is kept. */
function dedupeBySeq(sorted: readonly RunEvent[]): RunEvent[] {
  return sorted.filter((event, i) => i === 0 || sorted[i - 1]?.seq !== event.seq);
}

/**
 * The seqs of the operation_failed events (with a string call_id) that are their call's final
 * outcome: no later operation_failed or tool_result for the same call_id before the next
 * model_turn_completed. `ordered` is sorted by seq without duplicates. Reads only `call_id`.
 */
function finalFailureSeqs(ordered: readonly RunEvent[]): ReadonlySet<number> {
  /** call_id → seq of its latest outcome event since the last model turn. */
  const latest = new Map<string, { seq: number; failed: boolean }>();
  const finals = new Set<number>();
  const flush = (): void => {
    for (const outcome of latest.values()) if (outcome.failed) finals.add(outcome.seq);
    latest.clear();
  };
  for (const event of ordered) {
    if (event.kind === 'model_turn_completed') flush();
    if (event.kind !== 'operation_failed' && event.kind !== 'tool_result') continue;
    const callId = event.data.call_id;
    if (typeof callId !== 'string' || callId === '') continue;
    latest.set(callId, { seq: event.seq, failed: event.kind === 'operation_failed' });
  }
  flush();
  return finals;
}

/**
 * `messages` with the reducer's answers inserted (module docstring): each after the tool
 * messages that immediately follow the latest assistant message issuing its call_id
 * (`callTurns`: call_id → that message's index), unless the turn is unknown or a tool message
 * for the call already follows it. Returns `messages` itself when nothing is inserted.
 */
function placeAnswers(
  messages: ContextMessage[],
  answers: readonly ToolCallAnswer[],
  callTurns: ReadonlyMap<string, number>,
  callNames: ReadonlyMap<string, string>,
): ContextMessage[] {
  /** insertion index (before messages[index]) → the tool messages to insert there, in order. */
  const inserts = new Map<number, ContextMessage[]>();
  const placed = new Set<string>();
  for (const answer of answers) {
    const turn = callTurns.get(answer.call_id);
    if (turn === undefined || placed.has(answer.call_id)) continue;
    const answered = messages.some((m, i) => i > turn && m.role === 'tool' && m.call_id === answer.call_id);
    if (answered) continue;
    let at = turn + 1;
    while (messages[at]?.role === 'tool') at++;
    const name = callNames.get(answer.call_id) ?? answer.name ?? '';
    const list = inserts.get(at) ?? [];
    list.push({ role: 'tool', call_id: answer.call_id, name, content: answer.content });
    inserts.set(at, list);
    placed.add(answer.call_id);
  }
  if (inserts.size === 0) return messages;
  const out: ContextMessage[] = [];
  for (let i = 0; i <= messages.length; i++) {
    out.push(...(inserts.get(i) ?? []));
    const message = messages[i];
    if (message !== undefined) out.push(message);
  }
  return out;
}

/**
 * The model-visible text of a tool-result envelope: the five rules in this module's docstring
 * (string payload verbatim; `Error: <diagnostic>` for a failed result; canonical JSON of the
 * payload; `Error: <error_class|status>`; canonical JSON of `{status}`). Never throws for a JSON
 * payload (the envelope came from a parsed, JSON-only log).
 */
export function toolResultContent(envelope: ToolResultEnvelope): string {
  const { payload, status } = envelope;
  if (typeof payload === 'string') return payload;
  const isError = ERROR_STATUSES.has(status);
  if (isError && envelope.diagnostics.length > 0) {
    const diagnostic = envelope.diagnostics.find((d) => d.severity === 'error') ?? envelope.diagnostics[0];
    if (diagnostic !== undefined) return `Error: ${diagnostic.message}`;
  }
  if (payload !== undefined) return canonicalJson(payload);
  if (isError) return `Error: ${envelope.error_class ?? status}`;
  return canonicalJson({ status });
}

/**
 * The user text of an input value: a string verbatim, `{text: string}` → the text, null or
 * undefined → null (no message), anything else → canonical JSON.
 */
export function userText(input: unknown): string | null {
  if (input === undefined || input === null) return null;
  if (typeof input === 'string') return input;
  if (typeof input === 'object' && !Array.isArray(input)) {
    const text = (input as { text?: unknown }).text;
    if (typeof text === 'string') return text;
  }
  return canonicalJson(input);
}

function parse<S extends z.ZodType>(schema: S, event: RunEvent): z.output<S> {
  const result = schema.safeParse(event.data);
  if (result.success) return result.data;
  const detail = result.error.issues.map((i) => `${i.path.map(String).join('.') || '(data)'}: ${i.message}`);
  throw new ContextCompileError(
    event.seq,
    event.kind,
    `data does not match its contract: ${detail.join('; ')}`,
  );
}

/**
 * The manifest as stored on `model_turn_completed`: the included events as seq ranges instead
 * of one entry each (their kind and role are read from the log), so a turn's event grows with
 * the gaps in its window, not with its length; the window, `excluded` and `compacted` as they
 * are. docs/architecture.md, "The seams of a step" (the context compiler returns the
 * model's input and a manifest).
 */
export function storedManifest(manifest: ContextManifest): StoredContextManifest {
  const included: [number, number][] = [];
  for (const { seq } of manifest.included) {
    const last = included.at(-1);
    if (last !== undefined && seq === last[1] + 1) last[1] = seq;
    else if (last === undefined || seq > last[1]) included.push([seq, seq]);
  }
  return { ...manifest, included };
}
