/**
 * `agent-runs token --sub NAME [--groups a,b] [--system] [--admin] [--ttl SECONDS]`: prints a
 * bearer token the local stack started in this directory accepts, for any user, group or system
 * caller: the stack's issuer key is `.agent-runs/issuer-key.json` here (made on first use, so a
 * token made before `npm start` stays valid once it runs). The token is a JWT verified as API
 * Gateway's JWT authorizer would verify a Cognito token (lib/local/identity.ts). With the CLI's
 * --json: `{token, sub, groups, system, admin}`.
 */
import { type Command, InvalidArgumentError } from 'commander';

/** Where the command writes and which directory the stack runs in (the CLI's CliIo fits). */
export interface TokenIo {
  out(text: string): void;
  cwd: string;
}

interface TokenOptions {
  sub: string;
  groups?: string[];
  system?: boolean;
  admin?: boolean;
  ttl?: number;
}

function listArg(value: string): string[] {
  return value
    .split(',')
    .map((g) => g.trim())
    .filter((g) => g.length > 0);
}

function secondsArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('a whole number of seconds above 0');
  return n;
}

/** Signs the token `options` ask for with the issuer of the stack in `io.cwd`. Throws IssuerError. */
export async function tokenFromOptions(options: TokenOptions, io: TokenIo, json: boolean): Promise<void> {
  const { localIssuer } = await import('./identity.ts');
  const issuer = await localIssuer(io.cwd);
  const request = {
    sub: options.sub,
    groups: options.groups ?? [],
    system: options.system === true,
    admin: options.admin === true,
    ...(options.ttl !== undefined ? { ttlSeconds: options.ttl } : {}),
  };
  const token = await issuer.sign(request);
  const { ttlSeconds: _ttl, ...shown } = request;
  io.out(json ? JSON.stringify({ token, ...shown }) : token);
}

/** The `token` command for the CLI's list (bin/commands/all.ts). */
export const tokenCommand = {
  name: 'token',
  register(program: Command, ctx: { io: TokenIo; json(cmd: Command): boolean }): void {
    program
      .command('token')
      .description(
        'print a bearer token of the local stack in this directory for a user, group or system caller',
      )
      .requiredOption('--sub <name>', 'the user id (the JWT subject)')
      .option(
        '--groups <a,b>',
        'groups the caller belongs to (what policy rules and agents match on)',
        listArg,
      )
      .option('--system', 'a system caller (operators: sees and may act on every run)')
      .option('--admin', 'admin rights (registries, functions)')
      .option(
        '--ttl <seconds>',
        'how long the token is valid (default 30 days, at most 366 days)',
        secondsArg,
      )
      .action(async (options: TokenOptions, cmd: Command) => {
        await tokenFromOptions(options, ctx.io, ctx.json(cmd));
      });
  },
};
