/**
 * What `agent-runs events --follow` and `watch` load when they run (bin/commands/events.ts keeps
 * the registration light): the event stream over a transport, and the live status line
 * (cli-progress) drawn under the events on a terminal.
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { AgentRunsClient } from '../../lib/client/client.ts';
import { followLive, followSse, type LiveTarget } from '../../lib/client/live.ts';
import type { EventPage } from '../../lib/client/shapes.ts';
import { type PublicRunRecord, RUN_EVENT_KINDS, type RunEvent } from '../../lib/contracts/index.ts';
import { type CliContext, CliError } from './context.ts';
import type { FollowVia } from './events.ts';
import { endedWords, formatEvent, printable } from './format.ts';

const endedOf = (run: PublicRunRecord) => endedWords(run) || run.status;

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** The events of `runId` after `after`, once each, until the run settled (or `signal` aborts), over `via`. */
export function eventsOver(
  via: FollowVia,
  client: AgentRunsClient,
  target: LiveTarget,
  runId: string,
  after: number,
  limit: number,
  onPage: (page: EventPage) => void,
  signal?: AbortSignal,
): AsyncGenerator<RunEvent, void, undefined> {
  const abort = signal !== undefined ? { signal } : {};
  if (via === 'ws') return followLive(target, runId, { after, ...abort });
  if (via === 'sse') return followSse(target, runId, { after, ...abort });
  return client.followEvents(runId, { after, limit, onPage, ...abort });
}

/** The status line's values for a run. */
export function statusPayload(run: PublicRunRecord, frame: number): Record<string, string | number> {
  return {
    spinner: SPINNER[frame % SPINNER.length] ?? '',
    status: run.status,
    turns: run.usage.turns,
    model_calls: run.usage.model_calls,
    tool_calls: run.usage.tool_calls,
    tokens: run.usage.input_tokens + run.usage.output_tokens,
    seq: run.last_seq,
  };
}

/** A live status line on `stream`, with events logged above it. */
function liveView(stream: NodeJS.WritableStream, run: PublicRunRecord) {
  const max = run.budgets.max_operations;
  const format = `{spinner} {status} | ${max ? '{bar} ' : ''}operations {value}${max ? '/{total}' : ''} | turns {turns} | model calls {model_calls} | tool calls {tool_calls} | tokens {tokens} | events {seq}`;
  const multi = new cliProgress.MultiBar(
    { format, stream, hideCursor: true, clearOnComplete: false, barsize: 20 },
    cliProgress.Presets.shades_classic,
  );
  let current = run;
  let frame = 0;
  const bar = multi.create(max ?? 0, run.usage.operations, statusPayload(run, frame));
  const timer = setInterval(() => {
    frame += 1;
    bar.update(current.usage.operations, statusPayload(current, frame));
  }, 100);
  const stop = () => {
    clearInterval(timer);
    process.removeListener('SIGINT', interrupted);
    bar.update(current.usage.operations, statusPayload(current, frame));
    multi.update(); // flushes the events logged since the last redraw (stop() does not)
    multi.stop(); // shows the cursor and re-enables line wrapping
  };
  // Ctrl-C: restore the terminal, then exit as interrupted (130).
  const interrupted = () => {
    stop();
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  return {
    log: (line: string) => multi.log(`${line}\n`),
    update(next: PublicRunRecord) {
      current = next;
      bar.update(next.usage.operations, statusPayload(next, frame));
    },
    stop,
  };
}

/** `--until`'s value checked against the event kinds. Throws CliError(invalid_argument) for another. */
export function untilKind(value: string | undefined): RunEvent['kind'] | undefined {
  if (value === undefined) return undefined;
  if (!(RUN_EVENT_KINDS as readonly string[]).includes(value))
    throw new CliError(
      'invalid_argument',
      `--until must be an event kind (${RUN_EVENT_KINDS.join(', ')}): ${value}`,
    );
  return value as RunEvent['kind'];
}

/**
 * Follows a run until it ends (or until the first event of kind `until`), printing every event;
 * returns the run as last read.
 */
export async function follow(
  ctx: CliContext,
  cmd: Command,
  client: AgentRunsClient,
  runId: string,
  after: number,
  limit: number,
  via: FollowVia = 'poll',
  target: LiveTarget = { baseUrl: client.baseUrl },
  until?: RunEvent['kind'],
): Promise<PublicRunRecord> {
  let run = await client.getRun(runId);
  const json = ctx.json(cmd);
  const lineOptions = { fullDigests: (cmd.opts() as { fullDigests?: boolean }).fullDigests === true };
  const view = !json && ctx.io.tty !== undefined ? liveView(ctx.io.tty, run) : null;
  const print = (line: string) => (view ? view.log(line) : ctx.io.out(line));
  try {
    let lastRefresh = run.last_seq;
    const onPage = (page: EventPage) => {
      lastRefresh = Math.max(lastRefresh, page.last_seq);
    };
    for await (const event of eventsOver(via, client, target, runId, after, limit, onPage)) {
      print(json ? JSON.stringify(event) : formatEvent(event, lineOptions));
      if (view !== null && event.seq >= lastRefresh) {
        run = await client.getRun(runId); // once per caught-up page: usage for the status line
        lastRefresh = run.last_seq;
        view.update(run);
      }
      if (event.kind === until) break;
    }
    run = await client.getRun(runId);
    view?.update(run);
  } finally {
    view?.stop();
  }
  if (!json)
    ctx.io.out(
      printable(`run ${runId} ${run.status}${endedOf(run) === run.status ? '' : ` (${endedOf(run)})`}`),
    );
  return run;
}
