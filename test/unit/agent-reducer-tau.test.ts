/**
 * The default agent reducer driven through all 160 recorded tau-bench airline conversations:
 * every request it makes is the one the recording makes next, every answer passes core's 13
 * validation rules, and the transcript core compiles for each model turn is exactly what the
 * recorded model saw.
 */
import { describe, expect, it } from 'vitest';
import { compileContext } from '../../lib/core/context-compiler.ts';
import { loadToolsOffered, loadTrajectories, toRecordedConversation } from '../../lib/models/tau-bench.ts';
import { RunDriver, replayTauConversation, TAU_BENCH_DIR, tauContext } from './agent-reducer-harness.ts';

const trajectories = await loadTrajectories(`${TAU_BENCH_DIR}/trajectories.json`);
const tools = await loadToolsOffered(`${TAU_BENCH_DIR}/tools.json`);
const conversations = trajectories.map(toRecordedConversation);

function replay(index: number) {
  const conv = conversations[index];
  if (conv === undefined) throw new Error(`no conversation ${index}`);
  const context = tauContext(conv.system, tools);
  return { conv, report: replayTauConversation(conv, context, new RunDriver(`tau-${index}`)) };
}

describe('agent loop on the recorded tau-bench airline conversations', () => {
  it('has all 160 conversations to replay', () => {
    expect(conversations).toHaveLength(160);
  });

  it.each(conversations.map((c, i) => [c.key, i] as const))(
    'conversation %s: asks for exactly the recorded calls, model turns and questions, in order',
    (_key, index) => {
      const { conv, report } = replay(index);
      const messages = conv.messages;
      const last = messages.at(-1);
      const assistantCount = messages.filter((m) => m.role === 'assistant').length;
      const toolCount = messages.filter((m) => m.role === 'tool').length;
      expect(report.modelTurns).toBe(assistantCount);
      expect(report.toolCalls).toBe(toolCount);

      // How the recording ends decides what the reducer must be doing then.
      if (last?.role === 'user' && last.content.includes('###STOP###')) {
        // The customer left: the run is still waiting for the answer to its last question.
        expect(report.last?.kind).toBe('ask_user');
        expect(report.driver.status).toBe('waiting');
      } else if (last?.role === 'tool' && last.name === 'transfer_to_human_agents') {
        // The hand-off tool ends the run.
        expect(report.last).toMatchObject({ kind: 'complete', outcome: 'partial' });
        expect(report.driver.status).toBe('completed');
      } else {
        // The recording was cut at its step limit: the reducer asks for the next model turn.
        expect(report.last?.kind).toBe('request_model_turn');
      }

      // Each model turn's transcript, compiled by core from the event log with the turn's
      // instructions and cutoff, is exactly what the recorded model saw.
      for (const { effect, expected } of report.modelRequests) {
        const transcript = (effect.context as { transcript: { from_seq: number; to_seq: number } })
          .transcript;
        const compiled = compileContext(report.driver.log, {
          instructions: effect.instructions,
          from_seq: transcript.from_seq,
          to_seq: transcript.to_seq,
        });
        const system = conv.system === null ? [] : [{ role: 'system', content: conv.system }];
        expect(compiled.messages).toEqual([...system, ...expected]);
      }

      // The state keeps no message or tool output: policy text (~6 KB) and the 14 tool schemas
      // (~12 KB) dominate it, whatever the conversation's length.
      expect(report.driver.maxStateBytes).toBeLessThan(32 * 1024);
    },
  );
});
