/**
 * The built-in reducers shipped as artifacts. Today one: the default agent loop
 * (`agent-loop.js`), bound at `/lib/raisin/ai/agent-run-reducer`. The artifact is plain
 * JavaScript run by the QuickJS sandbox; this module reads its source for the function
 * registry and re-exports `reduce` for direct use in Node (tests, local tools).
 * Seed: agent-runs, "Where runs are used" (the default reducer); DESIGN section 3 ("reducers/").
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { JsonObject } from '../contracts/index.ts';
import { reduce } from './agent-loop.js';

export type {
  AgentLoopCall,
  AgentLoopContextInput,
  AgentLoopDiagnostic,
  AgentLoopResponse,
  AgentLoopState,
  AgentLoopTool,
} from './agent-loop.js';
export { reduce };

/** The function path the default agent reducer is registered at. */
export const AGENT_LOOP_PATH = '/lib/raisin/ai/agent-run-reducer';

/** Where the artifact file lives (next to this module). */
export const AGENT_LOOP_ARTIFACT_URL: URL = new URL('./agent-loop.js', import.meta.url);

/**
 * The artifact's source text (UTF-8), exactly the bytes the sandbox evaluates and the registry
 * hashes. Throws the fs error (ENOENT) when the file is missing from the deployment bundle.
 */
export function readAgentLoopSource(): string {
  return readFileSync(AGENT_LOOP_ARTIFACT_URL, 'utf8');
}

/** One tool of the context: what the model is offered plus the flags call_tool carries. */
export const AgentLoopToolEntry = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  schema: JsonObject.default({ type: 'object', properties: {} }),
  kind: z.enum(['function', 'domain']).default('function'),
  function_path: z.string().min(1).optional(),
  mutating: z.boolean().optional(),
  replay_safe: z.boolean().optional(),
  timeout_ms: z.number().int().positive().optional(),
  interruptible: z.boolean().optional(),
  ends_run: z.enum(['succeeded', 'partial', 'blocked']).optional(),
});
export type AgentLoopToolEntry = z.infer<typeof AgentLoopToolEntry>;

/**
 * `run_started.data.context` for the agent loop, for callers that create runs bound to it
 * (validate at the boundary: the artifact itself falls back to defaults with a diagnostic).
 */
export const AgentLoopContext = z.object({
  instructions: z.string().optional(),
  tools: z.array(AgentLoopToolEntry).optional(),
  mode: z.enum(['conversation', 'task']).optional(),
  loop_limit: z.number().int().min(2).optional(),
  max_retries: z.number().int().min(0).max(10).optional(),
});
export type AgentLoopContext = z.infer<typeof AgentLoopContext>;
