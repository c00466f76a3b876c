/**
 * Where the default agent reducer's artifact is and how its source is read (see index.ts). Apart
 * from index.ts, which also exports the reducer's TypeScript sources for direct use in Node, so
 * that the runtime (lib/runtime.ts) and every Lambda bundle, which only register the artifact,
 * carry none of the reducer's code.
 */
import { readFileSync } from 'node:fs';

export { AGENT_LOOP_PATH } from './paths.ts';

/** Where the artifact file lives (next to this module). */
export const AGENT_LOOP_ARTIFACT_URL: URL = new URL('./agent-loop.js', import.meta.url);

/**
 * The artifact's source text (UTF-8), exactly the bytes the sandbox evaluates and the registry
 * hashes. Throws the fs error (ENOENT) when the file is missing from the deployment bundle.
 */
export function readAgentLoopSource(): string {
  return readFileSync(AGENT_LOOP_ARTIFACT_URL, 'utf8');
}
