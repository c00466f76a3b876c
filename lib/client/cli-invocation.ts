/**
 * How the user runs the CLI, and POSIX shell quoting: the words a pasted command line starts
 * with. No imports, so that the CLI reads its invocation at start without loading the client's
 * modules for `--help` (bin/commands/context.ts); lib/client/waiting.ts re-exports all three.
 */

/** Quotes `value` for a POSIX shell when it holds anything but safe characters. */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The words a hint starts with when nothing says otherwise: an installed `agent-runs` on PATH. */
export const DEFAULT_CLI = 'agent-runs';

/**
 * How the user runs the CLI, read from the variables npm gives the processes it starts, so that
 * hints can be pasted as typed: `npx agent-runs` under npx / `npm exec` (npm_command `exec`);
 * `npm run agent-runs --` under the repository's `agent-runs` script (npm_lifecycle_event
 * `agent-runs`); `npx agent-runs` under any other npm script (the bin is in node_modules/.bin,
 * not necessarily on PATH); else {@link DEFAULT_CLI}.
 */
export function cliInvocation(env: Readonly<Record<string, string | undefined>>): string {
  if (env.npm_command === 'exec') return 'npx agent-runs';
  const script = env.npm_lifecycle_event;
  if (script === 'agent-runs') return 'npm run agent-runs --';
  if (script !== undefined && script !== '') return 'npx agent-runs';
  return DEFAULT_CLI;
}
