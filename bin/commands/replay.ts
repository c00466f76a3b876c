/**
 * `agent-runs replay FILE`: replays recorded tau-bench conversations as durable runs on a fresh
 * local stack (started in this process) and checks that the runtime reproduces each exactly.
 * Exit code 1 when any conversation diverged or a run was stranded.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, type CommandModule, parseIntArg } from './context.ts';

interface ReplayOptions {
  tools?: string;
  world?: string;
  db?: string;
  finalDb?: string;
  notReplaySafe?: string;
  chaos?: boolean;
  seed?: string;
  concurrency?: string;
  limit?: string;
  report?: string;
  modelRecording?: string;
  progress?: boolean;
  url?: string;
}

export const replayCommand: CommandModule = {
  name: 'replay',
  register(program, ctx) {
    program
      .command('replay')
      .description(
        'replay recorded conversations (tau-bench format) as durable runs and check they reproduce exactly',
      )
      .argument('<file>', 'trajectories JSON file (e.g. data/tau-bench-airline/trajectories.json)')
      .option('--tools <file>', 'tool definitions (OpenAI function format); default: tools.json beside FILE')
      .option(
        '--chaos',
        'kill workers at random commit boundaries, duplicate and delay step messages, force lease expiries',
      )
      .option(
        '--world <kind>',
        'recorded: the tools answer from the recording; live: the airline tools run over a private copy of the database per conversation and the benchmark verdict is recomputed',
        'recorded',
      )
      .option('--db <dir>', 'airline database of the live world (default: db/ beside FILE)')
      .option('--final-db <dir>', 'live world: write each final database to DIR/{task_id}-{trial}.json')
      .option(
        '--not-replay-safe <tools>',
        'comma-separated tools each run declares non-replay-safe (an abandoned call reaches the reducer as outcome_unknown)',
      )
      .option('--seed <n>', 'seed of the chaos decisions', '1')
      .option('--concurrency <n>', 'conversations replayed at once', '8')
      .option('--limit <n>', 'replay only the first N conversations')
      .option('--report <file>', 'JSON report path', 'reports/replay.json')
      .option(
        '--model-recording <file>',
        'replay the model from another recording (checks that divergence is caught)',
      )
      .option('--no-progress', 'no progress (bar or lines)')
      .action(async (file: string, opts: ReplayOptions, cmd: Command) => {
        const globals = cmd.optsWithGlobals<{ url?: string }>();
        if (globals.url !== undefined) {
          throw new CliError(
            'unsupported',
            'replay starts its own local stack (the recorded tools run in it): drop --url',
          );
        }
        const world = opts.world ?? 'recorded';
        if (world !== 'recorded' && world !== 'live') {
          throw new CliError('invalid_argument', `--world must be recorded or live (got ${world})`);
        }
        if (world !== 'live' && (opts.finalDb !== undefined || opts.db !== undefined)) {
          throw new CliError('invalid_argument', '--db and --final-db need --world live');
        }
        // The replay's modules (the local stack, the models, the airline world) load only here.
        const [{ localReplayStack }, { runReplay }] = await Promise.all([
          import('../../lib/replay/local.ts'),
          import('../../lib/replay/run-replay.ts'),
        ]);
        const path = resolve(ctx.io.cwd, file);
        const report = await runReplay({
          file: path,
          toolsFile: resolve(ctx.io.cwd, opts.tools ?? resolve(path, '..', 'tools.json')),
          world,
          ...(opts.notReplaySafe !== undefined
            ? {
                notReplaySafe: opts.notReplaySafe
                  .split(',')
                  .map((t) => t.trim())
                  .filter((t) => t !== ''),
              }
            : {}),
          ...(opts.db !== undefined ? { databaseDir: resolve(ctx.io.cwd, opts.db) } : {}),
          ...(opts.finalDb !== undefined ? { finalDbDir: resolve(ctx.io.cwd, opts.finalDb) } : {}),
          ...(opts.modelRecording !== undefined
            ? { modelFile: resolve(ctx.io.cwd, opts.modelRecording) }
            : {}),
          chaos: opts.chaos === true,
          seed: parseIntArg('--seed', opts.seed ?? '1'),
          concurrency: parseIntArg('--concurrency', opts.concurrency ?? '8'),
          ...(opts.limit !== undefined ? { limit: parseIntArg('--limit', opts.limit) } : {}),
          reportPath: resolve(ctx.io.cwd, opts.report ?? 'reports/replay.json'),
          // A bar on a terminal, plain progress lines elsewhere (CI logs, | tee); --no-progress: neither.
          progress: opts.progress !== false,
          ...(ctx.io.tty !== undefined ? { progressTty: ctx.io.tty } : {}),
          startStack: localReplayStack({
            onReady: ({ consoleUrl }) => {
              if (consoleUrl !== null)
                ctx.io.out(`console: ${consoleUrl} (watch the runs while they replay)`);
            },
          }),
          out: (line) => ctx.io.out(line),
        });
        if (report.summary.diverged > 0) ctx.exitCode = 1;
      });
  },
};
