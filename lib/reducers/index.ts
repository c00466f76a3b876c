/**
 * The built-in reducers shipped as artifacts. Today one: the default agent loop, bound at
 * `/lib/raisin/ai/agent-run-reducer`, written in TypeScript under `agent-loop/` and bundled by
 * `build.ts` (`npm run build:reducers`) into `agent-loop.js`, the self-contained module the
 * QuickJS sandbox runs. This module reads the artifact's source for the function registry,
 * exports the context schema for callers that create runs bound to the loop, and re-exports
 * `reduce` from the sources for direct use in Node (tests, local tools).
 * docs/contracts/run-lifecycle.md, "Where runs are used" (the default reducer);
 * docs/architecture.md, "Code map".
 */
import type { Effect } from '../contracts/index.ts';
import { reduce as reduceAgentLoop } from './agent-loop/reduce.ts';
import type { AgentLoopAnswer } from './agent-loop/response.ts';

export {
  AgentLoopContext,
  type AgentLoopSettings,
  AgentLoopToolEntry,
  type AgentLoopToolSettings,
} from './agent-loop/context-schema.ts';
export type { AgentLoopDiagnostic } from './agent-loop/response.ts';
export type { AgentLoopCall, AgentLoopState, AgentLoopTool } from './agent-loop/state.ts';

export { AGENT_LOOP_ARTIFACT_URL, AGENT_LOOP_PATH, readAgentLoopSource } from './artifact.ts';

/**
 * The agent loop's response with its effects typed as core holds them once parsed (`Effect`):
 * the reducer writes the wire form, which leaves call_tool's `interruptible` out unless false
 * (it parses to its default, true).
 */
export type AgentLoopResponse = Omit<AgentLoopAnswer, 'effects'> & { effects: Effect[] };

/**
 * Reduces one `raisin.agent-run.reducer/1` request in Node with the sources the artifact is
 * built from (the artifact test proves both answer alike). Never throws: faults come back as
 * `refused`. Behaviour: lib/reducers/agent-loop/reduce.ts.
 */
export const reduce = reduceAgentLoop as (request: unknown) => AgentLoopResponse;
