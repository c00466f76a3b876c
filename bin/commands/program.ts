/**
 * Builds and runs the commander program from a list of command modules. Errors become one
 * line on stderr (`error: <code>: <message>`, or a JSON object with --json) and exit code 1;
 * a rejected control exits 2. Nothing here touches `process`: bin/commands/all.ts (main) passes it in.
 */
import { Command, CommanderError } from 'commander';
import { ApiError } from '../../lib/client/errors.ts';
import { CLI_ENV } from '../../lib/contracts/env-names.ts';
import {
  type CliContext,
  CliError,
  type CliIo,
  type CommandModule,
  createCliContext,
  loadClientDeps,
} from './context.ts';
import { printable, printableLines } from './printable.ts';

/** The program with every module's commands registered. */
export function buildProgram(modules: readonly CommandModule[], ctx: CliContext, version: string): Command {
  const program = new Command('agent-runs')
    .description('Create, follow and control durable agent runs (the Agent Runs HTTP API).')
    .version(version)
    .option(
      '--url <url>',
      `API base URL (default: ${CLI_ENV.AGENT_RUNS_URL}, or .agent-runs/local.json of the local stack)`,
    )
    .option(
      '--token <token>',
      `bearer token (default: ${CLI_ENV.AGENT_RUNS_TOKEN}, or the local stack token)`,
    )
    .option(
      '--ws-url <url>',
      `live event WebSocket for events --follow (default: ${CLI_ENV.AGENT_RUNS_WS_URL}, or the local stack's)`,
    )
    .option('--json', 'print JSON (one object, or one event per line with events --follow)')
    .showHelpAfterError()
    // The client modules load only when a command runs: --help and usage errors need none.
    .hook('preAction', async () => {
      await loadClientDeps();
    })
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.io.out(s.replace(/\n$/, '')),
      writeErr: (s) => ctx.io.err(s.replace(/\n$/, '')),
    });
  for (const module of modules) module.register(program, ctx);
  for (const command of allCommands(program)) command.exitOverride();
  return program;
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** Runs the CLI with `args` (without `node` and the script). Returns the exit code; never throws. */
export async function runCli(
  modules: readonly CommandModule[],
  args: readonly string[],
  io: CliIo,
  version = '0.1.0',
): Promise<number> {
  const ctx = createCliContext(io);
  const program = buildProgram(modules, ctx, version);
  const json = args.includes('--json');
  try {
    await program.parseAsync([...args], { from: 'user' });
    return ctx.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander printed the message or help
    if (err instanceof ApiError) {
      io.err(
        json
          ? JSON.stringify({
              error: { code: err.code, status: err.status, message: err.message, details: err.details },
            })
          : printableLines(`error: ${err.code}: ${err.message}${detailLine(err.details)}`),
      );
      return 1;
    }
    if (err instanceof CliError || (await localStateError(err)) !== null) {
      const coded = err as Error & { code: string };
      io.err(
        json
          ? JSON.stringify({ error: { code: coded.code, message: coded.message } })
          : `error: ${printable(coded.message)}`,
      );
      return 1;
    }
    io.err(`error: ${printable(err instanceof Error ? err.message : String(err))}`);
    return 1;
  }
}

/** `err` when it is a LocalStateError, else null (its module is loaded here only for such an error). */
async function localStateError(err: unknown): Promise<Error | null> {
  if (!(err instanceof Error) || err.name !== 'LocalStateError') return null;
  const { LocalStateError } = await import('../../lib/client/state-file.ts');
  return err instanceof LocalStateError ? err : null;
}

/** The validation issues of an API error, one per line. */
function detailLine(details: Record<string, unknown>): string {
  const issues = details.issues;
  if (!Array.isArray(issues) || issues.length === 0) return '';
  return issues
    .slice(0, 10)
    .map(
      (i: { path?: string; message?: string }) =>
        `\n  ${printable(i.path || '(body)')}: ${printable(i.message ?? '')}`,
    )
    .join('');
}
