/**
 * `agent-runs registry publish|list|get <tools|policy|agents|workspaces>` (admin): the four registries
 * through one command shape, as the API has one route shape. Documents are JSON or `@file`.
 */
import type { Command } from 'commander';
import type { RegistryKind, RegistryListing } from '../../lib/contracts/index.ts';
import { REGISTRY_KINDS } from '../../lib/contracts/names.ts';
import { CliError, type CommandModule, parseJsonArg } from './context.ts';

function kindOf(text: string): RegistryKind {
  if ((REGISTRY_KINDS as readonly string[]).includes(text)) return text as RegistryKind;
  throw new CliError('invalid_argument', `kind must be one of ${REGISTRY_KINDS.join(', ')}: ${text}`);
}

/** `policy "default"` (the deployment's one policy: its name is always default), `tool "echo"`, ... */
function entryName(kind: RegistryKind, name: string): string {
  const singular = { tools: 'tool', policy: 'policy', agents: 'agent', workspaces: 'workspace grant' }[kind];
  return `${singular} "${name}"${kind === 'policy' ? ' (the one policy of the deployment)' : ''}`;
}

/** `registry list`: the registry version, the documents, and what version 0 means for the kind. */
function formatListing(listing: RegistryListing): string {
  const head = `${listing.kind} registry version ${listing.registry_version} (one more with each publication)`;
  const lines = listing.entries.map((e) => `  ${entryName(listing.kind, e.name)} version ${e.version}`);
  if (listing.entries.length === 0) lines.push('  nothing published');
  if (listing.kind === 'tools')
    lines.push(
      'the tools built in (registered in code, such as the sample tools echo and wait_for_callback of the local stack) are not in this registry; `agent-runs tools` lists every tool',
    );
  if (listing.kind === 'policy' && listing.entries.length === 0)
    lines.push('no policy is published: the rules the deployment was configured with in code apply');
  return [head, ...lines].join('\n');
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
        const what = `${entryName(result.kind, result.name)} version ${result.version}`;
        ctx.print(
          cmd,
          () =>
            result.created
              ? `published ${what}; the ${result.kind} registry is at version ${result.registry_version} now (runs created from now on use it)`
              : `already published: ${what} is this same document; the ${result.kind} registry stays at version ${result.registry_version}`,
          result,
        );
      });
    registry
      .command('list <kind>')
      .description(
        'the current registry version (it counts the publications of the kind; each document has its own version too) and the documents in it',
      )
      .action(async (kind: string, _opts: unknown, cmd: Command) => {
        const listing = await ctx.client(cmd).listEntries(kindOf(kind));
        ctx.print(cmd, () => formatListing(listing), listing);
      });
    registry
      .command('get <kind> <name>')
      .description(
        'one published version (default: the current one) and every version of a name; the policy is always named default',
      )
      .option('--at <version>', 'the version to read (default: the current one)')
      .action(async (kind: string, name: string, opts: { at?: string }, cmd: Command) => {
        const found = await ctx.client(cmd).getEntry(kindOf(kind), name, opts.at);
        const { entry } = found;
        const note =
          entry.kind === 'policy' && 'default_effect' in entry.body
            ? `\n(default_effect is what applies when no rule matches: "allow" unless the document said otherwise)`
            : '';
        ctx.print(
          cmd,
          () =>
            `${entryName(entry.kind, entry.name)} version ${entry.version} (published versions: ${found.versions.join(', ')})\n${JSON.stringify(entry.body, null, 2)}${note}`,
          found,
        );
      });
  },
};
