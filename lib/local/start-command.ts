/**
 * The command line of the local stack, shared by `npm start` (bin/start.ts) and the CLI's
 * `agent-runs start` (a CommandModule for bin/commands/all.ts's list): options --port, --persist,
 * --log-level; prints the URL, token, state file and start-up time (or, with the CLI's --json,
 * one JSON object); stops cleanly on Ctrl-C. Exit code 1 with a clear message when the stack
 * cannot start (Java missing, port taken, a model variable wrong, ...). When the environment
 * configures no model provider (lib/models/configured.ts), the stack serves the scripted local
 * model (lib/models/scripted.ts) at the contract's default path, so a first run works offline.
 * (That choice is start-run.ts's offlineModelOptions.)
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { LocalStack } from './stack.ts';
import type { LogLevel, StartIo, StartOptions } from './start-run.ts';

// The types live in ./start-run.ts (a type-only import loads nothing), so that the two modules
// import each other in one direction only.
export type { LogLevel, StartIo, StartOptions };

/** The levels --log-level takes (LogLevel, in ./start-run.ts, is their union). */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const satisfies readonly LogLevel[];

function portArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('a port is 0..65535');
  return n;
}

/** Adds --port, --persist and --log-level to a commander command. */
export function addStartOptions(command: Command): Command {
  return command
    .option(
      '-p, --port <port>',
      'HTTP port on 127.0.0.1 (default: env PORT, else 8787; 0 = any free port)',
      portArg,
    )
    .option('--persist <dir>', 'keep DynamoDB, SQS and S3 data in this directory (default: in memory)')
    .addOption(
      new Option('--log-level <level>', 'log level of the handlers (structured JSON on stdout)')
        .choices(LOG_LEVELS)
        .default('info'),
    );
}

/**
 * Starts the stack in the foreground and prints how to reach it. Resolves once it serves (the
 * process then stays up until SIGINT/SIGTERM, which stop it and exit 0); resolves null after
 * printing the reason to `io.err` when it cannot start. `json` prints `{url, token, state_file,
 * startup_ms, pid}` instead of the banner. The stack's modules (AWS SDK, DynamoDB Local, the
 * handlers) load here, from ./start-run.ts, so that registering the command loads none of them.
 */
export async function startFromOptions(
  options: StartOptions,
  io: StartIo,
  json = false,
): Promise<LocalStack | null> {
  const { startStack } = await import('./start-run.ts');
  return startStack(options, io, json);
}

/** Structural match of bin/commands/context.ts's CliContext (what this command uses of it). */
interface StartCliContext {
  io: StartIo;
  cli: string;
  json(cmd: Command): boolean;
  exitCode: number;
}

/**
 * `agent-runs start`: a CommandModule for bin/commands/all.ts (`startCommand` in COMMANDS).
 * Sets the exit code to 1 when the stack cannot start.
 */
export const startCommand = {
  name: 'start',
  register(program: Command, ctx: StartCliContext): void {
    addStartOptions(
      program
        .command('start')
        .description(
          'run the local stack: DynamoDB Local, fauxqs (a local stand-in for SQS and S3), the HTTP API, the step poller (runs queued steps) and the sweeper (takes over stalled runs)',
        ),
    ).action(async (opts: StartOptions, cmd: Command) => {
      const stack = await startFromOptions(opts, { ...ctx.io, cli: ctx.cli }, ctx.json(cmd));
      if (stack === null) ctx.exitCode = 1;
    });
  },
};
