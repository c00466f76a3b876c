#!/usr/bin/env node
/**
 * The `agent-runs` command of the `@agent-runs/client` package (packages/client): the CLI's
 * commands that only talk to an API over HTTP (runs, events, controls, tools, functions), with
 * none of the local stack's or the replay's server code, so it installs without CDK or AWS SDK
 * and runs on Node 20 and later. The repository's bin/agent-runs.ts adds `start` and `replay`.
 */
import { ALL_HTTP_COMMANDS } from './commands/http-commands.ts';
import { runCli } from './commands/program.ts';

process.exitCode = await runCli(ALL_HTTP_COMMANDS, process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  tty: process.stdout.isTTY ? process.stdout : undefined,
  cwd: process.cwd(),
  env: process.env,
});
