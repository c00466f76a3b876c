/**
 * A long scripted conversation for compaction tests and the compaction benchmark: the default
 * agent loop (its TypeScript sources, in process) in task mode on the memory engine, a scripted
 * model that calls the `lookup` tool once per turn for `turns - 1` turns and then answers, and
 * a `lookup` tool whose every 10th result is large (12,000 characters). Every model input is
 * counted in tokens with gpt-tokenizer's GPT-4o encoding (o200k_base) over a plain rendering of
 * the messages (`role: content`, tool calls as JSON), so the figures do not depend on the
 * runtime's own estimate.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { createMemoryBlobStore } from '../../lib/blobs/memory-blob-store.ts';
import type {
  CompiledContext,
  ContextMessage,
  ModelTurnInput,
  ModelTurnOutput,
  RunEvent,
  RunRecord,
} from '../../lib/contracts/index.ts';
import type { CrashPoint, Engine, EngineOptions } from '../../lib/engine/engine.ts';
import type { ModelHost } from '../../lib/engine/ports.ts';
import { reduce } from '../../lib/reducers/agent-loop/reduce.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { alice, inProcessReducers, inProcessTools, uniqueSubject } from './hosts.ts';
import { makeMemoryTestEngine } from './memory-engine.ts';

export const AGENT_LOOP = '/r/agent-loop';

/** Tokens (o200k_base) of a model input rendered as `role: content` lines. */
export function inputTokens(messages: readonly ContextMessage[]): number {
  const text = messages
    .map((m) => {
      if (m.role === 'assistant') return `assistant: ${m.content ?? ''} ${JSON.stringify(m.tool_calls)}`;
      if (m.role === 'tool') return `tool ${m.name} ${m.call_id}: ${m.content}`;
      return `${m.role}: ${m.content}`;
    })
    .join('\n');
  return countTokens(text);
}

/** One model input as the scripted model received it. */
export interface SeenTurn {
  turn: number;
  tokens: number;
  messages: number;
  compacted: CompiledContext['manifest']['compacted'];
}

/** The scripted model: `lookup` for turns 1..turns-1, then a final answer; records each input. */
export function longConversationModel(
  turns: number,
): ModelHost & { seen: SeenTurn[]; last: CompiledContext | null } {
  const seen: SeenTurn[] = [];
  const host = {
    seen,
    last: null as CompiledContext | null,
    async turn(_input: ModelTurnInput, context: CompiledContext): Promise<ModelTurnOutput> {
      host.last = context;
      const turn = seen.length + 1;
      seen.push({
        turn,
        tokens: inputTokens(context.messages),
        messages: context.messages.length,
        compacted: context.manifest.compacted,
      });
      const usage = { input_tokens: inputTokens(context.messages), output_tokens: 12 };
      if (turn >= turns) {
        return {
          message: { text: `All ${turns - 1} items looked up.` },
          tool_calls: [],
          finish_reason: 'stop',
          usage,
        };
      }
      return {
        message: { text: `Looking up item ${turn}.` },
        tool_calls: [{ call_id: `call_${turn}`, name: 'lookup', args: { item: turn } }],
        finish_reason: 'tool_calls',
        usage,
      };
    },
  };
  return host;
}

/** The lookup tool's answer for `item`: a short record, or a 12,000-character one every 10th item. */
export function lookupPayload(item: number): unknown {
  const base = { item, name: `Item ${item}`, price: 10 + (item % 17), stock: item % 5 };
  if (item % 10 !== 0) return base;
  // A large result of ordinary text (about 12,000 characters), so it costs tokens like one.
  const lines: string[] = [];
  for (let day = 1; lines.join('\n').length < 12_000; day += 1)
    lines.push(
      `day ${day}: item ${item} sold ${(day * 7 + item) % 23} at ${10 + ((day + item) % 17)}.${day % 10}0`,
    );
  return { ...base, history: lines.join('\n') };
}

export interface LongConversation {
  run: RunRecord;
  events: RunEvent[];
  seen: SeenTurn[];
  /** The last model input. */
  last: CompiledContext | null;
  engine: Engine;
  store: EngineOptions['store'];
}

/**
 * Runs the scripted conversation of `turns` model turns to its end with `executorConfig` (e.g.
 * `{compaction: {max_input_tokens: 6000}}`) and `context` added to the agent loop's context.
 * `crash` (given the run as stored) may throw at a crash point: the run is then taken over by
 * the sweeper after its lease.
 */
export async function runLongConversation(
  turns: number,
  executorConfig: Record<string, unknown> = {},
  context: Record<string, unknown> = {},
  crash?: (point: CrashPoint, run: RunRecord | null) => void | Promise<void>,
): Promise<LongConversation> {
  const model = longConversationModel(turns);
  const leaseTtlMs = 3_600_000;
  const store = createMemoryRunStore({ blobs: createMemoryBlobStore() });
  const t = await makeMemoryTestEngine({
    // Takeover right at lease expiry (the skew allowance has its own tests).
    clockSkewMs: 0,
    store,
    reducers: inProcessReducers({ [AGENT_LOOP]: (req) => reduce(req) }),
    tools: inProcessTools({ lookup: async (r) => lookupPayload(Number(r.args.item)) }),
    models: model,
    leaseTtlMs,
    ...(crash !== undefined
      ? { crash: async (point, runId) => crash(point, await store.getRun(runId)) }
      : {}),
  });
  const { run } = await t.engine.createRun(
    {
      subject: uniqueSubject(),
      reducer: { function_path: AGENT_LOOP },
      input: `Look up items 1 to ${turns - 1}, one at a time, then say you are done.`,
      context: {
        mode: 'task',
        instructions: 'You look items up with the lookup tool.',
        tools: [
          {
            name: 'lookup',
            mutating: false,
            schema: { type: 'object', properties: { item: { type: 'number' } }, required: ['item'] },
          },
        ],
        ...context,
      },
      executor_config: executorConfig,
    },
    alice,
  );
  for (let i = 0; i < 50; i += 1) {
    const current = await t.engine.getRun(run.run_id, alice);
    if (current.status === 'completed' || current.status === 'failed') break;
    await t.drainMessages();
    try {
      await t.engine.stepRun(run.run_id);
    } catch {
      // A crash injected by `crash`: the lease expires and the sweeper takes the run over.
      t.clock.advance(leaseTtlMs + 1_000);
      await t.engine.sweep();
    }
  }
  const done = await t.engine.getRun(run.run_id, alice);
  const events = await t.engine.readEvents(run.run_id, alice, 0, 100_000);
  return { run: done, events, seen: model.seen, last: model.last, engine: t.engine, store: t.store };
}
