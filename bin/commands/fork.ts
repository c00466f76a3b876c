/**
 * `agent-runs fork RUN --checkpoint N [--state @file] [--input @file|text]`: creates a run from
 * checkpoint N of RUN, owned by the caller, optionally with an edited domain state and input
 * (`POST /runs/{id}/fork`). Prints the new run (and its control capability, shown once).
 */
import { Command, Option } from 'commander';
import type { ForkRunInput } from '../../lib/contracts/index.ts';
import { CliError, type CommandModule, parseIntArg, parseJsonArg } from './context.ts';

interface ForkOptions {
  checkpoint: string;
  state?: string;
  input?: string;
  budgets?: string;
  onExceeded?: 'pause' | 'fail';
  workspace?: string;
  path?: string;
  createKey?: string;
}

/** The fork request from the options. Throws CliError (invalid_argument) naming the option. */
export function forkInputOf(opts: ForkOptions): ForkRunInput {
  const input: Record<string, unknown> = { checkpoint: parseIntArg('--checkpoint', opts.checkpoint) };
  if (opts.state !== undefined) input.state = parseJsonArg('--state', opts.state);
  if (opts.input !== undefined) input.input = parseJsonArg('--input', opts.input, true);
  if (opts.budgets !== undefined) input.budgets = parseJsonArg('--budgets', opts.budgets);
  if (opts.onExceeded !== undefined) input.on_exceeded = opts.onExceeded;
  if ((opts.workspace === undefined) !== (opts.path === undefined)) {
    throw new CliError('invalid_argument', '--workspace and --path go together');
  }
  if (opts.workspace !== undefined && opts.path !== undefined)
    input.subject = { workspace: opts.workspace, path: opts.path };
  if (opts.createKey !== undefined) input.create_key = opts.createKey;
  return input as ForkRunInput;
}

export const forkCommand: CommandModule = {
  name: 'fork',
  register(program, ctx) {
    program.addCommand(
      new Command('fork')
        .description('create a run from a checkpoint of RUN (optionally with an edited state and input)')
        .argument('<run>', 'the run to fork')
        .requiredOption('--checkpoint <n>', 'the checkpoint number to fork from')
        .option('--state <json|@file>', 'the domain state to start from instead of the checkpoint one')
        .option('--input <json|@file>', 'the run input instead of the original one (JSON, @file or text)')
        .option('--budgets <json|@file>', "the fork's budgets (default: the checkpoint's)")
        .addOption(
          new Option('--on-exceeded <action>', 'what a budget overrun does').choices(['pause', 'fail']),
        )
        .option('--workspace <workspace>', "the fork's subject workspace (default: the original's)")
        .option('--path <path>', "the fork's subject path (default: the original's)")
        .option('--create-key <key>', 'idempotency key of the fork')
        .action(async (runId: string, opts: ForkOptions, cmd: Command) => {
          const out = await ctx.client(cmd).forkRun(runId, forkInputOf(opts));
          ctx.print(
            cmd,
            () => {
              const origin = out.run.origin;
              const head = out.created
                ? `forked ${out.run.run_id} (${out.run.status}) from ${runId} checkpoint ${origin?.checkpoint_no ?? opts.checkpoint}`
                : `existing fork ${out.run.run_id} (${out.run.status}): the create key was used`;
              return out.control_capability === undefined
                ? head
                : `${head}\ncontrol capability (shown once): ${out.control_capability}`;
            },
            out,
          );
        }),
    );
  },
};
