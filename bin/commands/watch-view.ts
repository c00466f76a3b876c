/**
 * The terminal view of `agent-runs watch`, in Ink (React for the terminal): the status line, the
 * plan, why the run is not moving, the last events scrolling, the open requests with the keys
 * that answer them, and each control's ack. Events arrive over the live WebSocket or server-sent
 * events when the stack has them, else by long polling (eventsOver); the run record is read
 * again whenever the view has caught up with the log. Written with createElement, since Node
 * strips types but does not compile JSX.
 */
import { Box, render, Text, useApp, useInput } from 'ink';
import TextInput from 'ink-text-input';
import { createElement as h, type ReactElement, useEffect, useRef, useState } from 'react';
import type { AgentRunsClient } from '../../lib/client/client.ts';
import type { LiveTarget } from '../../lib/client/live.ts';
import type { LeaseTiming } from '../../lib/client/waiting.ts';
import type { ControlAck, PublicRunRecord } from '../../lib/contracts/index.ts';
import type { FollowVia } from './events.ts';
import { eventsOver } from './follow.ts';
import {
  actionOfKey,
  eventLines,
  initialState,
  type KeyAction,
  keyHelp,
  planLines,
  requestLines,
  statusLine,
  type WatchState,
  waitingLines,
  withAck,
  withEvent,
  withRun,
} from './watch-model.ts';

export interface WatchProps {
  client: AgentRunsClient;
  /** The deployment's timings (`GET /config`), for the waiting hints; default the runtime's. */
  timing?: LeaseTiming;
  target: LiveTarget;
  via: FollowVia;
  run: PublicRunRecord;
}

/** Events shown before the live ones start: the last few already in the log. */
const BACKLOG = 8;

/** Follows the run's events into the state until it settles or the view closes. */
function useFollow(props: WatchProps, setState: (update: (s: WatchState) => WatchState) => void): void {
  useEffect(() => {
    const abort = new AbortController();
    const { client, target, via, run } = props;
    const refresh = async () => {
      const next = await client.getRun(run.run_id);
      setState((s) => withRun(s, next));
      return next.last_seq;
    };
    void (async () => {
      let caughtUp = run.last_seq;
      const after = Math.max(0, run.last_seq - BACKLOG);
      const events = eventsOver(via, client, target, run.run_id, after, 100, () => {}, abort.signal);
      for await (const event of events) {
        setState((s) => withEvent(s, event));
        if (event.seq >= caughtUp) caughtUp = await refresh();
      }
      if (abort.signal.aborted) return;
      await refresh();
      setState((s) => ({ ...s, ended: true }));
    })().catch((err: unknown) => {
      if (!abort.signal.aborted) setState((s) => withAck(s, 'following', { error: String(err) }));
    });
    return () => abort.abort();
  }, [props, setState]);
}

/** Sends the control a key asked for and records its ack (or its error) in the state. */
async function send(
  props: WatchProps,
  action: KeyAction | { kind: 'steer'; text: string } | { kind: 'answer'; request_id: string; text: string },
): Promise<[string, ControlAck] | null> {
  const { client } = props;
  const id = props.run.run_id;
  switch (action.kind) {
    case 'approve':
      return [
        `${action.decision === 'approved' ? 'approve' : 'reject'} ${action.request_id}`,
        await client.approve(id, action.request_id, action.digest, {
          decision: action.decision,
          ...(action.decision === 'rejected' ? { reason: 'rejected in agent-runs watch' } : {}),
        }),
      ];
    case 'pause':
      return ['pause', await client.pause(id, { reason: 'paused in agent-runs watch' })];
    case 'resume':
      return ['resume', await client.resume(id)];
    case 'stop':
      return ['stop', await client.stop(id, { reason: 'stopped in agent-runs watch' })];
    case 'steer':
      return ['steer', await client.steer(id, action.text)];
    case 'answer':
      return [`answer ${action.request_id}`, await client.answer(id, action.request_id, action.text)];
    default:
      return null;
  }
}

function section(title: string, lines: string[], color?: string): ReactElement | null {
  if (lines.length === 0) return null;
  return h(
    Box,
    { flexDirection: 'column', marginTop: 1 },
    h(Text, { bold: true, ...(color !== undefined ? { color } : {}) }, title),
    ...lines.map((line, i) => h(Text, { key: i, wrap: 'truncate-end' }, line)),
  );
}

function WatchApp(props: WatchProps): ReactElement {
  const { exit } = useApp();
  const [state, setState] = useState<WatchState>(() => initialState(props.run, props.via));
  const [text, setText] = useState('');
  const stateRef = useRef(state);
  stateRef.current = state;
  useFollow(props, setState);

  const act = (action: Parameters<typeof send>[1]) => {
    setState((s) => ({ ...s, mode: { kind: 'keys' } }));
    send(props, action).then(
      async (result) => {
        if (result === null) return;
        setState((s) => withAck(s, result[0], result[1]));
        const run = await props.client.getRun(props.run.run_id);
        setState((s) => withRun(s, run));
      },
      (err: unknown) => setState((s) => withAck(s, action.kind, { error: String(err) })),
    );
  };

  useInput((input, key) => {
    const current = stateRef.current;
    if (current.mode.kind === 'text') {
      if (key.escape) setState((s) => ({ ...s, mode: { kind: 'keys' } }));
      return; // the text input has the keys
    }
    const action = actionOfKey(current, input);
    if (action.kind === 'quit') exit();
    else if (action.kind === 'select') setState((s) => ({ ...s, selected: action.index }));
    else if (action.kind === 'mode') {
      setText('');
      setState((s) => ({ ...s, mode: action.mode }));
    } else if (action.kind !== 'none') act(action);
  });

  const submit = (value: string) => {
    const mode = stateRef.current.mode;
    if (mode.kind !== 'text' || value.trim() === '') return;
    if (mode.purpose === 'answer' && mode.request_id !== undefined) {
      act({ kind: 'answer', request_id: mode.request_id, text: value });
    } else act({ kind: 'steer', text: value });
    setText('');
  };

  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { inverse: true, wrap: 'truncate-end' }, ` ${statusLine(state)} `),
    section('plan', planLines(state.run).slice(1), 'cyan'),
    section('waiting', waitingLines(state.run, Date.now(), props.timing), 'yellow'),
    section(`events (last ${state.events.length})`, eventLines(state)),
    section('open requests', requestLines(state), 'magenta'),
    section('acks', state.acks, 'green'),
    state.ended ? h(Text, { bold: true }, `run ${state.run.status}: press q to quit`) : null,
    h(
      Box,
      { marginTop: 1 },
      state.mode.kind === 'text'
        ? h(
            Box,
            null,
            h(Text, null, `${state.mode.purpose}> `),
            h(TextInput, { value: text, onChange: setText, onSubmit: submit }),
          )
        : null,
    ),
    h(Text, { dimColor: true }, keyHelp(state)),
  );
}

/** Runs the view until the person quits (q). Needs a terminal on stdin and stdout. */
export async function runWatchView(props: WatchProps): Promise<void> {
  const app = render(h(WatchApp, props), { interactive: true, exitOnCtrlC: true });
  await app.waitUntilExit();
}
