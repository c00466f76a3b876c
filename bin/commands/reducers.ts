/**
 * `agent-runs reducers check`: replays recorded runs against a reducer artifact and reports, per
 * run, identical or the first divergent delivery (lib/engine/upgrade/reducer-check.ts). The artifact is
 * a file (`--artifact`, js / star / wasm) or the one published at a path (`--path`, with
 * `--hash` to insist on one; without it, the one published now, its hash printed); the runs are read through the API (`--run`, repeatable) or from exported logs
 * (`--from` a file or a directory of `*.json`, as `runs export` writes them). Exit code 1 when
 * any run diverged.
 */
import { type Command, Option } from 'commander';
import { CliError, type CommandModule } from './context.ts';

interface CheckOptions {
  artifact?: string;
  kind?: 'js' | 'wasm' | 'star';
  path?: string;
  hash?: string;
  run?: string[];
  from?: string;
}

/** The kind of an artifact file: `--kind`, else by its extension (.wasm, .star; js otherwise). */
export function artifactKindOf(file: string, kind?: 'js' | 'wasm' | 'star'): 'js' | 'wasm' | 'star' {
  return kind ?? (file.endsWith('.wasm') ? 'wasm' : file.endsWith('.star') ? 'star' : 'js');
}

export const reducersCommand: CommandModule = {
  name: 'reducers',
  register(program, ctx) {
    const reducers = program
      .command('reducers')
      .description(
        'reducer upgrades: check reducer code (an artifact, as `functions put` publishes) against recorded runs',
      );
    reducers
      .command('check')
      .description(
        'replay recorded runs against an artifact; per run: identical, or the first divergent delivery (exit 1)',
      )
      .option('--artifact <file>', 'the artifact to check: a JavaScript module, .star or .wasm file')
      .addOption(
        new Option('--kind <kind>', 'artifact kind (default: by the file extension)').choices([
          'js',
          'wasm',
          'star',
        ]),
      )
      .option('--path <function_path>', 'the artifact published at this function path (with --hash)')
      .option(
        '--hash <sha256>',
        'the sha256 the published artifact must have (with --path; default: the one published now)',
      )
      .option('--run <id>', 'a run to read through the API (repeatable)', (v: string, acc: string[] = []) => [
        ...acc,
        v,
      ])
      .option('--from <file|dir>', 'exported run logs: one file, or every *.json file of a directory')
      .action(async (opts: CheckOptions, cmd: Command) => {
        const { runCheck } = await import('./reducers-check.ts');
        const outcome = await runCheck(ctx, cmd, opts);
        if (outcome.diverged > 0) ctx.exitCode = 1;
      });
  },
};

/** Throws CliError(invalid_argument) unless exactly one artifact and at least one run source are given (--hash only with --path). */
export function checkSelection(opts: CheckOptions): void {
  const byFile = opts.artifact !== undefined;
  const published = opts.path !== undefined || opts.hash !== undefined;
  if (byFile === published)
    throw new CliError('invalid_argument', 'give either --artifact FILE or --path P [--hash H]');
  if (opts.hash !== undefined && opts.path === undefined)
    throw new CliError('invalid_argument', '--hash needs --path');
  if ((opts.run?.length ?? 0) === 0 && opts.from === undefined)
    throw new CliError('invalid_argument', 'give --run ID or --from FILE|DIR');
}

export type { CheckOptions };
