/**
 * What every CLI command module gets: the I/O to write to, the client for the global options
 * (`--url`, `--token`, `--json`), and the output helpers. A command module registers its
 * subcommands on the program; bin/commands/all.ts lists the modules.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { cliInvocation } from '../../lib/client/cli-invocation.ts';
import { CLI_ENV } from '../../lib/contracts/env-names.ts';
import type { AgentRunsClient } from '../../lib/client/client.ts';
import type { LiveTarget } from '../../lib/client/live.ts';
import { printableLines } from './printable.ts';

/** The client modules (zod and the contracts), loaded before the first action, never for --help. */
interface ClientDeps {
  createClient: typeof import('../../lib/client/client.ts').createClient;
  readLocalState: typeof import('../../lib/client/state-file.ts').readLocalState;
}
let deps: ClientDeps | undefined;

/**
 * Loads the client modules that `CliContext.client` and `liveTarget` use. bin/commands/program.ts
 * awaits it in a preAction hook, so that `--help` and usage errors never load them.
 */
export async function loadClientDeps(): Promise<ClientDeps> {
  if (deps === undefined) {
    const [client, stateFile] = await Promise.all([
      import('../../lib/client/client.ts'),
      import('../../lib/client/state-file.ts'),
    ]);
    deps = { createClient: client.createClient, readLocalState: stateFile.readLocalState };
  }
  return deps;
}

function loaded(): ClientDeps {
  if (deps === undefined) throw new Error('internal: loadClientDeps() was not awaited before the action');
  return deps;
}

/** Where the CLI reads and writes. The real one is process-bound; tests pass their own. */
export interface CliIo {
  /** Writes one line (or block) to stdout. */
  out(text: string): void;
  /** Writes one line (or block) to stderr. */
  err(text: string): void;
  /** The stream a live view may draw on (a TTY); absent → plain lines only. */
  tty?: NodeJS.WritableStream | undefined;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Replaces global fetch (tests: an in-process app). */
  fetch?: (request: Request) => Response | Promise<Response>;
}

/** The global options every command sees through `optsWithGlobals()`. */
export interface GlobalOptions {
  url?: string;
  token?: string;
  wsUrl?: string;
  json?: boolean;
}

/** A usage error of the CLI itself (bad argument, no URL); exit code 1 like an API error. */
export class CliError extends Error {
  override name = 'CliError';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export interface CliContext {
  io: CliIo;
  /**
   * How the user runs this CLI (`agent-runs`, `npx agent-runs`, `npm run agent-runs --`), from
   * `io.env` once at start (cliInvocation): every command line a hint prints starts with it.
   */
  cli: string;
  /** The client for `cmd`'s global options: --url / AGENT_RUNS_URL / the state file. Throws CliError(no_url). */
  client(cmd: Command): AgentRunsClient;
  /**
   * Where `cmd` follows a run live: the client's URL and token, plus the live WebSocket from
   * --ws-url / AGENT_RUNS_WS_URL / the state file (its ws_url, when the state file's URL is the URL).
   */
  liveTarget(cmd: Command): LiveTarget;
  /** Whether --json was given. */
  json(cmd: Command): boolean;
  /** Prints `data` as JSON with --json, `human` otherwise (its control characters but newlines escaped). */
  print(cmd: Command, human: () => string, data: unknown): void;
  /** The process exit code after the command (0 unless a command sets it, e.g. 2 for a rejected control). */
  exitCode: number;
}

/**
 * A command module: registers one or more commands on the program. To add a command, write a
 * module and add it to the list in bin/commands/all.ts. Keep its top-level imports light (commander,
 * lib/contracts/names.ts): `import()` what an action runs inside the action, so `--help` stays fast.
 */
export interface CommandModule {
  /** For listings and tests, e.g. `runs`, `events`, `controls`. */
  name: string;
  register(program: Command, ctx: CliContext): void;
}

/** The CLI context over `io`. */
export function createCliContext(io: CliIo): CliContext {
  const ctx: CliContext = {
    io,
    cli: cliInvocation(io.env),
    exitCode: 0,
    client(cmd) {
      const { createClient, readLocalState } = loaded();
      const opts = cmd.optsWithGlobals<GlobalOptions>();
      const explicitUrl = opts.url ?? io.env[CLI_ENV.AGENT_RUNS_URL];
      const state = explicitUrl === undefined || opts.token === undefined ? readLocalState(io.cwd) : null;
      const url = explicitUrl ?? state?.url;
      if (url === undefined) {
        throw new CliError(
          'no_url',
          `no API URL: pass --url, set ${CLI_ENV.AGENT_RUNS_URL}, or start the local stack (npm start), which writes .agent-runs/local.json`,
        );
      }
      // The state file's token goes only to the state file's URL.
      const token =
        opts.token ??
        io.env[CLI_ENV.AGENT_RUNS_TOKEN] ??
        (state !== null && state.url === url ? state.token : undefined);
      return createClient({
        baseUrl: url,
        ...(token !== undefined ? { token } : {}),
        ...(io.fetch !== undefined ? { fetch: io.fetch } : {}),
      });
    },
    liveTarget(cmd) {
      const client = ctx.client(cmd);
      const opts = cmd.optsWithGlobals<GlobalOptions>();
      let wsUrl = opts.wsUrl ?? io.env[CLI_ENV.AGENT_RUNS_WS_URL];
      if (wsUrl === undefined) {
        const state = loaded().readLocalState(io.cwd);
        if (state !== null && state.url === client.baseUrl) wsUrl = state.ws_url;
      }
      return {
        baseUrl: client.baseUrl,
        ...(wsUrl !== undefined ? { wsUrl } : {}),
        ...(client.token !== undefined ? { token: client.token } : {}),
        ...(io.fetch !== undefined
          ? { fetch: async (r: Request) => (io.fetch as NonNullable<CliIo['fetch']>)(r) }
          : {}),
      };
    },
    json: (cmd) => cmd.optsWithGlobals<GlobalOptions>().json === true,
    print(cmd, human, data) {
      io.out(ctx.json(cmd) ? JSON.stringify(data, null, 2) : printableLines(human()));
    },
  };
  return ctx;
}

/**
 * Parses a JSON argument. `@path` reads the JSON from that file (relative to the working
 * directory); a string that starts with `@` itself is written as JSON (`'"@x"'`). A value that
 * is not JSON is taken as a plain string when `lenient` (never for a file); with
 * `'unless-json-like'` only when it does not open like JSON (`{`, `[` or `"`), so that a typo
 * in a structured option is refused. Throws CliError (invalid_argument) naming the option.
 */
export function parseJsonArg(
  name: string,
  text: string,
  lenient: boolean | 'unless-json-like' = false,
): unknown {
  if (text.startsWith('@')) {
    const path = text.slice(1);
    let content: string;
    try {
      content = readFileSync(path, 'utf8');
    } catch (err) {
      throw new CliError('invalid_argument', `${name}: cannot read ${path}: ${(err as Error).message}`);
    }
    try {
      return JSON.parse(content);
    } catch {
      throw new CliError('invalid_argument', `${name}: ${path} is not JSON`);
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    // 'unless-json-like' (structured options such as --context): a plain string is taken as
    // it is, but text that opens like JSON was meant as JSON, and a typo in it is refused
    // rather than sent as a string.
    if (lenient === true || (lenient === 'unless-json-like' && !/^\s*[[{"]/.test(text))) return text;
    const also = lenient === 'unless-json-like' ? ', or a plain string not starting with {, [ or "' : '';
    throw new CliError('invalid_argument', `${name} must be JSON (or @file${also}): ${text.slice(0, 80)}`);
  }
}

/** Parses a positive integer option. */
export function parseIntArg(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new CliError('invalid_argument', `${name} must be a whole number: ${text}`);
  return n;
}
