#!/usr/bin/env node
/**
 * The `agent-runs` command (package.json "bin"; `npx agent-runs`, `npm run agent-runs`): runs the
 * bundled CLI, dist/cli/agent-runs.mjs, when it is newer than every source file it was built from
 * (dist/cli/inputs.json); otherwise rebuilds it first (bin/build-cli.mjs, about a second), and
 * when it cannot be built (no esbuild, a read-only checkout) runs the CLI from source
 * (bin/cli-entry.ts, Node 24). Plain JavaScript: starts on Node 20 and 24.
 */
import { readFileSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const bundle = new URL('dist/cli/agent-runs.mjs', root);

/** Whether the bundle exists and no file it was built from changed since. */
function fresh() {
  try {
    const built = statSync(bundle).mtimeMs;
    const inputs = JSON.parse(readFileSync(new URL('dist/cli/inputs.json', root), 'utf8'));
    for (const input of inputs) {
      const stat = statSync(new URL(input, root), { throwIfNoEntry: false });
      // A watched file that is gone (e.g. node_modules/.package-lock.json) counts only if it was a source.
      if (stat === undefined ? !input.includes('package-lock.json') : stat.mtimeMs > built) return false;
    }
    return true;
  } catch {
    return false;
  }
}

let entry = bundle.href;
if (!fresh()) {
  try {
    const { buildCli } = await import('./build-cli.mjs');
    await buildCli();
  } catch (error) {
    // The source needs Node 24: on an older one this import prints why and exits 1.
    await import('./check-node.mjs');
    process.stderr.write(
      `agent-runs: cannot build dist/cli (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); running from source\n`,
    );
    entry = new URL('cli-entry.ts', import.meta.url).href;
  }
}
await import(entry);
