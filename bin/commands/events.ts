/**
 * `agent-runs events <run> [--follow [--via ws|sse|poll]]`: a page of events, or a live view
 * that prints events as they arrive until the run ends: over the live WebSocket when its URL is
 * known (--ws-url, AGENT_RUNS_WS_URL, the local stack's state file), else by long polling;
 * `--via sse` follows the server-sent event stream. On a terminal the live view keeps a status line
 * (cli-progress) under the events: status, operations (a bar when max_operations is set),
 * turns, model and tool calls, tokens. With --json it prints one event per line (NDJSON).
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import type { AgentRunsClient, EventPage } from '../../lib/client/client.ts';
import { followLive, followSse, type LiveTarget } from '../../lib/client/live.ts';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { type CliContext, CliError, type CommandModule, parseIntArg } from './context.ts';
import { formatEvent, printable } from './format.ts';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

interface EventsOptions {
  after: string;
  limit: string;
  follow?: boolean;
  via?: string;
}

/** How `--follow` receives events. */
export type FollowVia = 'ws' | 'sse' | 'poll';
const FOLLOW_VIA: readonly FollowVia[] = ['ws', 'sse', 'poll'];

/** The transport of `--follow`: `--via`, else the WebSocket when its URL is known, else long polling. */
export function followVia(via: string | undefined, target: LiveTarget): FollowVia {
  if (via === undefined) return target.wsUrl !== undefined ? 'ws' : 'poll';
  if (!(FOLLOW_VIA as readonly string[]).includes(via))
    throw new CliError('invalid_argument', `--via must be one of ${FOLLOW_VIA.join(', ')}: ${via}`);
  if (via === 'ws' && target.wsUrl === undefined)
    throw new CliError(
      'invalid_argument',
      '--via ws needs the live WebSocket URL: pass --ws-url or set AGENT_RUNS_WS_URL',
    );
  return via as FollowVia;
}

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
export function statusPayload(run: RunRecord, frame: number): Record<string, string | number> {
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
function liveView(stream: NodeJS.WritableStream, run: RunRecord) {
  const max = run.budgets.max_operations;
  const format = `{spinner} {status} | ${max ? '{bar} ' : ''}ops {value}${max ? '/{total}' : ''} | turns {turns} | model {model_calls} | tools {tool_calls} | tokens {tokens} | seq {seq}`;
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
    update(next: RunRecord) {
      current = next;
      bar.update(next.usage.operations, statusPayload(next, frame));
    },
    stop,
  };
}

/** Follows a run until it ends, printing every event; returns the run as last read. */
export async function follow(
  ctx: CliContext,
  cmd: Command,
  client: AgentRunsClient,
  runId: string,
  after: number,
  limit: number,
  via: FollowVia = 'poll',
  target: LiveTarget = { baseUrl: client.baseUrl },
): Promise<RunRecord> {
  let run = await client.getRun(runId);
  const json = ctx.json(cmd);
  const view = !json && ctx.io.tty !== undefined ? liveView(ctx.io.tty, run) : null;
  const print = (line: string) => (view ? view.log(line) : ctx.io.out(line));
  try {
    let lastRefresh = run.last_seq;
    const onPage = (page: EventPage) => {
      lastRefresh = Math.max(lastRefresh, page.last_seq);
    };
    for await (const event of eventsOver(via, client, target, runId, after, limit, onPage)) {
      print(json ? JSON.stringify(event) : formatEvent(event));
      if (view !== null && event.seq >= lastRefresh) {
        run = await client.getRun(runId); // once per caught-up page: usage for the status line
        lastRefresh = run.last_seq;
        view.update(run);
      }
    }
    run = await client.getRun(runId);
    view?.update(run);
  } finally {
    view?.stop();
  }
  if (!json)
    ctx.io.out(
      printable(`run ${runId} ${run.status}${'terminal_reason' in run ? `: ${run.terminal_reason}` : ''}`),
    );
  return run;
}

export const eventsCommand: CommandModule = {
  name: 'events',
  register(program, ctx) {
    program
      .command('events <run>')
      .description("print a run's events; --follow prints them live until the run ends")
      .option('--after <seq>', 'events after this seq', '0')
      .option('--limit <n>', 'page size (1..1000)', '100')
      .option('-f, --follow', 'follow live until the run ends')
      .option('--via <transport>', 'with --follow: ws (the live WebSocket), sse or poll (long polling)')
      .action(async (runId: string, opts: EventsOptions, cmd: Command) => {
        const client = ctx.client(cmd);
        const after = parseIntArg('--after', opts.after);
        const limit = parseIntArg('--limit', opts.limit);
        if (opts.follow === true) {
          const target = ctx.liveTarget(cmd);
          await follow(ctx, cmd, client, runId, after, limit, followVia(opts.via, target), target);
          return;
        }
        const page = await client.events(runId, { after, limit });
        ctx.print(
          cmd,
          () =>
            [
              ...page.events.map(formatEvent),
              page.next_after < page.last_seq
                ? `more: --after ${page.next_after} (last seq ${page.last_seq}, ${page.status})`
                : `(${page.status}, last seq ${page.last_seq})`,
            ].join('\n'),
          page,
        );
      });
  },
};
