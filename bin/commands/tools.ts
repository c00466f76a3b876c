/** `agent-runs tools` (registered tools, metadata only) and `agent-runs functions put` (admin). */
import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { FunctionArtifact } from '../../lib/client/index.ts';
import type { CommandModule } from './context.ts';

export const toolsCommand: CommandModule = {
  name: 'tools',
  register(program, ctx) {
    program
      .command('tools')
      .description('list the registered tools (metadata only)')
      .action(async (_opts: unknown, cmd: Command) => {
        const tools = await ctx.client(cmd).listTools();
        const { formatTools } = await import('./format.ts');
        ctx.print(cmd, () => formatTools(tools), tools);
      });
  },
};

export const functionsCommand: CommandModule = {
  name: 'functions',
  register(program, ctx) {
    const functions = program.command('functions').description('reducer artifacts (admin)');
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
