#!/usr/bin/env node
/**
 * The `agent-runs` CLI from source: a commander program built from the command modules of
 * bin/commands/all.ts, over the typed client (lib/client). The default URL and token come from
 * the local stack's `.agent-runs/local.json`. Run directly it needs Node 24 (type stripping).
 * The package's bin is bin/agent-runs.mjs, which runs the bundle of bin/cli-entry.ts
 * (dist/cli/agent-runs.mjs, built by bin/build-cli.mjs) and falls back to this file.
 */
import { main } from './commands/all.ts';

export { COMMANDS } from './commands/all.ts';

if (import.meta.main) await main();
