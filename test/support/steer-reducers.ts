/**
 * Reducers and helpers for the race tests: a reducer that answers a steer by withdrawing its
 * open requests and calling its tool again with the steer's arguments, and a latch that holds
 * a tool or model call until the test lets it go. Contract: raisin.agent-run.reducer/1
 * (open_requests_unresolved: on user_input, withdraw every open request before a new operation).
 */
type Req = {
  state: { seen?: number; args?: Record<string, unknown> } | null;
  state_rev: number;
  event: { seq: number; kind: string; data: Record<string, unknown> };
  run: { status: string; open_requests: { request_id: string }[] };
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

/**
 * Calls `tool` (mutating, not replay-safe) with the run's input as args; on user_input
 * withdraws every open request (the approval the policy gate opened) and calls it again with
 * the steer's input as args; completes with the args of the result it got. Every other event
 * only advances `seen`. An event already seen is answered unchanged (a redelivery).
 */
export function callWithSteer(tool = 'deploy') {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const seen = req.state?.seen ?? 0;
    const seq = req.event.seq;
    if (seq <= seen) {
      const same = respond(req, {}, []);
      return { ...same, state: req.state, state_rev: req.state_rev };
    }
    const call = (args: unknown) => ({ kind: 'call_tool', tool, args, mutating: true, replay_safe: false });
    switch (req.event.kind) {
      case 'run_started': {
        const args = req.event.data.input as Record<string, unknown>;
        return respond(req, { seen: seq, args }, [call(args)]);
      }
      case 'user_input': {
        const args = req.event.data.input as Record<string, unknown>;
        const withdraw = req.run.open_requests.map((r) => ({
          kind: 'withdraw_request',
          request_id: r.request_id,
        }));
        return respond(req, { seen: seq, args }, [...withdraw, call(args)]);
      }
      case 'tool_result': {
        const envelope = req.event.data.envelope as { payload?: unknown };
        return respond(req, { ...req.state, seen: seq }, [
          { kind: 'complete', outcome: 'succeeded', summary: JSON.stringify(envelope.payload ?? null) },
        ]);
      }
      default:
        return respond(req, { ...req.state, seen: seq }, []);
    }
  };
}

/** A gate a tool or model call waits on: `entered` settles when the call arrives, `release` lets it return. */
export interface Latch {
  readonly entered: Promise<void>;
  wait(): Promise<void>;
  release(): void;
}

export function latch(): Latch {
  let onEnter: () => void = () => {};
  let onRelease: () => void = () => {};
  const entered = new Promise<void>((r) => {
    onEnter = r;
  });
  const released = new Promise<void>((r) => {
    onRelease = r;
  });
  return {
    entered,
    async wait() {
      onEnter();
      await released;
    },
    release: () => onRelease(),
  };
}

/** Settles when `signal` aborts (or at once if it already has). */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((r) => signal.addEventListener('abort', () => r(), { once: true }));
}
