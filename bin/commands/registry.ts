/**
 * `agent-runs registry publish|list|get <tools|policy|agents|workspaces>` (admin): the four registries
 * through one command shape, as the API has one route shape. Documents are JSON or `@file`.
 */
import type { Command } from 'commander';
import type { RegistryKind } from '../../lib/contracts/index.ts';
import { REGISTRY_KINDS } from '../../lib/contracts/names.ts';
import { CliError, type CommandModule, parseJsonArg } from './context.ts';

function kindOf(text: string): RegistryKind {
  if ((REGISTRY_KINDS as readonly string[]).includes(text)) return text as RegistryKind;
  throw new CliError('invalid_argument', `kind must be one of ${REGISTRY_KINDS.join(', ')}: ${text}`);
}

export const registryCommand: CommandModule = {
  name: 'registry',
  register(program, ctx) {
    const registry = program
      .command('registry')
      .description(
        'tools, the tool policy, agents and workspace grants as data: versioned, published versions immutable (admin)',
      );
    registry
      .command('publish <kind> <document>')
      .description(
        'publish a document (JSON or @file) as a new version; kind: tools, policy, agents or workspaces',
      )
      .action(async (kind: string, document: string, _opts: unknown, cmd: Command) => {
        const result = await ctx.client(cmd).publishEntry(kindOf(kind), parseJsonArg('document', document));
        const what = `${result.kind} ${result.name} ${result.version} (registry version ${result.registry_version})`;
        ctx.print(cmd, () => (result.created ? `published ${what}` : `already published: ${what}`), result);
      });
    registry
      .command('list <kind>')
      .description('the current registry version and its documents')
      .action(async (kind: string, _opts: unknown, cmd: Command) => {
        const listing = await ctx.client(cmd).listEntries(kindOf(kind));
        ctx.print(
          cmd,
          () =>
            [
              `${listing.kind} registry version ${listing.registry_version}`,
              ...listing.entries.map((e) => `  ${e.name} ${e.version}`),
            ].join('\n'),
          listing,
        );
      });
    registry
      .command('get <kind> <name>')
      .description('one published version (default: the current one) and every version of a name')
      .option('--at <version>', 'the version to read (default: the current one)')
      .action(async (kind: string, name: string, opts: { at?: string }, cmd: Command) => {
        const found = await ctx.client(cmd).getEntry(kindOf(kind), name, opts.at);
        ctx.print(
          cmd,
          () =>
            `${found.entry.name} ${found.entry.version} (versions: ${found.versions.join(', ')})\n${JSON.stringify(found.entry.body, null, 2)}`,
          found,
        );
      });
  },
};
