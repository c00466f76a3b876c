/**
 * Paired transcripts on the memory engine with the default agent loop: a run
 * stopped while its model's tool calls are in flight (one cancelled before its dispatch, one
 * cancelled while it ran) logs operation_cancelled for them; the transcript compiled from that
 * log, as a fork or resume hands it to a model, answers every call with a result labelled as
 * the runtime's, in each provider format the runtime compiles: OpenAI chat completions, Bedrock
 * Converse (Anthropic's models on Bedrock) and the AI SDK prompt (Anthropic's own API). A run
 * that goes on after a call was cancelled (a steer interrupted it; its reducer cites the
 * cancellation by seq, which answers no call) gives its next model turn a result for it too.
 * docs/architecture.md, "The seams of a step" ("The context compiler");
 * docs/contracts/model-turn.md.
 */
import { describe, expect, it } from 'vitest';
import type { CompiledContext, ModelTurnOutput, RunEvent } from '../../lib/contracts/index.ts';
import { compileContext, syntheticResultContent } from '../../lib/core/context-compiler.ts';
import type { CrashPoint } from '../../lib/engine/engine.ts';
import type { ModelHost } from '../../lib/engine/ports.ts';
import { toAiSdkCall } from '../../lib/models/ai-sdk.ts';
import { toConverseRequest } from '../../lib/models/bedrock.ts';
import { toChatRequest } from '../../lib/models/openai-compatible.ts';
import { reduce } from '../../lib/reducers/agent-loop/reduce.ts';
import { alice, inProcessReducers, inProcessTools, uniqueSubject } from '../support/hosts.ts';
import { makeMemoryTestEngine } from '../support/memory-engine.ts';
import { respond, unchanged } from '../support/reducers.ts';

const LOOP = '/r/agent-loop';
const usage = { input_tokens: 10, output_tokens: 2 };

/** Issues `calls` in its first turn; a later turn (which a stopped run never has) answers. */
function modelCalling(names: string[]): ModelHost {
  return {
    async turn(_input, context: CompiledContext): Promise<ModelTurnOutput> {
      if (context.messages.some((m) => m.role === 'assistant'))
        return { message: { text: 'done' }, tool_calls: [], finish_reason: 'stop', usage };
      const tool_calls = names.map((name, i) => ({ call_id: `call_${i + 1}`, name, args: {} }));
      return { message: { text: null }, tool_calls, finish_reason: 'tool_calls', usage };
    },
  };
}

/** A run of the agent loop stopped by a control posted at the first before_dispatch of `tool`. */
async function stoppedRun(
  tools: { name: string; interruptible: boolean }[],
  stopBefore: (tool: string) => boolean,
) {
  const ran: string[] = [];
  let runId = '';
  let engine: Awaited<ReturnType<typeof makeMemoryTestEngine>>['engine'] | undefined;
  const t = await makeMemoryTestEngine({
    reducers: inProcessReducers({ [LOOP]: (req) => reduce(req) }),
    tools: inProcessTools({
      charge: async () => {
        ran.push('charge');
        return { charged: true };
      },
      lookup: (_r, signal) =>
        new Promise((resolve) => {
          ran.push('lookup');
          // Runs until the stop aborts it.
          signal.addEventListener('abort', () => resolve({ aborted: true }));
          void engine?.applyControl(runId, { control_id: 'halt-2', command: 'stop' }, alice);
        }),
    }),
    models: modelCalling(tools.map((x) => x.name)),
    stopPollMs: 5,
    crash: async (point: CrashPoint, id: string) => {
      if (point !== 'before_dispatch') return;
      const op = (await t.store.getRun(id))?.operation;
      const tool = op?.effect.kind === 'call_tool' ? op.effect.tool : '';
      if (stopBefore(tool)) await t.engine.applyControl(id, { control_id: 'halt-1', command: 'stop' }, alice);
    },
  });
  engine = t.engine;
  const { run } = await t.engine.createRun(
    {
      subject: uniqueSubject(),
      reducer: { function_path: LOOP },
      input: 'charge me and look it up',
      context: {
        mode: 'task',
        instructions: 'be careful',
        tools: tools.map((x) => ({
          name: x.name,
          mutating: x.name === 'charge',
          interruptible: x.interruptible,
        })),
      },
    },
    alice,
  );
  runId = run.run_id;
  for (let i = 0; i < 10; i += 1) {
    await t.drainMessages();
    const outcome = await t.engine.stepRun(run.run_id);
    if (outcome.kind !== 'progressed' || outcome.status !== 'queued') break;
  }
  const events: RunEvent[] = await t.engine.readEvents(run.run_id, alice, 0, 1_000);
  return { ran, events, status: (await t.engine.getRun(run.run_id, alice)).status };
}

/** The call ids each provider request answers, checked the way each provider checks them. */
function assertPaired(context: CompiledContext, callIds: string[]) {
  const chat = toChatRequest('gpt-test', context, []).messages;
  const at = chat.findIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  const assistant = chat[at];
  expect(assistant?.role === 'assistant' ? assistant.tool_calls?.map((c) => c.id) : []).toEqual(callIds);
  // OpenAI: a tool message for each tool_call_id right after the assistant message.
  const answered = chat
    .slice(at + 1, at + 1 + callIds.length)
    .map((m) => (m.role === 'tool' ? m.tool_call_id : null));
  expect(answered).toEqual(callIds);

  const converse = toConverseRequest('anthropic.claude-test', context, []).messages ?? [];
  const turn = converse.findIndex(
    (m) => m.role === 'assistant' && m.content?.some((b) => b.toolUse !== undefined),
  );
  const uses = converse[turn]?.content?.flatMap((b) => (b.toolUse ? [b.toolUse.toolUseId] : [])) ?? [];
  expect(uses).toEqual(callIds);
  // Bedrock Converse / Anthropic: the next user message holds a toolResult for each toolUse.
  const results = converse[turn + 1]?.content?.flatMap((b) => (b.toolResult ? [b.toolResult.toolUseId] : []));
  expect(converse[turn + 1]?.role).toBe('user');
  expect(results).toEqual(callIds);

  const prompt = toAiSdkCall(context, []).prompt;
  const aiTools = prompt.flatMap((m) =>
    m.role === 'tool' ? m.content.flatMap((p) => (p.type === 'tool-result' ? [p.toolCallId] : [])) : [],
  );
  expect(aiTools).toEqual(callIds);
}

describe('the transcript of a run stopped with tool calls in flight', () => {
  it('answers a call cancelled before dispatch and one cancelled while it ran, in every provider format', async () => {
    // Prepare + Act: the stop is posted before charge is dispatched (the second call, lookup, never starts).
    const stopped = await stoppedRun(
      [
        { name: 'charge', interruptible: false },
        { name: 'lookup', interruptible: true },
      ],
      (tool) => tool === 'charge',
    );

    // Assess: the premise first — the run stopped, charge never ran, its cancellation is logged.
    expect(stopped.status).toBe('stopped');
    expect(stopped.ran).toEqual([]);
    const cancelled = stopped.events.filter((e) => e.kind === 'operation_cancelled');
    expect(cancelled.map((e) => e.data)).toEqual([
      { acknowledged: true, before_dispatch: true, call_id: 'call_1' },
    ]);

    const context = compileContext(stopped.events, { instructions: 'be careful' });
    const tools = context.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => [m.call_id, m.content])).toEqual([
      ['call_1', syntheticResultContent('not_run')],
      ['call_2', syntheticResultContent('stopped')],
    ]);
    assertPaired(context, ['call_1', 'call_2']);
  });

  it('answers a call the stop cancelled while it ran', async () => {
    // Prepare + Act: lookup starts, then the stop aborts it through the stop watch.
    const stopped = await stoppedRun([{ name: 'lookup', interruptible: true }], () => false);

    // Assess
    expect(stopped.status).toBe('stopped');
    expect(stopped.ran).toEqual(['lookup']);
    const cancelled = stopped.events.filter((e) => e.kind === 'operation_cancelled');
    expect(cancelled.map((e) => e.data)).toEqual([{ acknowledged: true, call_id: 'call_1' }]);
    const context = compileContext(stopped.events, { instructions: 'be careful' });
    expect(context.messages.at(-1)).toMatchObject({
      role: 'tool',
      call_id: 'call_1',
      content: syntheticResultContent('cancelled'),
    });
    expect(context.manifest.synthesized).toEqual([{ call_id: 'call_1', reason: 'cancelled' }]);
    assertPaired(context, ['call_1']);
  });

  it('gives the model a result for a call interrupted in flight when the run goes on', async () => {
    // Prepare: a reducer that calls the tool the model asked for and, when that call is
    // cancelled, asks the model again citing the cancellation by seq (a tool_results entry
    // without content, which the contract allows). A steer that interrupts cancels the call.
    const inputs: CompiledContext[] = [];
    let runId = '';
    let pending: { call_id: string; name: string } | undefined;
    const t = await makeMemoryTestEngine({
      reducers: inProcessReducers({
        '/r/ask-again': (raw) => {
          const req = raw as { state: { seen: number } | null; state_rev: number; event: RunEvent };
          if (req.event.seq <= (req.state?.seen ?? 0)) return unchanged(req);
          const next = { seen: req.event.seq };
          const call = (req.event.data as { tool_calls?: { call_id: string; name: string }[] })
            .tool_calls?.[0];
          switch (req.event.kind) {
            case 'run_started':
              return respond(req, next, [{ kind: 'request_model_turn', tools_offered: [] }]);
            case 'operation_cancelled': {
              const cited = { ...(pending as { call_id: string }), status: 'cancelled', seq: req.event.seq };
              return respond(req, next, [
                { kind: 'request_model_turn', tools_offered: [], tool_results: [cited] },
              ]);
            }
            case 'model_turn_completed':
              if (call === undefined)
                return respond(req, next, [{ kind: 'complete', outcome: 'succeeded', summary: 'done' }]);
              pending = call;
              return respond(req, next, [
                {
                  kind: 'call_tool',
                  tool: call.name,
                  args: {},
                  mutating: false,
                  replay_safe: true,
                  for_call_id: call.call_id,
                },
              ]);
            default:
              return respond(req, next, []);
          }
        },
      }),
      tools: inProcessTools({
        lookup: (_r, signal) =>
          new Promise((resolve) => {
            signal.addEventListener('abort', () => resolve({ aborted: true }));
            const steer = {
              control_id: 'nudge',
              command: 'steer',
              input: 'faster please',
              when_busy: 'interrupt',
            };
            void t.engine.applyControl(runId, steer as never, alice);
          }),
      }),
      models: {
        async turn(_input, context: CompiledContext): Promise<ModelTurnOutput> {
          inputs.push(context);
          if (inputs.length > 1)
            return { message: { text: 'ok' }, tool_calls: [], finish_reason: 'stop', usage };
          const tool_calls = [{ call_id: 'call_9', name: 'lookup', args: {} }];
          return { message: { text: null }, tool_calls, finish_reason: 'tool_calls', usage };
        },
      },
      stopPollMs: 5,
    });
    const { run } = await t.engine.createRun(
      { subject: uniqueSubject(), reducer: { function_path: '/r/ask-again' }, input: 'look it up' },
      alice,
    );
    runId = run.run_id;

    // Act
    for (let i = 0; i < 10; i += 1) {
      await t.drainMessages();
      const outcome = await t.engine.stepRun(run.run_id);
      if (outcome.kind !== 'progressed' || outcome.status !== 'queued') break;
    }

    // Assess: the premise (the call was cancelled, the run went on to a second turn), then its input.
    const events = await t.engine.readEvents(run.run_id, alice, 0, 1_000);
    expect(events.filter((e) => e.kind === 'operation_cancelled').map((e) => e.data)).toEqual([
      { acknowledged: true, call_id: 'call_9' },
    ]);
    expect(inputs).toHaveLength(2);
    const second = inputs[1] as CompiledContext;
    expect(second.messages.find((m) => m.role === 'tool')).toEqual({
      role: 'tool',
      call_id: 'call_9',
      name: 'lookup',
      content: syntheticResultContent('cancelled'),
    });
    assertPaired(second, ['call_9']);
  });
});
