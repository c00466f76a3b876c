/**
 * `agent-runs events <run> [--follow [--via ws|sse|poll]]`: a page of events, or a live view
 * that prints events as they arrive until the run ends: over the live WebSocket when its URL is
 * known (--ws-url, AGENT_RUNS_WS_URL, the local stack's state file), else by long polling;
 * `--via sse` follows the server-sent event stream; `--until KIND` stops after the first event of
 * that kind (a script waits for `request_opened`, then approves). On a terminal the live view keeps a status line
 * (cli-progress) under the events: status, operations (a bar when max_operations is set),
 * turns, model and tool calls, tokens. With --json it prints one event per line (NDJSON).
 */
import type { Command } from 'commander';
import type { LiveTarget } from '../../lib/client/live.ts';
import { CLI_ENV } from '../../lib/contracts/env-names.ts';
import { CliError, type CommandModule, parseIntArg } from './context.ts';

interface EventsOptions {
  after: string;
  limit: string;
  follow?: boolean;
  via?: string;
  until?: string;
  fullDigests?: boolean;
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
      `--via ws needs the live WebSocket URL: pass --ws-url or set ${CLI_ENV.AGENT_RUNS_WS_URL}`,
    );
  return via as FollowVia;
}

export const eventsCommand: CommandModule = {
  name: 'events',
  register(program, ctx) {
    program
      .command('events <run>')
      .description(
        "print a run's events, one a line from #N, the event's number in the run's log (its seq); --follow prints them live until the run ends",
      )
      .option('--after <n>', 'events after event #n (its seq; 0: from the first)', '0')
      .option('--limit <n>', 'page size (1..1000)', '100')
      .option('-f, --follow', 'follow live until the run ends')
      .option(
        '--full-digests',
        'print digests in full (by default the first 12 hex characters; --json always has them in full)',
      )
      .option('--via <transport>', 'with --follow: ws (the live WebSocket), sse or poll (long polling)')
      .option(
        '--until <kind>',
        'with --follow: stop after the first event of this kind (e.g. request_opened), or when the run ends',
      )
      .action(async (runId: string, opts: EventsOptions, cmd: Command) => {
        const client = ctx.client(cmd);
        const after = parseIntArg('--after', opts.after);
        const limit = parseIntArg('--limit', opts.limit);
        if (opts.follow === true) {
          const target = ctx.liveTarget(cmd);
          const { follow, untilKind } = await import('./follow.ts');
          const until = untilKind(opts.until);
          await follow(ctx, cmd, client, runId, after, limit, followVia(opts.via, target), target, until);
          return;
        }
        const page = await client.listRunEvents(runId, { after, limit });
        const { formatEvent } = await import('./format.ts');
        ctx.print(
          cmd,
          () =>
            [
              ...page.events.map((e) => formatEvent(e, { fullDigests: opts.fullDigests === true })),
              page.next_after < page.last_seq
                ? `more: --after ${page.next_after} (the last event is #${page.last_seq}; the run is ${page.status})`
                : `(the last event is #${page.last_seq}; the run is ${page.status})`,
            ].join('\n'),
          page,
        );
      });
  },
};
