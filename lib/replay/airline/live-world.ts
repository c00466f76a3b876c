/**
 * The live airline world: the 14 tools executed for real, each conversation over its own
 * copy-on-write database (database.ts), answering with raisin.tool-result/1 envelopes that
 * carry the tool's output text as payload and the records it read and wrote.
 *
 * - A mutating call is idempotent on its operation id (the idempotency key the host passes):
 *   its receipt is stored atomically with its change, so a re-dispatch of the same operation
 *   (after a takeover) gets the stored answer and changes nothing. Reads are executed again.
 * - The world follows the recording as an observer, not as a source of answers: each first
 *   execution is matched against the next recorded call (name and args) and its output against
 *   the recorded output; a mismatch is reported as a divergence, and the live answer stands.
 *   A read re-issued under a new operation after its first one was abandoned (outcome unknown)
 *   is matched against the call it repeats.
 * - The recordings name a user address field `province` where today's database says `state`:
 *   {@link withTodaysAddressKey} maps that one key in the recorded outputs before anything
 *   compares them.
 *
 * docs/contracts/tool-result.md, "Tool calls" and "The tool-result envelope";
 * docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper" (a replay-safe operation is
 * dispatched again under the same op_id).
 */
import { z } from 'zod';
import type { ContextMessage, ToolResultEnvelope } from '../../contracts/index.ts';
import { canonicalJson } from '../../core/canonical.ts';
import { envelopeOf } from '../../core/tool-result-validation.ts';
import { TauBenchFormatError, type TauTrajectory } from '../../models/tau-bench.ts';
import { registerOpenAiFunctionTools } from '../../tools/openai-functions.ts';
import type { ToolRegistry } from '../../tools/registry.ts';
import { HANDOFF_TOOL, keyOfSubject, type ReplayConversation } from '../conversations.ts';
import type { ReplayWorld, WorldDivergence, WorldStats } from '../world.ts';
import type { LiveAssessment } from './assessment.ts';
import { type Access, type AirlineBase, AirlineStore } from './database.ts';
import { AIRLINE_TOOLS, runTool } from './tools.ts';
import { judgeConversation, TauTaskInfo } from './verdict.ts';

export type { LiveAssessment } from './assessment.ts';

/** The recorded key and today's key of a user address field. */
const RECORDED_KEY = '"province": ';
const TODAYS_KEY = '"state": ';

/**
 * The trajectory with `"province": ` read as `"state": ` in every tool output (the one field
 * the database renamed since the recording), and how many outputs that changed.
 */
export function withTodaysAddressKey(traj: TauTrajectory): { trajectory: TauTrajectory; mapped: number } {
  let mapped = 0;
  const messages = traj.traj.map((m) => {
    if (m.role !== 'tool' || !m.content.includes(RECORDED_KEY)) return m;
    mapped += 1;
    return { ...m, content: m.content.replaceAll(RECORDED_KEY, TODAYS_KEY) };
  });
  return { trajectory: { ...traj, traj: messages }, mapped };
}

interface Book {
  conversation: ReplayConversation;
  store: AirlineStore;
  cursor: number;
  consumedBy: string[][];
  dispatches: number;
  executed: Set<string>;
  mutatingExecuted: number;
  receiptsReplayed: number;
  readsRepeated: number;
  outputsCompared: number;
  outputsIdentical: number;
  keyMapped: number;
  divergences: WorldDivergence[];
}

export interface LiveWorld extends ReplayWorld {
  assess(conversation: ReplayConversation, transcript: readonly ContextMessage[]): LiveAssessment;
  /** The conversation's final database `{flights, reservations, users}` (for --final-db). */
  finalDatabase(key: string): ReturnType<AirlineStore['toJSON']> | null;
}

function withoutContext(args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { __raisin_context: _ctx, ...rest } = args;
  return rest;
}

/** The error class of an `Error: ...` output, by what the message says. */
function errorClassOf(output: string): NonNullable<ToolResultEnvelope['error_class']> {
  if (/not found/.test(output)) return 'not_found';
  if (/not enough|not available/.test(output)) return 'conflict';
  if (/does not add up|does not match|cannot be used|invalid|already holds/.test(output))
    return 'invalid_input';
  return 'tool_error';
}

/** The envelope of one execution: the output text as payload, reads and writes under the conversation's database. */
function envelopeFor(
  output: string,
  reads: readonly Access[],
  writes: readonly Access[],
  subject: { workspace: string; path: string },
): ToolResultEnvelope {
  const locator = (path: string) => ({ workspace: subject.workspace, path: `${subject.path}/db${path}` });
  const revision = (version: number | undefined) =>
    version === undefined ? {} : { revision: { value: String(version), alg: 'record-version' } };
  const common = {
    reads: reads.map((r) => ({ read_id: r.path, locator: locator(r.path), ...revision(r.version) })),
    writes: writes.map((w) => ({
      locator: locator(w.path),
      action: w.action ?? 'updated',
      ...revision(w.version),
    })),
  };
  if (output.startsWith('Error:')) {
    return envelopeOf('failed', output, {
      ...common,
      error_class: errorClassOf(output),
      retry_policy: { retryable: false },
      diagnostics: [{ code: 'airline_error', severity: 'error', message: output.slice('Error: '.length) }],
    });
  }
  const primary = writes.find((w) => w.path.startsWith('/reservations/')) ?? writes[0];
  return envelopeOf('succeeded', output, {
    ...common,
    ...(primary !== undefined
      ? {
          artifact_refs: [
            {
              kind: primary.path.split('/')[1] === 'users' ? 'user' : 'reservation',
              locator: locator(primary.path),
              ...revision(primary.version),
              role: 'primary' as const,
            },
          ],
        }
      : {}),
  });
}

/** Matches a first execution against the recording (observer only: the live answer stands). */
function follow(book: Book, opId: string, name: string, args: Record<string, unknown>, output: string): void {
  const calls = book.conversation.toolCalls;
  const next = calls[book.cursor];
  const same = (c: (typeof calls)[number] | undefined) =>
    c !== undefined && c.name === name && canonicalJson(c.args) === canonicalJson(args);
  if (same(next) && next !== undefined) {
    book.consumedBy[book.cursor]?.push(opId);
    book.cursor += 1;
    book.outputsCompared += 1;
    if (output === next.output) book.outputsIdentical += 1;
    else {
      book.divergences.push({
        key: book.conversation.key,
        position: next.position,
        expected: { name, args, output: next.output },
        got: { name, args, output },
      });
    }
    return;
  }
  const previous = calls[book.cursor - 1];
  const tool = AIRLINE_TOOLS.get(name);
  if (same(previous) && tool !== undefined && !tool.mutating) {
    // A read re-issued after its first operation was abandoned: the same recorded call again.
    book.consumedBy[book.cursor - 1]?.push(opId);
    return;
  }
  book.divergences.push({
    key: book.conversation.key,
    position: next?.position ?? -1,
    expected: next ? { name: next.name, args: next.args } : null,
    got: { name, args },
  });
}

/** Runs one call of a conversation's tool over its private database; a mutating call answers from its receipt when one is stored. */
function execute(
  books: Map<string, Book>,
  name: string,
  rawArgs: Readonly<Record<string, unknown>>,
  opId: string,
  idempotencyKey: string | undefined,
  subjectPath: string | undefined,
): ToolResultEnvelope {
  const key = keyOfSubject(subjectPath !== undefined ? { path: subjectPath } : undefined);
  const book = key === null ? undefined : books.get(key);
  const tool = AIRLINE_TOOLS.get(name);
  if (book === undefined || tool === undefined) {
    return envelopeOf('failed', `Error: no airline database for this run`, { error_class: 'not_found' });
  }
  book.dispatches += 1;
  const args = withoutContext(rawArgs);
  const subject = book.conversation.subject;
  const receiptKey = idempotencyKey ?? opId;
  if (tool.mutating) {
    const receipt = book.store.receipt(receiptKey);
    if (receipt !== undefined) {
      if (receipt.tool !== name || receipt.args !== canonicalJson(args)) {
        return envelopeOf('failed', `Error: operation ${receiptKey} was already used for another call`, {
          error_class: 'conflict',
          diagnostics: [
            { code: 'idempotency_key_reused', severity: 'error', message: 'same operation id, other call' },
          ],
        });
      }
      book.receiptsReplayed += 1;
      return envelopeFor(receipt.output, receipt.reads, receipt.writes, subject);
    }
  }
  const tx = book.store.begin();
  const output = runTool(tool, tx, args);
  let writes: Access[] = [];
  if (tool.mutating) {
    // The change and its receipt in one step (a failed call may still have changed something).
    writes = book.store.commit(tx, {
      operation_id: receiptKey,
      tool: name,
      args: canonicalJson(args),
      output,
    }).writes;
    book.mutatingExecuted += 1;
  }
  if (book.executed.has(opId)) book.readsRepeated += 1;
  else {
    book.executed.add(opId);
    follow(book, opId, name, args, output);
  }
  return envelopeFor(output, tx.reads, writes, subject);
}

/**
 * Creates the live world over `base` for `conversations` (already mapped with
 * withTodaysAddressKey; `mapped` gives the number of outputs that changed, by key).
 */
export function createLiveWorld(
  base: AirlineBase,
  conversations: readonly ReplayConversation[],
  mapped: ReadonlyMap<string, number> = new Map(),
): LiveWorld {
  const books = new Map<string, Book>();
  for (const conversation of conversations) {
    books.set(conversation.key, {
      conversation,
      store: new AirlineStore(base),
      cursor: 0,
      consumedBy: conversation.toolCalls.map(() => []),
      dispatches: 0,
      executed: new Set(),
      mutatingExecuted: 0,
      receiptsReplayed: 0,
      readsRepeated: 0,
      outputsCompared: 0,
      outputsIdentical: 0,
      keyMapped: mapped.get(conversation.key) ?? 0,
      divergences: [],
    });
  }

  return {
    registerTools(registry: ToolRegistry, toolsJson: unknown) {
      registerOpenAiFunctionTools(registry, toolsJson, (fn) => {
        const mutating = AIRLINE_TOOLS.get(fn.name)?.mutating ?? true;
        return {
          handler: {
            kind: 'module',
            fn: async (args, ctx) =>
              execute(books, fn.name, args, ctx.operation_id, ctx.idempotency_key, ctx.subject?.path),
          },
          metadata: {
            mutating,
            // Mutating calls key their change on the operation id; reads change nothing.
            replay_safe: true,
            risk: mutating ? 'high' : 'low',
            approval: mutating ? 'always' : 'never',
            timeout_ms: 10_000,
          },
        };
      });
    },
    stats(key): WorldStats {
      const book = books.get(key);
      return {
        dispatches: book?.dispatches ?? 0,
        executed: book?.executed.size ?? 0,
        recorded: book?.conversation.toolCalls.length ?? 0,
        consumedBy: book?.consumedBy ?? [],
        divergences: book?.divergences ?? [],
      };
    },
    assess(conversation, transcript) {
      const book = books.get(conversation.key);
      if (book === undefined) throw new Error(`no live database for ${conversation.key}`);
      const parsed = TauTaskInfo.safeParse(conversation.info);
      if (!parsed.success) {
        throw new TauBenchFormatError(`${conversation.key}: info.task: ${z.prettifyError(parsed.error)}`);
      }
      const info = parsed.data;
      const verdict = judgeConversation(book.store, transcript, info, conversation.recording.reward);
      const episodeDone = episodeEnded(conversation);
      const benchmarkReward = episodeDone ? verdict.reward : 0;
      return {
        outputs_compared: book.outputsCompared,
        outputs_identical: book.outputsIdentical,
        outputs_key_mapped: book.keyMapped,
        mutating_executed: book.mutatingExecuted,
        receipts_replayed: book.receiptsReplayed,
        reads_repeated: book.readsRepeated,
        private_bytes: book.store.privateBytes(),
        verdict: { ...verdict, episode_done: episodeDone, benchmark_reward: benchmarkReward },
      };
    },
    finalDatabase(key) {
      return books.get(key)?.store.toJSON() ?? null;
    },
  };
}

/**
 * Whether the recorded conversation ended the benchmark's episode: the customer said
 * `###STOP###`, or the hand-off tool ran. A conversation that ends otherwise stopped at the
 * benchmark's step limit, and the benchmark never judged it.
 */
export function episodeEnded(conversation: ReplayConversation): boolean {
  const last = conversation.recording.messages[conversation.recording.messages.length - 1];
  if (last?.role === 'user') return last.content.includes('###STOP###');
  return last?.role === 'tool' && last.name === HANDOFF_TOOL;
}
