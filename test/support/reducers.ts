/** Small deterministic reducers for engine tests (raisin.agent-run.reducer/1). */
type Req = {
  state: { seen?: number; n?: number } | null;
  state_rev: number;
  event: { seq: number; kind: string; data: Record<string, unknown> };
  run: { status: string };
};

/** A reducer/1 response: the next state at state_rev + 1, effects numbered `{rev}:{i}`. */
export function respond(
  req: { state_rev: number },
  state: Record<string, unknown>,
  effects: Record<string, unknown>[],
) {
  const rev = req.state_rev + 1;
  return {
    contract: 'raisin.agent-run.reducer/1',
    state,
    state_rev: rev,
    effects: effects.map((e, i) => ({ effect_id: `${rev}:${i}`, ...e })),
    projection: null,
    diagnostics: [],
    refused: null,
  };
}

/** A reducer/1 response that changes nothing (an event already seen). */
export function unchanged(req: { state_rev: number; state: unknown }) {
  return {
    contract: 'raisin.agent-run.reducer/1',
    state: req.state,
    state_rev: req.state_rev,
    effects: [],
    diagnostics: [],
    refused: null,
  };
}

/** Calls `tool` k times, one after the other, then completes. */
export function toolLoop(
  k: number,
  tool = 'lookup',
  flags: { mutating?: boolean; replay_safe?: boolean } = {},
) {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const seen = req.state?.seen ?? 0;
    if (req.event.seq <= seen) return unchanged(req);
    const n = req.state?.n ?? 0;
    const call = {
      kind: 'call_tool',
      tool,
      args: { i: n },
      mutating: flags.mutating ?? false,
      replay_safe: flags.replay_safe ?? true,
    };
    switch (req.event.kind) {
      case 'run_started':
        return respond(req, { seen: req.event.seq, n: 1 }, [call]);
      case 'tool_result':
      case 'operation_failed':
        if (n >= k)
          return respond(req, { seen: req.event.seq, n }, [
            { kind: 'complete', outcome: 'succeeded', summary: `${n} calls` },
          ]);
        return respond(req, { seen: req.event.seq, n: n + 1 }, [call]);
      default:
        return respond(req, { seen: req.event.seq, n }, []).effects.length === 0
          ? { ...unchanged(req), state: { ...req.state, seen: req.event.seq }, state_rev: req.state_rev + 1 }
          : unchanged(req);
    }
  };
}

/** Asks the model once; completes with its text; keeps asking while it calls tools (k at most). */
export function modelOnce() {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const seen = req.state?.seen ?? 0;
    if (req.event.seq <= seen) return unchanged(req);
    switch (req.event.kind) {
      case 'run_started':
        return respond(req, { seen: req.event.seq }, [{ kind: 'request_model_turn', tools_offered: [] }]);
      case 'model_turn_completed':
        return respond(req, { seen: req.event.seq }, [
          {
            kind: 'complete',
            outcome: 'succeeded',
            summary: String((req.event.data.message as { text?: string }).text ?? ''),
          },
        ]);
      default:
        return { ...unchanged(req), state: { seen: req.event.seq }, state_rev: req.state_rev + 1 };
    }
  };
}

/** Asks the user a question; completes with the answer. */
export function askOnce() {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const seen = req.state?.seen ?? 0;
    if (req.event.seq <= seen) return unchanged(req);
    switch (req.event.kind) {
      case 'run_started':
        return respond(req, { seen: req.event.seq }, [{ kind: 'ask_user', question: 'which flight?' }]);
      case 'request_resolved':
        return respond(req, { seen: req.event.seq }, [
          { kind: 'complete', outcome: 'succeeded', summary: String(req.event.data.value) },
        ]);
      default:
        return { ...unchanged(req), state: { seen: req.event.seq }, state_rev: req.state_rev + 1 };
    }
  };
}

/**
 * Delegation: with input `{children: [args…]}` calls the delegate tool once per entry,
 * one after the other (each waits for its child's hand-back), then completes with a summary that
 * lists each hand-back as `status:payload.status`; a steer withdraws its wait and ends it (partial).
 * A background child's hand-back (`user_input` `{from_child}`) changes nothing. An entry `'pause'` instead asks the user `continue?` and goes on with the next entry once answered.
 * With input `{leaf: 'complete' | 'fail' | 'ask'}`
 * it is a child: completes, fails, or asks a question (and completes with the answer).
 */
export function delegator(delegateTool: string, flags: { replay_safe?: boolean } = {}) {
  type State = { seen: number; children: unknown[]; i: number; results: string[] };
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req & { state: State | null };
    const st: State = req.state ?? { seen: 0, children: [], i: 0, results: [] };
    if (req.event.seq <= st.seen) return unchanged(req);
    const next = (patch: Partial<State>) => ({ ...st, seen: req.event.seq, ...patch });
    const delegate = (args: unknown) =>
      args === 'pause'
        ? { kind: 'ask_user', question: 'continue?' }
        : {
            kind: 'call_tool',
            tool: delegateTool,
            args,
            mutating: false,
            replay_safe: flags.replay_safe ?? true,
          };
    switch (req.event.kind) {
      case 'run_started': {
        const input = (req.event.data.input ?? {}) as { children?: unknown[]; leaf?: string };
        if (input.leaf === 'complete')
          return respond(req, next({}), [{ kind: 'complete', outcome: 'succeeded', summary: 'leaf done' }]);
        if (input.leaf === 'fail')
          return respond(req, next({}), [{ kind: 'fail', code: 'leaf_failed', message: 'the leaf failed' }]);
        if (input.leaf === 'ask') return respond(req, next({}), [{ kind: 'ask_user', question: 'go on?' }]);
        const children = input.children ?? [];
        if (children.length === 0)
          return respond(req, next({}), [{ kind: 'complete', outcome: 'succeeded', summary: '' }]);
        return respond(req, next({ children, i: 1 }), [delegate(children[0])]);
      }
      case 'request_resolved':
        if (st.i > 0 && st.i < st.children.length)
          return respond(req, next({ i: st.i + 1 }), [delegate(st.children[st.i])]);
        return respond(req, next({}), [
          { kind: 'complete', outcome: 'succeeded', summary: String(req.event.data.value) },
        ]);
      case 'user_input': {
        // A background child's hand-back: noted, the parent goes on as it was.
        const steer = req.event.data.input as { from_child?: unknown } | null | undefined;
        if (typeof steer === 'object' && steer !== null && steer.from_child !== undefined)
          return { ...unchanged(req), state: next({}), state_rev: req.state_rev + 1 };
        // A steer: stop waiting for any child, and end.
        const open = ((req.run as { open_requests?: { kind: string; request_id: string }[] }).open_requests ??
          []) as { kind: string; request_id: string }[];
        return respond(req, next({}), [
          ...open
            .filter((r) => r.kind === 'result')
            .map((r) => ({ kind: 'withdraw_request', request_id: r.request_id })),
          { kind: 'complete', outcome: 'partial', summary: 'steered away' },
        ]);
      }
      case 'tool_result':
      case 'operation_failed': {
        const env = (req.event.data.envelope ?? {}) as { status?: string; payload?: { status?: string } };
        const line =
          req.event.kind === 'tool_result'
            ? `${env.status}:${env.payload?.status ?? '-'}`
            : `operation_failed:${String(req.event.data.error_class)}`;
        const results = [...st.results, line];
        if (st.i < st.children.length)
          return respond(req, next({ results, i: st.i + 1 }), [delegate(st.children[st.i])]);
        return respond(req, next({ results }), [
          { kind: 'complete', outcome: 'succeeded', summary: results.join(',') },
        ]);
      }
      default:
        return { ...unchanged(req), state: next({}), state_rev: req.state_rev + 1 };
    }
  };
}
