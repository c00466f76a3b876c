#!/usr/bin/env node
import { startCommand } from '../lib/local/start-command.ts';
import { tokenCommand } from '../lib/local/token-command.ts';
/**
 * The `agent-runs` CLI (package.json "bin"): a commander program built from the command modules
 * listed below, over the typed client (lib/client). The default URL and token come from the
 * local stack's `.agent-runs/local.json`. Needs Node 24 (it runs this .ts file directly): npm
 * scripts and `npx agent-runs` inside the checkout use the pinned one. Issue 5.
 */
import type { CommandModule } from './commands/context.ts';
import { ALL_HTTP_COMMANDS } from './commands/http-commands.ts';
import { runCli } from './commands/program.ts';
import { replayCommand } from './commands/replay.ts';
import { watchCommand } from './commands/watch.ts';

/**
 * Every command of the CLI, in help order: `start`, `token` (a local stack's bearer token for
 * any caller), the HTTP commands (also the packaged CLI's, bin/client-cli.ts), `watch` (a
 * terminal UI: not in the package), `replay`. Adding an HTTP command is one line in
 * commands/http-commands.ts.
 */
export const COMMANDS: readonly CommandModule[] = [
  startCommand,
  tokenCommand,
  ...ALL_HTTP_COMMANDS,
  watchCommand,
  replayCommand,
];

if (import.meta.main) {
  process.exitCode = await runCli(COMMANDS, process.argv.slice(2), {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    tty: process.stdout.isTTY ? process.stdout : undefined,
    cwd: process.cwd(),
    env: process.env,
  });
}
