/**
 * The first step of `npm run bench:peers`: installs the peers (Restate's server and SDKs, the
 * DBOS SDK) into bench/peers/node_modules from bench/peers/package-lock.json when they are
 * missing or not the locked versions. They live in their own package so that the root
 * `npm ci`, and so CI, never fetches them (restate-server's binary alone is over 200 MB).
 * PostgreSQL and Java are installed by the bench itself, with apt-get, when missing. Issue 19.
 *
 * Exit: 0 when the locked versions are in place; npm's exit code when `npm ci` fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'));

/** The locked packages (`node_modules/...` keys of the lockfile) whose installed version differs. */
function missingPackages(): string[] {
  const lock = readJson(`${here}package-lock.json`) as {
    packages: Record<string, { version?: string; optional?: boolean }>;
  };
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && entry.version !== undefined)
    .filter(([path, entry]) => {
      const manifest = `${here}${path}/package.json`;
      // Optional packages (restate-server-<os>-<cpu>): npm installs only this machine's.
      if (!existsSync(manifest)) return entry.optional !== true;
      return (readJson(manifest) as { version: string }).version !== entry.version;
    })
    .map(([path]) => path);
}

const missing = missingPackages();
if (missing.length > 0) {
  console.log(`bench:peers installing the peers into bench/peers (${missing.length} packages missing)`);
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' });
  if (npm.status !== 0) process.exit(npm.status ?? 1);
}
