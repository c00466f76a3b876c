/**
 * Compaction on the memory engine with the default agent loop (in process) and a 200-turn
 * scripted conversation (test/support/long-conversation.ts): the runtime compacts when the
 * input passes executor_config.compaction.max_input_tokens, the agent loop asks for it with
 * context.compact_above_tokens, the model turns after a compaction are compiled from its
 * checkpoint, and a compaction dispatched again after a crash plans the same window. Prints the
 * model input sizes (o200k_base tokens) with and without compaction.
 * docs/contracts/run-lifecycle.md, "Operations", "Checkpoints".
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../lib/contracts/index.ts';
import { type LongConversation, runLongConversation } from '../support/long-conversation.ts';

const TURNS = 200;

function checkpointEvents(events: RunEvent[]): RunEvent[] {
  return events.filter((e) => e.kind === 'checkpoint_written' && e.data.reason === 'compaction');
}

function figures(label: string, c: LongConversation) {
  const last = c.seen.at(-1);
  const total = c.seen.reduce((n, s) => n + s.tokens, 0);
  const peak = Math.max(...c.seen.map((s) => s.tokens));
  return {
    label,
    turns: c.seen.length,
    last_input_tokens: last?.tokens,
    peak,
    total,
    compactions: checkpointEvents(c.events).length,
  };
}

describe('compaction over a 200-turn scripted conversation', () => {
  it("keeps the model input bounded: compacted by the runtime or on the reducer's request, same answers", async () => {
    const full = await runLongConversation(TURNS);
    const byRuntime = await runLongConversation(TURNS, { compaction: { max_input_tokens: 6000 } });
    const byReducer = await runLongConversation(TURNS, {}, { compact_above_tokens: 8000 });
    const table = [figures('none', full), figures('runtime', byRuntime), figures('reducer', byReducer)];
    console.log('model input tokens (o200k_base) per conversation:', JSON.stringify(table, null, 1));

    for (const c of [full, byRuntime, byReducer]) {
      expect(c.run).toMatchObject({ status: 'completed', outcome: 'succeeded' });
      expect(c.seen).toHaveLength(TURNS);
    }
    // The same tool calls were made in the same order: compaction changed what the model read only.
    const calls = (c: LongConversation) =>
      c.events.filter((e) => e.kind === 'tool_result').map((e) => (e.data.call_id as string) ?? '');
    expect(calls(byRuntime)).toEqual(calls(full));
    expect(calls(byReducer)).toEqual(calls(full));
    expect(full.seen.some((s) => s.compacted !== undefined)).toBe(false);
    for (const c of [byRuntime, byReducer]) {
      expect(checkpointEvents(c.events).length).toBeGreaterThan(3);
      const last = c.seen.at(-1);
      expect(last?.compacted).toBeDefined();
      expect(last?.tokens ?? Infinity).toBeLessThan((full.seen.at(-1)?.tokens ?? 0) / 5);
    }
  }, 180_000); // 600 model turns, each input tokenized: slow on a loaded machine

  it('compiles the turn after a compaction from its checkpoint: structured state, then the window', async () => {
    const c = await runLongConversation(40, { compaction: { max_input_tokens: 4000, keep_turns: 3 } });
    const [first] = checkpointEvents(c.events);
    if (first === undefined) throw new Error('no compaction');
    const n = Number(first.data.checkpoint_no);
    const checkpoint = await c.store.getCheckpoint(c.run.run_id, n);
    expect(checkpoint).toMatchObject({
      n,
      reason: 'compaction',
      transcript_cutoff_seq: first.seq,
      compaction: { window_from_seq: expect.any(Number), omitted: { from_seq: 2 } },
    });
    const section = checkpoint?.compaction;
    expect(section?.tokens_after).toBeLessThan(section?.tokens_before ?? 0);
    // The large tool results before it are referenced by event, not copied into the checkpoint.
    const large = c.events.filter(
      (e) => e.kind === 'tool_result' && e.seq < first.seq && JSON.stringify(e.data).length > 8 * 1024,
    );
    expect(large.length).toBeGreaterThan(0);
    expect(checkpoint?.large_results?.map((r) => r.seq)).toEqual(large.map((e) => e.seq));
    for (const ref of checkpoint?.large_results ?? []) {
      const event = c.events.find((e) => e.seq === ref.seq);
      expect(event).toMatchObject({ kind: 'tool_result', data: { tool: ref.tool } });
      expect(ref.chars).toBeGreaterThanOrEqual(8 * 1024);
    }
    expect(JSON.stringify(checkpoint).length).toBeLessThan(
      large.reduce((n, e) => n + JSON.stringify(e.data).length, 0),
    );
    // The window starts at the third-last model turn before the compaction.
    const turnSeqs = c.events
      .filter((e) => e.kind === 'model_turn_completed' && e.seq < first.seq)
      .map((e) => e.seq);
    expect(section?.window_from_seq).toBe(turnSeqs.at(-3));
    // The model turn right after it (the first input carrying `compacted`) names this checkpoint.
    const after = c.seen.find((s) => s.compacted !== undefined);
    expect(after?.compacted).toEqual({
      run_id: c.run.run_id,
      checkpoint_no: n,
      window_from_seq: section?.window_from_seq,
    });
    // The compaction is an operation of its own, started and ended before that model turn.
    const started = c.events.filter((e) => e.kind === 'operation_started' && e.data.kind === 'compaction');
    expect(started.length).toBe(checkpointEvents(c.events).length);
    expect(first.operation_id).toBe(started[0]?.operation_id);
  }, 120_000);

  it('plans the same window when a compaction is dispatched again after a crash (replay-safe)', async () => {
    const config = { compaction: { max_input_tokens: 4000 } };
    const clean = await runLongConversation(40, config);
    let crashed = 0;
    const crashy = await runLongConversation(40, config, {}, (point, run) => {
      if (point !== 'after_dispatch' || crashed > 0 || run?.operation?.kind !== 'compaction') return;
      crashed += 1;
      throw new Error('crash after the compaction ran, before its commit');
    });
    expect(crashed).toBe(1);
    // Where each window starts, counted in model turns (the takeover's own events shift the seqs).
    const windows = (c: LongConversation) =>
      checkpointEvents(c.events).map((e) => {
        const from = (e.data.compaction as { window_from_seq: number }).window_from_seq;
        return c.events.filter((x) => x.kind === 'model_turn_completed' && x.seq < from).length;
      });
    expect(windows(crashy)).toEqual(windows(clean));
    expect(crashy.events.some((e) => e.kind === 'lease_taken_over')).toBe(true);
    // The compaction taken over ran again under its op id, and its checkpoint was written once.
    const firstOp = checkpointEvents(crashy.events)[0]?.operation_id;
    const starts = crashy.events.filter((e) => e.kind === 'operation_started' && e.operation_id === firstOp);
    expect(starts.map((e) => e.data.attempt)).toEqual([1, 2]);
    expect(checkpointEvents(crashy.events).filter((e) => e.operation_id === firstOp)).toHaveLength(1);
    expect(crashy.run).toMatchObject({ status: 'completed', outcome: 'succeeded' });
  }, 120_000);
});
