/**
 * The command list of docs/reference/cli.md, rendered from the commander definitions the CLI
 * runs (bin/commands/all.ts's COMMANDS): one entry per command and subcommand with its usage, its
 * description and its options (flags, what they do, choices and defaults), then the global
 * options. `node bin/write-cli-docs.ts` rewrites the page's generated section; a unit test fails
 * while the committed page differs.
 */
import type { Command, Option } from 'commander';
import { replaceSection } from '../../lib/checker/generated-section.ts';
import { COMMANDS } from './all.ts';
import { createCliContext } from './context.ts';
import { buildProgram } from './program.ts';

/** Where the page is committed, relative to the repository root. */
export const CLI_REFERENCE_PATH = 'docs/reference/cli.md';
const SECTION = 'commands';
const COMMAND = 'node bin/write-cli-docs.ts';

/** The program as `agent-runs` builds it (nothing runs: only the definitions are read). */
export function cliProgram(): Command {
  const io = { out: () => {}, err: () => {}, cwd: '/', env: {} };
  return buildProgram(COMMANDS, createCliContext(io), '0.0.0');
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function optionLine(option: Option): string {
  const extras = [
    ...(option.argChoices ? [`one of ${option.argChoices.map((c) => `\`${c}\``).join(', ')}`] : []),
    ...(option.defaultValue !== undefined && option.defaultValue !== false
      ? [`default \`${JSON.stringify(option.defaultValue)}\``]
      : []),
  ];
  const more = extras.length > 0 ? ` (${extras.join('; ')})` : '';
  return `  - \`${option.flags}\`: ${oneLine(option.description)}${more}`;
}

function commandEntries(command: Command, prefix: string): string[] {
  return command.commands.flatMap((sub) => {
    const name = `${prefix} ${sub.name()}`;
    const usage = sub.usage().replace(/^\[options\] ?/, '');
    const visible = sub.options.filter((o) => !o.hidden);
    const entry = [
      `- \`${name}${usage === '' ? '' : ` ${usage}`}\`: ${oneLine(sub.description())}`,
      ...visible.map(optionLine),
    ];
    return [...entry, ...commandEntries(sub, name)];
  });
}

/** The Markdown of the generated section: every command in help order, then the global options. */
export function renderCommands(program: Command = cliProgram()): string {
  const globals = program.options.filter((o) => !o.hidden && o.long !== '--version');
  return [
    '### Commands',
    '',
    ...commandEntries(program, program.name()),
    '',
    '### Global options (before the command)',
    '',
    ...globals.map((o) => optionLine(o).trimStart()),
    '',
  ].join('\n');
}

/** `page` (the committed cli.md) with its command list rendered from `program`. */
export function renderCliReference(page: string, program: Command = cliProgram()): string {
  return replaceSection(page, SECTION, COMMAND, renderCommands(program));
}
