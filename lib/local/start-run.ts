/**
 * The body of `agent-runs start` / `npm start` (lib/local/start-command.ts loads it when the
 * command runs): starts the local stack with the sample tools and those of AGENT_RUNS_TOOLS, and
 * the scripted local model when the environment configures no model provider.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../contracts/index.ts';
import { ModelConfigError, modelsFromEnv } from '../models/configured.ts';
import { createScriptedModel, SCRIPTED_MODEL_DESCRIPTION } from '../models/scripted.ts';
import { toolsFromEnv } from '../tools/configured.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { registerSampleTools } from './sample-tools.ts';
import { type LocalStack, LocalStackError, type LocalStackOptions, runLocalStack } from './stack.ts';

/** A level of --log-level (start-command.ts's LOG_LEVELS lists them). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

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

/** start-command.ts's startFromOptions, with the stack's modules loaded. */
export async function startStack(
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
