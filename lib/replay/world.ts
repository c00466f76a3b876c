/**
 * The replay world: the 14 airline tools answering with the outputs recorded for each call, in
 * call order, keyed on the op_id as idempotency key (a re-dispatched operation gets the answer
 * its first dispatch got and changes nothing). A call that is not the next recorded one (other
 * tool or other arguments) is a divergence: it is recorded with its transcript position and
 * answered with an error. Recorded `Error: ...` outputs become failed envelopes whose text the
 * model sees exactly as recorded. A read issued again under a new operation right after its
 * recorded call (its first operation abandoned, outcome unknown) gets the same recorded answer.
 */
import type { ContextMessage, ToolResultEnvelope } from '../contracts/index.ts';
import { canonicalJson } from '../core/canonical.ts';
import { envelopeOf } from '../core/tool-result-validation.ts';
import { registerOpenAiFunctionTools } from '../tools/openai-functions.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import type { LiveAssessment } from './airline/assessment.ts';
import { keyOfSubject, MUTATING_TOOLS, type ReplayConversation } from './conversations.ts';

export interface WorldDivergence {
  key: string;
  /** Transcript position (message index) of the recorded tool result that was expected. */
  position: number;
  /** The recorded call; `output` set when the call matched and its live output differs. */
  expected: { name: string; args: unknown; output?: string } | null;
  got: { name: string; args: unknown; output?: string };
}

/** What a world saw for one conversation. */
export interface WorldStats {
  dispatches: number;
  executed: number;
  recorded: number;
  /** Recorded call index → op_ids that executed it (the oracle wants exactly one each). */
  consumedBy: string[][];
  divergences: WorldDivergence[];
}

interface Book {
  conversation: ReplayConversation;
  /** Index of the next recorded call. */
  cursor: number;
  /** op_id → the envelope its first dispatch got. */
  answers: Map<string, ToolResultEnvelope>;
  /** Recorded call index → op_ids that consumed it (the oracle wants exactly one each). */
  consumedBy: string[][];
  dispatches: number;
}

export interface ReplayWorld {
  registerTools(registry: ToolRegistry, toolsJson: unknown): void;
  /** What the world saw for one conversation. */
  stats(key: string): WorldStats;
  /** The live world's counts and recomputed verdict of one ended conversation (the recorded world has none). */
  assess?(conversation: ReplayConversation, transcript: readonly ContextMessage[]): LiveAssessment;
}

function withoutContext(args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { __raisin_context: _ctx, ...rest } = args;
  return rest;
}

/** A recorded output as an envelope: `Error: ...` failed (text as recorded), else succeeded. */
function recordedEnvelope(output: string): ToolResultEnvelope {
  return output.startsWith('Error:')
    ? envelopeOf('failed', output, {
        error_class: 'tool_error',
        diagnostics: [{ code: 'recorded_error', severity: 'error', message: output }],
      })
    : envelopeOf('succeeded', output);
}

export function createReplayWorld(conversations: ReplayConversation[]): ReplayWorld {
  const books = new Map<string, Book>();
  const divergences: WorldDivergence[] = [];
  for (const conversation of conversations) {
    books.set(conversation.key, {
      conversation,
      cursor: 0,
      answers: new Map(),
      consumedBy: conversation.toolCalls.map(() => []),
      dispatches: 0,
    });
  }

  function answer(
    name: string,
    args: Record<string, unknown>,
    opId: string,
    subjectPath: string | undefined,
  ): ToolResultEnvelope {
    const key = keyOfSubject(subjectPath !== undefined ? { path: subjectPath } : undefined);
    const book = key === null ? undefined : books.get(key);
    if (book === undefined || key === null) {
      return envelopeOf('failed', 'Error: no recording for this run', { error_class: 'not_found' });
    }
    book.dispatches += 1;
    const answered = book.answers.get(opId);
    if (answered !== undefined) return answered;
    const next = book.conversation.toolCalls[book.cursor];
    const previous = book.conversation.toolCalls[book.cursor - 1];
    const same = (c: typeof next) =>
      c !== undefined && c.name === name && canonicalJson(c.args) === canonicalJson(args);
    if (!same(next) && same(previous) && previous !== undefined && !MUTATING_TOOLS.has(name)) {
      // A read issued again after its first operation was abandoned (outcome unknown).
      book.consumedBy[book.cursor - 1]?.push(opId);
      const again = recordedEnvelope(previous.output);
      book.answers.set(opId, again);
      return again;
    }
    if (next === undefined || !same(next)) {
      divergences.push({
        key,
        position: next?.position ?? -1,
        expected: next ? { name: next.name, args: next.args } : null,
        got: { name, args },
      });
      const env = envelopeOf('failed', `Error: replay divergence: ${name} was not the next recorded call`, {
        error_class: 'conflict',
      });
      book.answers.set(opId, env);
      return env;
    }
    book.consumedBy[book.cursor]?.push(opId);
    book.cursor += 1;
    const env = recordedEnvelope(next.output);
    book.answers.set(opId, env);
    return env;
  }

  return {
    registerTools(registry, toolsJson) {
      registerOpenAiFunctionTools(registry, toolsJson, (fn) => ({
        handler: {
          kind: 'module',
          fn: async (args, ctx) => answer(fn.name, withoutContext(args), ctx.operation_id, ctx.subject?.path),
        },
        metadata: {
          mutating: MUTATING_TOOLS.has(fn.name),
          replay_safe: true,
          risk: MUTATING_TOOLS.has(fn.name) ? 'high' : 'low',
          approval: MUTATING_TOOLS.has(fn.name) ? 'always' : 'never',
          timeout_ms: 10_000,
        },
      }));
    },
    stats(key) {
      const book = books.get(key);
      return {
        dispatches: book?.dispatches ?? 0,
        executed: book?.answers.size ?? 0,
        recorded: book?.conversation.toolCalls.length ?? 0,
        consumedBy: book?.consumedBy ?? [],
        divergences: divergences.filter((d) => d.key === key),
      };
    },
  };
}
