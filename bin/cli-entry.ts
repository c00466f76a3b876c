/**
 * The entry of the bundled CLI (bin/build-cli.mjs → dist/cli/agent-runs.mjs): runs the program at
 * once. bin/agent-runs.ts runs it only when it is the main module (`import.meta.main`), which a
 * bundle cannot rely on (Node 20 has no import.meta.main).
 */
import { main } from './commands/all.ts';

await main();
