/** Small deterministic reducers for engine tests (raisin.agent-run.reducer/1). */
type Req = {
  state: { seen?: number; n?: number } | null;
  state_rev: number;
  event: { seq: number; kind: string; data: Record<string, unknown> };
  run: { status: string };
};

function respond(req: Req, state: Record<string, unknown>, effects: Record<string, unknown>[]) {
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

function unchanged(req: Req) {
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
