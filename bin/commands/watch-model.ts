/**
 * What `agent-runs watch` shows and which key does what, as pure functions of the run, its last
 * events and the acks so far (the Ink view in watch-view.ts only lays them out).
 */
import { controlReasonText } from '../../lib/client/reason-words.ts';
import { type LeaseTiming, type WaitingReason, waitingReasons } from '../../lib/client/waiting.ts';
import type { ControlAck, PublicRunRecord, RunEvent, RunStatus } from '../../lib/contracts/index.ts';
import { formatAck, formatEvent, formatRequest, formatWaiting, printable } from './format.ts';

/** How many of the last events the view keeps. */
export const EVENT_LINES = 12;
/** How many acks (and errors) the view keeps. */
export const ACK_LINES = 4;

/** What the keyboard is doing: single keys, a text being typed for a steer or an answer, or a stop to confirm. */
export type WatchMode =
  | { kind: 'keys' }
  | { kind: 'text'; purpose: 'steer' | 'answer'; request_id?: string }
  | { kind: 'confirm_stop' };

export interface WatchState {
  run: PublicRunRecord;
  /** The last EVENT_LINES events, oldest first. */
  events: RunEvent[];
  /** The last ACK_LINES acks and errors, oldest first, as printed. */
  acks: string[];
  /** Index into the open requests of the request the keys act on. */
  selected: number;
  mode: WatchMode;
  /** How events arrive: `ws`, `sse` or `poll`. */
  via: string;
  /** Set once the run ended and its last event arrived. */
  ended: boolean;
}

export function initialState(run: PublicRunRecord, via: string): WatchState {
  return { run, events: [], acks: [], selected: 0, mode: { kind: 'keys' }, via, ended: false };
}

/** The state after `event` arrived (kept only if newer than the last one kept). */
export function withEvent(state: WatchState, event: RunEvent): WatchState {
  if (state.events.length > 0 && (state.events.at(-1)?.seq ?? 0) >= event.seq) return state;
  return { ...state, events: [...state.events, event].slice(-EVENT_LINES) };
}

/** The state with the run as read now (the selection kept within its open requests). */
export function withRun(state: WatchState, run: PublicRunRecord): WatchState {
  const selected = Math.min(state.selected, Math.max(0, run.open_requests.length - 1));
  return { ...state, run, selected };
}

/** The state with one more ack line (`what: applied (seq 12)`), or an error line. */
export function withAck(state: WatchState, what: string, ack: ControlAck | { error: string }): WatchState {
  const line = printable('error' in ack ? `${what}: error: ${ack.error}` : `${what}: ${formatAck(ack)}`);
  return { ...state, acks: [...state.acks, line].slice(-ACK_LINES) };
}

/** How events arrive, in words (the `--via` transports). */
const VIA_WORDS: Record<string, string> = {
  ws: 'websocket',
  sse: 'server-sent events',
  poll: 'long polling',
};

/** The status line: run, status, usage and how events arrive. */
export function statusLine(state: WatchState): string {
  const { run } = state;
  const u = run.usage;
  const extra =
    run.status === 'paused'
      ? ` (${controlReasonText(run.pause_reason)})`
      : 'terminal_reason' in run
        ? ` (${controlReasonText(run.terminal_reason)})`
        : '';
  return printable(
    `${run.run_id}  ${run.status.toUpperCase()}${extra}  ` +
      `turns ${u.turns} · operations ${u.operations} · model calls ${u.model_calls} · tool calls ${u.tool_calls} · ` +
      `tokens ${u.input_tokens + u.output_tokens} · events ${run.last_seq}  live: ${VIA_WORDS[state.via] ?? state.via}`,
  );
}

/** The plan: the projection's summary and items, or nothing. */
export function planLines(run: PublicRunRecord): string[] {
  if (run.projection === null) return [];
  const head = `plan${run.projection.summary ? `: ${run.projection.summary}` : ''}`;
  return [head, ...run.projection.items.map((item) => `  [${item.status}] ${item.title}`)].map(printable);
}

/** The open requests, the selected one marked `>`, numbered for the keys 1..9. */
export function requestLines(state: WatchState): string[] {
  return state.run.open_requests.map(
    (r, i) => `${i === state.selected ? '>' : ' '} ${i + 1}. ${formatRequest(r)}`,
  );
}

/** Why the run is not moving, in words (the commands are the keys here). */
export function waitingLines(run: PublicRunRecord, now: number, timing?: LeaseTiming): string[] {
  const reasons: WaitingReason[] = waitingReasons(run, now, timing).map((r) => ({ ...r, commands: [] }));
  return formatWaiting(reasons, new Map(), '  ');
}

export function eventLines(state: WatchState): string[] {
  return state.events.flatMap((e) => formatEvent(e).split('\n'));
}

/** The run controls the keys s, p, u and x send. */
export type ControlKey = 'steer' | 'pause' | 'resume' | 'stop';

/**
 * The run controls that can apply to a run in `status` (what core would not refuse outright):
 * an ended run takes none; a stopping one none (it stops anyway); a paused one steer, resume,
 * stop; any other (queued, running, waiting) steer, pause, stop.
 */
export function controlKeys(status: RunStatus): ControlKey[] {
  switch (status) {
    case 'completed':
    case 'failed':
    case 'stopped':
    case 'cancelling':
      return [];
    case 'paused':
      return ['steer', 'resume', 'stop'];
    case 'queued':
    case 'running':
    case 'waiting':
      return ['steer', 'pause', 'stop'];
  }
}

const CONTROL_KEY_HELP: Record<ControlKey, string> = {
  steer: 's steer',
  pause: 'p pause',
  resume: 'u resume',
  stop: 'x stop',
};

const CONTROL_OF_KEY: Partial<Record<string, ControlKey>> = {
  s: 'steer',
  p: 'pause',
  u: 'resume',
  x: 'stop',
};

/** The keys that apply now, as the help line shows them (the controls per controlKeys). */
export function keyHelp(state: WatchState): string {
  if (state.mode.kind === 'text') return `type the ${state.mode.purpose}, Enter to send, Esc to cancel`;
  if (state.mode.kind === 'confirm_stop') return 'stop the run? y to stop, any other key to keep it';
  const selected = state.run.open_requests[state.selected];
  const keys = [
    ...(state.run.open_requests.length > 1 ? ['1-9 select'] : []),
    ...(selected?.kind === 'approval' ? ['a approve', 'r reject'] : []),
    ...(selected?.kind === 'input' ? ['n answer'] : []),
    ...controlKeys(state.run.status).map((key) => CONTROL_KEY_HELP[key]),
    'q quit',
  ];
  return keys.join(' · ');
}

/** What a key asks for: a control to send, a mode to enter, or nothing. */
export type KeyAction =
  | { kind: 'approve'; request_id: string; digest: string; decision: 'approved' | 'rejected' }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'stop' }
  | { kind: 'quit' }
  | { kind: 'mode'; mode: WatchMode }
  | { kind: 'select'; index: number }
  | { kind: 'none' };

/**
 * The action of `key` pressed in the keys or confirm mode (text mode keys go to the text input).
 * A control key that does not apply to the run's status (controlKeys) does nothing.
 */
export function actionOfKey(state: WatchState, key: string): KeyAction {
  const controls = controlKeys(state.run.status);
  if (state.mode.kind === 'confirm_stop') {
    if (key !== 'y') return { kind: 'mode', mode: { kind: 'keys' } };
    // The run may have ended while the question was asked.
    return controls.includes('stop') ? { kind: 'stop' } : { kind: 'mode', mode: { kind: 'keys' } };
  }
  const selected = state.run.open_requests[state.selected];
  const control = CONTROL_OF_KEY[key];
  if (control !== undefined && !controls.includes(control)) return { kind: 'none' };
  if (/^[1-9]$/.test(key)) {
    const index = Number(key) - 1;
    return index < state.run.open_requests.length ? { kind: 'select', index } : { kind: 'none' };
  }
  switch (key) {
    case 'a':
    case 'r':
      if (selected?.kind !== 'approval') return { kind: 'none' };
      return {
        kind: 'approve',
        request_id: selected.request_id,
        digest: selected.subject.digest,
        decision: key === 'a' ? 'approved' : 'rejected',
      };
    case 'n':
      if (selected?.kind !== 'input') return { kind: 'none' };
      return { kind: 'mode', mode: { kind: 'text', purpose: 'answer', request_id: selected.request_id } };
    case 's':
      return { kind: 'mode', mode: { kind: 'text', purpose: 'steer' } };
    case 'p':
      return { kind: 'pause' };
    case 'u':
      return { kind: 'resume' };
    case 'x':
      return { kind: 'mode', mode: { kind: 'confirm_stop' } };
    case 'q':
      return { kind: 'quit' };
    default:
      return { kind: 'none' };
  }
}
