/**
 * A PostgreSQL cluster for DBOS in a temporary folder: Debian's `postgresql` server binaries
 * (installed with apt-get when missing, as .ci/run installs Java), `initdb` with trust
 * authentication on loopback, started with `pg_ctl` on a free port with the server's default
 * settings (fsync and synchronous_commit on). PostgreSQL refuses to run as root, so as root the
 * cluster runs as the `postgres` user the package creates. Issue 19.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { aptGetInstall, freePort } from './processes.ts';

export interface Postgres {
  /** `postgresql://bench@127.0.0.1:{port}/{database}` */
  url(database: string): string;
  /** Runs one SQL statement with psql in `database`; returns its unaligned output. */
  sql(database: string, statement: string): string;
  version: string;
  /** The postmaster's pid (its backends are its children). */
  pid(): number;
  stop(): void;
}

/** The bin folder of the newest installed server, installing Debian's `postgresql` if there is none. */
export function postgresBinaries(): string {
  const found = newestServerBin();
  if (found !== null) return found;
  aptGetInstall('postgresql', 'no PostgreSQL server under /usr/lib/postgresql');
  const installed = newestServerBin();
  if (installed === null) throw new Error('postgresql installed, but no initdb under /usr/lib/postgresql');
  return installed;
}

function newestServerBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? null : join(root, versions[0], 'bin');
}

/** Creates and starts a cluster in `dir` (which must not exist yet). */
export async function startPostgres(dir: string): Promise<Postgres> {
  const bin = postgresBinaries();
  const asRoot = process.getuid?.() === 0;
  const uid = asRoot ? Number(execFileSync('id', ['-u', 'postgres']).toString().trim()) : undefined;
  const gid = asRoot ? Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) : undefined;
  mkdirSync(dir, { recursive: true });
  if (uid !== undefined && gid !== undefined) {
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const data = join(dir, 'data');
  const run = (program: string, args: string[]) =>
    execFileSync(join(bin, program), args, {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(uid !== undefined && gid !== undefined ? { uid, gid } : {}),
    }).toString();
  run('initdb', ['-D', data, '-U', 'bench', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir}`;
  run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', 'start']);
  const psql = (database: string, statement: string) =>
    execFileSync(
      join(bin, 'psql'),
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'bench', '-d', database, '-Atc', statement],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
      .toString()
      .trim();
  const version = psql('postgres', 'show server_version');
  return {
    url: (database) => `postgresql://bench@127.0.0.1:${port}/${database}`,
    sql: psql,
    version,
    pid: () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      } catch {
        // already stopped
      }
    },
  };
}
