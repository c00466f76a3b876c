/**
 * Reducers for delegation-tree tests: a parent that starts children (in the background
 * or awaited), steers them through the mailbox and completes once every hand-back is in; and a
 * child that spends model turns, posts to its parent, waits to be steered or gathers evidence.
 */
import { respond, unchanged } from './reducers.ts';

// The reserved tools (lib/contracts/delegation.ts), spelled out so that this module bundles into a
// sandboxed artifact without zod; delegation-tree.test.ts checks they are the contract's.
export const DELEGATE_TOOL = '/lib/raisin/agent-runs/delegate';
export const DELEGATE_MESSAGE_TOOL = '/lib/raisin/agent-runs/delegate/message';

type Req = {
  state: Record<string, unknown> | null;
  state_rev: number;
  event: { seq: number; kind: string; data: Record<string, unknown> };
  run: { status: string; run_id?: string };
};

type Envelope = {
  status?: string;
  evidence?: { kind: string; ok?: boolean }[];
  payload?: { child_run_id?: string; status?: string; outcome?: string; summary?: string };
  diagnostics?: { code: string; message: string }[];
};

/** The parent's script: children to start (delegate args), then messages to send to them. */
export interface TreeParentInput {
  children: Record<string, unknown>[];
  /**
   * Evidence kinds the parent's own completion needs: it completes `succeeded` only when some
   * hand-back envelope carried an entry of each kind with `ok: true` (verified by a child's tool,
   * as a checked hand-back passes it on); otherwise `partial`, saying what is unverified.
   */
  require_evidence?: string[];
  messages?: { to: number; text: string; child_run_id?: string }[];
}

type ParentState = {
  seen: number;
  input: TreeParentInput;
  next: number;
  sent: number;
  busy: boolean;
  started: string[];
  lines: string[];
  handed: number;
  verified: string[];
};

const tool = (name: string, args: unknown) => ({
  kind: 'call_tool',
  tool: name,
  args,
  mutating: false,
  replay_safe: true,
});

function lineOf(env: Envelope): string {
  const code = env.diagnostics?.[0]?.code;
  return `${env.status}${env.payload?.summary !== undefined ? `(${env.payload.summary})` : ''}${code !== undefined ? `[${code}]` : ''}`;
}

/** The evidence kinds verified so far, with those a succeeded hand-back `env` carries with ok: true. */
function verifiedBy(st: ParentState, env: Envelope): string[] {
  if (env.status !== 'succeeded') return st.verified;
  const kinds = (env.evidence ?? []).filter((e) => e.ok === true).map((e) => e.kind);
  return [...new Set([...st.verified, ...kinds])];
}

/** The parent's next operation, or its completion once every child handed back, or nothing (rest). */
function parentNext(st: ParentState): { state: ParentState; effects: Record<string, unknown>[] } {
  const { children, messages = [] } = st.input;
  if (st.next < children.length) {
    return {
      state: { ...st, next: st.next + 1, busy: true },
      effects: [tool(DELEGATE_TOOL, children[st.next])],
    };
  }
  const message = messages[st.sent];
  if (message !== undefined) {
    const args = { child_run_id: message.child_run_id ?? st.started[message.to], text: message.text };
    return { state: { ...st, sent: st.sent + 1, busy: true }, effects: [tool(DELEGATE_MESSAGE_TOOL, args)] };
  }
  if (st.handed >= st.started.length) {
    const unverified = (st.input.require_evidence ?? []).filter((k) => !st.verified.includes(k));
    const summary = [...st.lines, ...(unverified.length > 0 ? [`unverified:${unverified.join(',')}`] : [])];
    return {
      state: { ...st, busy: false },
      effects: [
        {
          kind: 'complete',
          outcome: unverified.length > 0 ? 'partial' : 'succeeded',
          summary: summary.join(' | '),
        },
      ],
    };
  }
  return { state: { ...st, busy: false }, effects: [] };
}

/**
 * Starts each of `input.children` (delegate args, e.g. `{wait: false, input, budgets, returns}`)
 * one after the other, then sends `input.messages` (`{to: child index, text}`) through the mailbox,
 * then rests until every background child handed back (a `tool_result` for an awaited child, a
 * `user_input {from_child, hand_back}` for a background one) and completes with a summary of one
 * line per delegation result, message ack and hand-back, in arrival order.
 */
export function treeParent() {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const prev = req.state as ParentState | null;
    if (prev !== null && req.event.seq <= prev.seen) return unchanged(req);
    const st: ParentState = prev ?? {
      seen: 0,
      input: { children: [] },
      next: 0,
      sent: 0,
      busy: false,
      started: [],
      lines: [],
      handed: 0,
      verified: [],
    };
    const seen = { ...st, seen: req.event.seq };
    const go = (s: ParentState) => {
      const next = parentNext(s);
      return respond(req, next.state, next.effects);
    };
    switch (req.event.kind) {
      case 'run_started':
        return go({ ...seen, input: req.event.data.input as TreeParentInput });
      case 'tool_result': {
        const env = req.event.data.envelope as Envelope;
        const name = req.event.data.tool;
        if (name === DELEGATE_MESSAGE_TOOL)
          return go({ ...seen, busy: false, lines: [...st.lines, `sent:${env.status}`] });
        const payload = env.payload ?? {};
        if (payload.status !== undefined) {
          // An awaited child's hand-back.
          return go({
            ...seen,
            busy: false,
            handed: st.handed + 1,
            lines: [...st.lines, `awaited:${lineOf(env)}`],
          });
        }
        if (payload.child_run_id !== undefined) {
          return go({ ...seen, busy: false, started: [...st.started, payload.child_run_id] });
        }
        return go({ ...seen, busy: false, lines: [...st.lines, `delegate:${lineOf(env)}`] });
      }
      case 'user_input': {
        const input = req.event.data.input as { from_child?: string; hand_back?: Envelope; text?: string };
        const line =
          input.hand_back !== undefined
            ? `background:${lineOf(input.hand_back)}`
            : `message:${input.text ?? JSON.stringify(input)}`;
        const next = {
          ...seen,
          lines: [...st.lines, line],
          handed: st.handed + (input.hand_back !== undefined ? 1 : 0),
          verified: input.hand_back !== undefined ? verifiedBy(st, input.hand_back) : st.verified,
        };
        // A hand-back arriving while an operation is pending changes nothing else.
        if (st.busy) return respond(req, next, []);
        return go(next);
      }
      default:
        return { ...unchanged(req), state: seen, state_rev: req.state_rev + 1 };
    }
  };
}

/** The child's script. */
export interface TreeChildInput {
  /** Model turns to ask for before completing (each stopped by the child's budget if it runs out). */
  turns?: number;
  /** Posts this text to the parent first. */
  post?: string;
  /** Rests after its other work until steered; completes with the steer's text. */
  await_message?: boolean;
  /** Calls this tool once (e.g. one that reports evidence) before completing. */
  call?: string;
  /** How it completes (default succeeded). */
  outcome?: 'succeeded' | 'partial' | 'blocked';
  /** Artifacts on its complete effect. */
  artifacts?: unknown[];
  /** Evidence its complete effect claims (a claim, not a tool's report). */
  claims?: unknown[];
}

type ChildState = {
  seen: number;
  input: TreeChildInput;
  turns: number;
  posted: boolean;
  called: boolean;
  heard: string[];
};

function childNext(st: ChildState): { state: ChildState; effects: Record<string, unknown>[] } {
  const input = st.input;
  if (input.post !== undefined && !st.posted)
    return { state: { ...st, posted: true }, effects: [tool(DELEGATE_MESSAGE_TOOL, { text: input.post })] };
  if (st.turns < (input.turns ?? 0))
    return {
      state: { ...st, turns: st.turns + 1 },
      effects: [{ kind: 'request_model_turn', tools_offered: [] }],
    };
  if (input.call !== undefined && !st.called)
    return { state: { ...st, called: true }, effects: [tool(input.call, {})] };
  if (input.await_message === true && st.heard.length === 0) return { state: st, effects: [] };
  const summary = `turns=${st.turns}${st.heard.length > 0 ? ` heard=${st.heard.join('+')}` : ''}`;
  return {
    state: st,
    effects: [
      {
        kind: 'complete',
        outcome: input.outcome ?? 'succeeded',
        summary,
        ...(input.artifacts !== undefined ? { artifacts: input.artifacts } : {}),
        ...(input.claims !== undefined ? { evidence: input.claims } : {}),
      },
    ],
  };
}

/** A child run driven by its input ({@link TreeChildInput}). */
export function treeChild() {
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const prev = req.state as ChildState | null;
    if (prev !== null && req.event.seq <= prev.seen) return unchanged(req);
    const st: ChildState = prev ?? { seen: 0, input: {}, turns: 0, posted: false, called: false, heard: [] };
    const seen = { ...st, seen: req.event.seq };
    const go = (s: ChildState) => {
      const next = childNext(s);
      return respond(req, next.state, next.effects);
    };
    switch (req.event.kind) {
      case 'run_started':
        return go({ ...seen, input: (req.event.data.input ?? {}) as TreeChildInput });
      case 'model_turn_completed':
      case 'tool_result':
      case 'operation_failed':
        return go(seen);
      case 'user_input': {
        const heard = [...st.heard, String(req.event.data.input)];
        // Steered between operations: take note, and go on only when it was resting.
        const resting =
          st.input.await_message === true && st.heard.length === 0 && st.turns >= (st.input.turns ?? 0);
        return resting ? go({ ...seen, heard }) : respond(req, { ...seen, heard }, []);
      }
      default:
        return { ...unchanged(req), state: seen, state_rev: req.state_rev + 1 };
    }
  };
}

/**
 * One reducer for both roles (for a sandboxed artifact, where a run's children inherit its
 * reducer): a run whose input names `children` is a {@link treeParent}, any other a {@link treeChild}.
 */
export function treeReducer() {
  const parent = treeParent();
  const child = treeChild();
  return (raw: Record<string, unknown>) => {
    const req = raw as unknown as Req;
    const input = (req.state as { input?: unknown } | null)?.input ?? req.event.data.input;
    const isParent = input !== null && typeof input === 'object' && 'children' in input;
    return isParent ? parent(raw) : child(raw);
  };
}
