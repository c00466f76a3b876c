/**
 * The command line of the local stack, shared by `npm start` (bin/start.ts) and the CLI's
 * `agent-runs start` (a CommandModule for bin/agent-runs.ts's list): options --port, --persist,
 * --log-level; prints the URL, token, state file and start-up time (or, with the CLI's --json,
 * one JSON object); stops cleanly on Ctrl-C. Exit code 1 with a clear message when the stack
 * cannot start (Java missing, port taken, a model variable wrong, ...). When the environment
 * configures no model provider (lib/models/configured.ts), the stack serves the scripted local
 * model (lib/models/scripted.ts) at the contract's default path, so a first run works offline.
 * Issue 5 ("lib/local: npm start"); issue 26, point 3.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../contracts/index.ts';
import { ModelConfigError, modelsFromEnv } from '../models/configured.ts';
import { createScriptedModel, SCRIPTED_MODEL_DESCRIPTION } from '../models/scripted.ts';
import { toolsFromEnv } from '../tools/configured.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { registerSampleTools } from './sample-tools.ts';
import { type LocalStack, LocalStackError, type LocalStackOptions, runLocalStack } from './stack.ts';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The parsed options of the start command. */
export interface StartOptions {
  port?: number;
  persist?: string;
  logLevel: LogLevel;
}

/** Where the command writes (the CLI's CliIo fits). */
export interface StartIo {
  out(text: string): void;
  err(text: string): void;
  cwd: string;
  /** The terminal, when output is one (a progress bar instead of lines). */
  tty?: NodeJS.WritableStream | undefined;
  /** How the user runs the CLI, for the banner's commands (default `npx agent-runs`). */
  cli?: string;
}

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
 * The scripted local model at the contract's default path when `env` configures no provider
 * (else nothing: the environment's models serve). Throws ModelConfigError for a wrong model
 * configuration, as the runtime would.
 */
export function offlineModelOptions(
  env: NodeJS.ProcessEnv,
): Pick<LocalStackOptions, 'modelFunctions' | 'modelDescriptions'> {
  if (modelsFromEnv(env).models.length > 0) return {};
  return {
    modelFunctions: { [DEFAULT_MODEL_TURN_FUNCTION]: createScriptedModel() },
    modelDescriptions: { [DEFAULT_MODEL_TURN_FUNCTION]: SCRIPTED_MODEL_DESCRIPTION },
  };
}

/**
 * Starts the stack in the foreground and prints how to reach it. Resolves once it serves (the
 * process then stays up until SIGINT/SIGTERM, which stop it and exit 0); resolves null after
 * printing the reason to `io.err` when it cannot start. `json` prints `{url, token, state_file,
 * startup_ms, pid}` instead of the banner.
 */
export async function startFromOptions(
  options: StartOptions,
  io: StartIo,
  json = false,
): Promise<LocalStack | null> {
  try {
    // The sample tools, plus those of AGENT_RUNS_TOOLS (as a deployment configures them).
    const configuredTools = toolsFromEnv(process.env);
    const registerTools = (registry: ToolRegistry) => {
      registerSampleTools(registry);
      configuredTools?.(registry);
    };
    return await runLocalStack({
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(options.persist !== undefined ? { persistDir: options.persist } : {}),
      stateDir: io.cwd,
      registerTools,
      ...offlineModelOptions(process.env),
      logger: new Logger({
        serviceName: 'agent-runs-local',
        logLevel: options.logLevel.toUpperCase() as Uppercase<LogLevel>,
      }),
      print: json ? () => {} : io.out,
      ...(io.cli !== undefined ? { cli: io.cli } : {}),
      progress: !json,
      ...(io.tty !== undefined ? { progressTty: io.tty } : {}),
      ...(json
        ? {
            onReady: (stack: LocalStack) =>
              io.out(
                JSON.stringify({
                  url: stack.url,
                  token: stack.token,
                  state_file: stack.stateFile,
                  startup_ms: stack.startupMs,
                  pid: process.pid,
                }),
              ),
          }
        : {}),
    });
  } catch (err) {
    if (err instanceof LocalStackError || err instanceof ModelConfigError) {
      io.err(`agent-runs: the local stack did not start [${err.code}]\n${err.message}`);
      return null;
    }
    throw err;
  }
}

/** Structural match of bin/commands/context.ts's CliContext (what this command uses of it). */
interface StartCliContext {
  io: StartIo;
  cli: string;
  json(cmd: Command): boolean;
  exitCode: number;
}

/**
 * `agent-runs start`: a CommandModule for bin/agent-runs.ts (add `startCommand` to COMMANDS).
 * Sets the exit code to 1 when the stack cannot start.
 */
export const startCommand = {
  name: 'start',
  register(program: Command, ctx: StartCliContext): void {
    addStartOptions(
      program
        .command('start')
        .description(
          'run the local stack: DynamoDB Local, fauxqs (SQS, S3), the HTTP API, poller and sweeper',
        ),
    ).action(async (opts: StartOptions, cmd: Command) => {
      const stack = await startFromOptions(opts, { ...ctx.io, cli: ctx.cli }, ctx.json(cmd));
      if (stack === null) ctx.exitCode = 1;
    });
  },
};
