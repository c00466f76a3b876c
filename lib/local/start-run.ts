/**
 * The body of `agent-runs start` / `npm start` (lib/local/start-command.ts loads it when the
 * command runs): starts the local stack with the sample tools and those of AGENT_RUNS_TOOLS.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { toolsFromEnv } from '../tools/configured.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { registerSampleTools } from './sample-tools.ts';
import { type LocalStack, LocalStackError, runLocalStack } from './stack.ts';
import type { LogLevel, StartIo, StartOptions } from './start-command.ts';

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
      logger: new Logger({
        serviceName: 'agent-runs-local',
        logLevel: options.logLevel.toUpperCase() as Uppercase<LogLevel>,
      }),
      print: json ? () => {} : io.out,
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
    if (err instanceof LocalStackError) {
      io.err(`agent-runs: the local stack did not start [${err.code}]\n${err.message}`);
      return null;
    }
    throw err;
  }
}
