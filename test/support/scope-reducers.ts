/**
 * A reducer for narrowed-children tests: its input `{calls, delegate}`
 * makes it call tools in order (`calls`, each `{tool, mutating}`) and then delegate once
 * (`delegate`, the delegate tool's args). Every tool result's first diagnostic code (else its
 * status) is kept in its state as `codes`; it completes with the codes as its summary, so a
 * parent sees its child's codes in the hand-back.
 */
import { DELEGATE_TOOL } from '../../lib/contracts/index.ts';
import { respond, unchanged } from './reducers.ts';

export interface ScopedInput {
  calls?: { tool: string; mutating: boolean }[];
  delegate?: Record<string, unknown>;
}

type State = { seen: number; step: number; codes: string[]; input: ScopedInput };
type Req = {
  event: { seq: number; kind: string; data: Record<string, unknown> };
  state: State | null;
  state_rev: number;
};

/** The first diagnostic code of a tool result's envelope, else its status. */
function codeOf(data: Record<string, unknown>): string {
  const env = data.envelope as { status: string; diagnostics?: { code: string }[] } | undefined;
  return env?.diagnostics?.[0]?.code ?? env?.status ?? 'resolved';
}

export function scopedReducer() {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const st: State = req.state ?? { seen: 0, step: 0, codes: [], input: {} };
    if (req.event.seq <= st.seen) return unchanged(req);
    const input = req.event.kind === 'run_started' ? ((req.event.data.input ?? {}) as ScopedInput) : st.input;
    const codes =
      req.event.kind === 'tool_result' || req.event.kind === 'request_resolved'
        ? [...st.codes, req.event.kind === 'tool_result' ? codeOf(req.event.data) : 'handed_back']
        : st.codes;
    if (req.event.kind !== 'run_started' && codes === st.codes)
      return { ...unchanged(req), state: { ...st, seen: req.event.seq }, state_rev: req.state_rev + 1 };
    const calls = input.calls ?? [];
    const next = { seen: req.event.seq, step: st.step + 1, codes, input };
    const call = calls[st.step];
    if (call !== undefined) {
      return respond(req, next, [{ kind: 'call_tool', tool: call.tool, args: {}, ...flags(call.mutating) }]);
    }
    if (input.delegate !== undefined && st.step === calls.length) {
      return respond(req, next, [
        { kind: 'call_tool', tool: DELEGATE_TOOL, args: input.delegate, ...flags(false) },
      ]);
    }
    return respond(req, next, [{ kind: 'complete', outcome: 'succeeded', summary: codes.join(',') }]);
  };
}

function flags(mutating: boolean) {
  return { mutating, replay_safe: true };
}
