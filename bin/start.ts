#!/usr/bin/env node
/**
 * `npm start`: runs the local stack in the foreground (DynamoDB Local + fauxqs, the HTTP API on
 * 127.0.0.1, the step poller and the sweeper timer) until Ctrl-C. Options: --port N (else env
 * PORT, else 8787; 0 = any free port), --persist DIR (keep data), --log-level LEVEL.
 * Exit codes: 0 after a clean stop, 1 when the stack cannot start (the message says why).
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { Command } from 'commander';
import { addStartOptions, type StartOptions, startFromOptions } from '../lib/local/start-command.ts';

const program = addStartOptions(
  new Command()
    .name('npm start')
    .description(
      'Run Agent Runs locally: DynamoDB Local, fauxqs (a local stand-in for SQS and S3), the HTTP API, the step poller (runs the queued steps) and the sweeper (takes over stalled runs).',
    ),
).parse();

const stack = await startFromOptions(program.opts<StartOptions>(), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  cwd: process.cwd(),
  tty: process.stdout.isTTY ? process.stdout : undefined,
});
if (stack === null) process.exit(1);
