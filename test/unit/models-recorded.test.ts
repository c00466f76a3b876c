import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelTurnInput, RunEvent } from '../../lib/contracts/index.ts';
import { compileContext } from '../../lib/core/context-compiler.ts';
import {
  createRecordedModel,
  eventsFromRecording,
  type RecordedConversation,
} from '../../lib/models/recorded.ts';
import {
  loadTrajectories,
  type TauRecordedConversation,
  toRecordedConversation,
} from '../../lib/models/tau-bench.ts';
import { TAU_BENCH_DIR } from '../support/data.ts';

function inputFor(key: string): ModelTurnInput {
  return {
    run_id: 'r1',
    operation_id: 'r1/op/1',
    attempt: 1,
    subject: { workspace: 'ai', path: '/chats/c1' },
    executor_config: { recording: key },
    request: { tools_offered: [], tool_results: [] },
  };
}

const live = () => new AbortController().signal;

describe('recorded model', () => {
  let recordings: TauRecordedConversation[];
  let byKey: Map<string, RecordedConversation>;

  beforeAll(async () => {
    recordings = (await loadTrajectories(`${TAU_BENCH_DIR}/trajectories.json`)).map(toRecordedConversation);
    byKey = new Map(recordings.map((r) => [r.key, r]));
  });

  it('answers every assistant turn of the 160 conversations exactly as recorded when the transcript matches', async () => {
    const model = createRecordedModel(byKey);
    let turns = 0;
    for (const recording of recordings) {
      const instructions = recording.system ?? undefined;
      for (const [i, message] of recording.messages.entries()) {
        if (message.role !== 'assistant') continue;
        const context = compileContext(eventsFromRecording(recording, { upTo: i }), { instructions });

        const answer = await model(inputFor(recording.key), context, live());

        expect(answer).toMatchObject({
          message: { text: message.content },
          tool_calls: message.tool_calls,
          finish_reason: message.tool_calls.length > 0 ? 'tool_calls' : 'stop',
          usage_fidelity: 'estimated',
        });
        turns++;
      }
    }
    expect(turns).toBe(1955);
  });

  it('estimates usage as chars / 4 of the transcript and of the answer', async () => {
    const recording = recordings[0] as TauRecordedConversation;
    const context = compileContext(eventsFromRecording(recording, { upTo: 2 }), {
      instructions: recording.system ?? undefined,
    });
    const chars = context.messages.reduce(
      (n, m) => n + ('content' in m && m.content ? m.content.length : 0),
      0,
    );

    const answer = await createRecordedModel(byKey)(inputFor(recording.key), context, live());

    const reply = recording.messages[2];
    expect(reply?.role).toBe('assistant');
    expect(answer).toMatchObject({
      usage: {
        input_tokens: Math.ceil(chars / 4),
        output_tokens: Math.ceil((reply?.role === 'assistant' ? (reply.content ?? '').length : 0) / 4),
      },
    });
  });

  it('refuses with divergence at the altered message when a recorded tool argument was changed', async () => {
    const recording = recordings[0] as TauRecordedConversation;
    const callIndex = recording.messages.findIndex((m) => m.role === 'assistant' && m.tool_calls.length > 0);
    const nextAssistant = recording.messages.findIndex((m, i) => i > callIndex && m.role === 'assistant');
    const events = eventsFromRecording(recording, { upTo: nextAssistant });
    const target = events.findIndex(
      (e) => e.kind === 'model_turn_completed' && (e.data.tool_calls as unknown[]).length > 0,
    );
    const altered: RunEvent[] = events.map((e, i) => {
      if (i !== target) return e;
      const calls = e.data.tool_calls as { call_id: string; name: string; args: Record<string, unknown> }[];
      const tool_calls = calls.map((c) => ({ ...c, args: { ...c.args, user_id: 'someone_else' } }));
      return { ...e, data: { ...e.data, tool_calls } };
    });
    const context = compileContext(altered, { instructions: recording.system ?? undefined });

    const answer = await createRecordedModel(byKey)(inputFor(recording.key), context, live());

    expect(answer).toMatchObject({ error_class: 'divergence', retryable: false });
    const { divergence } = answer as unknown as {
      divergence: { position: number; expected: unknown; got: unknown };
    };
    expect(divergence.position).toBe(callIndex);
    expect(divergence.expected).toEqual(recording.messages[callIndex]);
    expect(divergence.got).toMatchObject({
      role: 'assistant',
      tool_calls: [{ name: 'get_user_details', args: { user_id: 'someone_else' } }],
    });
  });

  it('refuses with divergence when the transcript has a message the recording does not', async () => {
    const recording = recordings[0] as TauRecordedConversation;
    const context = compileContext(
      [
        ...eventsFromRecording(recording, { upTo: 2 }),
        { seq: 99, kind: 'steer_consumed', at: 0, data: { steer_id: 's', input: 'extra' } },
      ],
      { instructions: recording.system ?? undefined },
    );

    const answer = await createRecordedModel(byKey)(inputFor(recording.key), context, live());

    expect(answer).toMatchObject({
      error_class: 'divergence',
      divergence: { position: 2, expected: recording.messages[2], got: { role: 'user', content: 'extra' } },
    });
  });

  it('reports recording_exhausted once every recorded assistant turn was answered', async () => {
    const recording = recordings.find((r) => r.messages.at(-1)?.role === 'user') as TauRecordedConversation;
    const context = compileContext(eventsFromRecording(recording), {
      instructions: recording.system ?? undefined,
    });

    const answer = await createRecordedModel(byKey)(inputFor(recording.key), context, live());

    expect(answer).toMatchObject({ error_class: 'recording_exhausted', retryable: false });
  });

  it('reports recording_not_found for an unknown or missing recording key, and cancelled for an aborted signal', async () => {
    const model = createRecordedModel(byKey);
    const context = { messages: [], manifest: { from_seq: 1, to_seq: 0, included: [] } };

    expect(await model(inputFor('no-such'), context, live())).toMatchObject({
      error_class: 'recording_not_found',
    });
    expect(await model({ ...inputFor('x'), executor_config: {} }, context, live())).toMatchObject({
      error_class: 'recording_not_found',
    });
    expect(await model(inputFor('0:0'), context, AbortSignal.abort())).toMatchObject({
      error_class: 'cancelled',
    });
  });
});
