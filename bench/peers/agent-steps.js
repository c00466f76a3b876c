/**
 * The peer bench's reducer (raisin.agent-run.reducer/1, run in the QuickJS sandbox): for input
 * {run, steps} it calls one tool per step, one after the other, then completes. Step n calls
 * `charge` (mutating, not replay-safe) when n is a multiple of 5, else `lookup` (read-only,
 * replay-safe), with args {run, n}. An operation that failed (for example outcome_unknown after
 * a lost worker) counts as done: the next step follows. Registered by bench/peers/ours.ts.
 */
const CONTRACT = 'raisin.agent-run.reducer/1';

export function reduce(request) {
  const { state, state_rev: rev, event } = request;
  if (state !== null && event.seq <= state.seen) return answer(state, rev, []);
  if (event.kind === 'run_started') {
    const { run, steps } = event.data.input;
    return answer({ seen: event.seq, run, steps, n: 1 }, rev + 1, [call(rev + 1, run, 1)]);
  }
  if (event.kind === 'tool_result' || event.kind === 'operation_failed') {
    const next = { ...state, seen: event.seq, n: state.n + 1 };
    if (state.n >= state.steps) {
      const done = { effect_id: `${rev + 1}:0`, kind: 'complete', outcome: 'succeeded', summary: 'done' };
      return answer(next, rev + 1, [done]);
    }
    return answer(next, rev + 1, [call(rev + 1, state.run, state.n + 1)]);
  }
  return answer({ ...state, seen: event.seq }, rev + 1, []);
}

function call(rev, run, n) {
  const charge = n % 5 === 0;
  return {
    effect_id: `${rev}:0`,
    kind: 'call_tool',
    tool: charge ? 'charge' : 'lookup',
    args: { run, n },
    mutating: charge,
    replay_safe: !charge,
  };
}

function answer(state, state_rev, effects) {
  return { contract: CONTRACT, state, state_rev, effects, diagnostics: [], refused: null };
}
