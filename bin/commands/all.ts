/**
 * Every command of the repository's CLI, in help order: `start`, `token` (a local stack's bearer
 * token for any caller), the HTTP commands (also the packaged CLI's, bin/client-cli.ts), `watch`
 * (a terminal UI: not in the package), `replay`, `reducers check` (runs the sandbox: not in the package). Adding an HTTP command is one line in
 * commands/http-commands.ts. Registering them loads only commander and the option lists: each
 * action imports what it runs, so `agent-runs --help` loads almost nothing.
 */
import { startCommand } from '../../lib/local/start-command.ts';
import { tokenCommand } from '../../lib/local/token-command.ts';
import type { CommandModule } from './context.ts';
import { ALL_HTTP_COMMANDS } from './http-commands.ts';
import { runCli } from './program.ts';
import { reducersCommand } from './reducers.ts';
import { replayCommand } from './replay.ts';
import { watchCommand } from './watch.ts';

export const COMMANDS: readonly CommandModule[] = [
  startCommand,
  tokenCommand,
  ...ALL_HTTP_COMMANDS,
  watchCommand,
  replayCommand,
  reducersCommand,
];

/**
 * Runs the CLI on this process: `argv` (default: the process's arguments after the script),
 * stdout and stderr, the working directory and environment. Resolves to the exit code (also set
 * as process.exitCode).
 */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const code = await runCli(COMMANDS, argv, {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    tty: process.stdout.isTTY ? process.stdout : undefined,
    cwd: process.cwd(),
    env: process.env,
  });
  process.exitCode = code;
  return code;
}
