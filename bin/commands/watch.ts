/**
 * `agent-runs watch <run>`: a live terminal view of one run (bin/commands/watch-view.ts) with
 * keys to act on it: approve or reject the selected approval (its subject summary and digest
 * shown), answer a question, steer, pause, resume and stop, each showing its ack. Needs a
 * terminal; elsewhere `agent-runs events RUN --follow` prints the same events as lines. In the
 * repository's CLI only (bin/agent-runs.ts): the packaged client CLI carries no terminal UI.
 */
import type { Command } from 'commander';
import { shellQuote } from '../../lib/client/cli-invocation.ts';
import { CliError, type CommandModule } from './context.ts';
import { followVia } from './events.ts';

export const watchCommand: CommandModule = {
  name: 'watch',
  register(program, ctx) {
    program
      .command('watch <run>')
      .description(
        'watch a run live in the terminal: status, plan, events, open requests; keys approve, answer, steer, pause, resume, stop',
      )
      .option('--via <transport>', 'how events arrive: ws (the live WebSocket), sse or poll (long polling)')
      .action(async (runId: string, opts: { via?: string }, cmd: Command) => {
        if (ctx.io.tty === undefined || process.stdin.isTTY !== true) {
          throw new CliError(
            'not_a_terminal',
            `watch needs a terminal; without one, follow the events with: ${ctx.cli} events ${shellQuote(runId)} --follow`,
          );
        }
        const client = ctx.client(cmd);
        const target = ctx.liveTarget(cmd);
        const run = await client.getRun(runId);
        // The watched run may come to need them later: the deployment's, asked for once.
        const { deploymentTiming } = await import('../../lib/client/waiting.ts');
        const timing = await deploymentTiming(client);
        // Loaded here so that the other commands never load React and Ink.
        const { runWatchView } = await import('./watch-view.ts');
        await runWatchView({ client, target, via: followVia(opts.via, target), run, timing });
      });
  },
};
