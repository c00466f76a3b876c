/** `agent-runs tools` (registered tools, metadata only) and `agent-runs functions put` (admin). */
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { FunctionArtifact } from '../../lib/client/index.ts';
import type { RegistryListing } from '../../lib/contracts/index.ts';
import { CliError, type CommandModule } from './context.ts';

export const toolsCommand: CommandModule = {
  name: 'tools',
  register(program, ctx) {
    program
      .command('tools [list]')
      .description(
        'list the registered tools (metadata only): what each declares about approval, and what the published policy does with a call of it (read with an admin token); `tools list` is the same',
      )
      .action(async (list: string | undefined, _opts: unknown, cmd: Command) => {
        if (list !== undefined && list !== 'list')
          throw new CliError(
            'invalid_argument',
            `unknown tools command '${list}': use \`tools\` or \`tools list\``,
          );
        const client = ctx.client(cmd);
        const tools = await client.listTools();
        if (ctx.json(cmd) || tools.length === 0) return ctx.print(cmd, () => 'no tools registered', tools);
        const [policy, catalogue] = await Promise.all([
          readListing(() => client.listEntries('policy')),
          readListing(() => client.listEntries('tools')),
        ]);
        const { formatTools } = await import('./format.ts');
        ctx.print(cmd, () => formatTools(tools, policy, catalogue), tools);
      });
  },
};

/** A registry listing, or the code of the error that kept it from being read (403 for a non-admin). */
async function readListing(read: () => Promise<RegistryListing>): Promise<RegistryListing | string> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof Error && 'code' in err && typeof err.code === 'string') return err.code;
    throw err;
  }
}

export const functionsCommand: CommandModule = {
  name: 'functions',
  register(program, ctx) {
    const functions = program
      .command('functions')
      .description(
        'publish reducer code (a JavaScript module, WebAssembly or Starlark file) at a function path (admin); `reducers` checks one against recorded runs',
      );
    functions
      .command('put <function_path> <file>')
      .description(
        'register a JavaScript module, WebAssembly binary or Starlark file at a path, e.g. /agents/triage',
      )
      .addOption(
        new Option(
          '--kind <kind>',
          'artifact kind (default: wasm for .wasm files, star for .star files, js otherwise)',
        ).choices(['js', 'wasm', 'star']),
      )
      .action(
        async (
          functionPath: string,
          file: string,
          opts: { kind?: FunctionArtifact['kind'] },
          cmd: Command,
        ) => {
          const kind =
            opts.kind ?? (file.endsWith('.wasm') ? 'wasm' : file.endsWith('.star') ? 'star' : 'js');
          const artifact = await ctx
            .client(cmd)
            .putFunction(functionPath, new Uint8Array(readFileSync(file)), kind);
          const { formatArtifact } = await import('./format.ts');
          ctx.print(cmd, () => `registered ${formatArtifact(artifact)}`, artifact);
        },
      );
  },
};
