/**
 * The console's second round of words: what a waiting run waits for, what an
 * approval's digest is a hash of, the hints for the ids and raw JSON of an expanded event, the
 * tool card's own operation and the model's finish reasons in plain words.
 */
import { describe, expect, it } from 'vitest';
import { waitsFor } from '../../console/src/model/driver.ts';
import { EVENT_TERM_HINTS, effectText, jsonTermHints } from '../../console/src/model/event-terms.ts';
import { digestHint } from '../../console/src/model/request-words.ts';
import { finishText, transcriptOf } from '../../console/src/model/transcript.ts';
import type { RunEvent } from '../../lib/contracts/index.ts';

describe('what a waiting run waits for', () => {
  it('names an approval, a question or an external result, and both when both are open', () => {
    expect(waitsFor([{ kind: 'approval' }])).toBe('an approval');
    expect(waitsFor([{ kind: 'input' }])).toBe('an answer to its question');
    expect(waitsFor([{ kind: 'result' }, { kind: 'approval' }])).toBe('an approval and an external result');
    expect(waitsFor([])).toBe('an answer');
  });
});

describe('the approval digest', () => {
  it('says a tool call digest covers the tool, its version and its arguments', () => {
    expect(digestHint('tool_call')).toContain('the tool, its version and its arguments');
    expect(digestHint('tool_call')).toContain('if the call changed meanwhile, the approval is refused');
    expect(digestHint('plan')).toContain("the plan's items");
  });
});

describe('an expanded event', () => {
  it('reads an effect id as the reducer ask it names', () => {
    expect(effectText('3:0')).toBe('the 1st thing the reducer asked for at state revision 3');
    expect(effectText('12:2')).toBe('the 3rd thing the reducer asked for at state revision 12');
    expect(effectText('client:1')).toBe("the client's operation no. 1");
    expect(effectText('client:req:2')).toBe("the client's request no. 2");
    expect(effectText('plan')).toBeUndefined();
  });

  it('gives a line for each asked-about term its JSON holds, nested ones included', () => {
    const hints = jsonTermHints({
      event_seq: 7,
      state_rev: 3,
      effects: [{ effect_id: '3:0' }],
      envelope: { legacy: true },
    });
    expect(hints).toEqual([
      EVENT_TERM_HINTS.effect_id,
      EVENT_TERM_HINTS.state_rev,
      EVENT_TERM_HINTS.event_seq,
      EVENT_TERM_HINTS.legacy,
      EVENT_TERM_HINTS.envelope,
    ]);
    expect(jsonTermHints({ manifest: { included: [] } })).toEqual([EVENT_TERM_HINTS.manifest]);
    expect(jsonTermHints({ input: 'x' })).toEqual([]);
    const pinned = jsonTermHints({ pinned: { catalogue: 0, policy: 0, agents: 0 } });
    expect(pinned).toEqual([EVENT_TERM_HINTS.pinned]);
    expect(EVENT_TERM_HINTS.pinned).toContain('the tool catalogue, the policy and the agents');
  });
});

describe('the transcript', () => {
  it("keeps the tool's own operation id, not the model turn's that asked for it", () => {
    const envelope = { envelope: 'raisin.tool-result/1', status: 'succeeded', payload: 1 };
    const events: RunEvent[] = [
      {
        seq: 5,
        kind: 'tool_result',
        at: 5,
        operation_id: 'run_1/op/2',
        data: { call_id: 'x-run_1/op/1', tool: 'echo', envelope },
      },
    ];
    expect(transcriptOf(events)[0]).toMatchObject({ opId: 'run_1/op/2', callId: 'x-run_1/op/1' });
  });

  it('says why a turn ended in plain words', () => {
    expect(finishText('tool_calls')).toBe('asked for tools');
    expect(finishText('stop')).toBe('finished');
    expect(finishText('max_tokens')).toBe('max tokens');
  });
});
