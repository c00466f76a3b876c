/**
 * `@agent-runs/ai-sdk`: Vercel AI SDK agents made durable on Agent Runs client-driven runs. A
 * language-model middleware and a tool wrapper record each model call and tool call as one
 * operation of the run; after a crash, a restarted process resumes the same run by its key and
 * replays what was recorded.
 */
export {
  type DurableAgent,
  type DurableAgentContext,
  type DurableAgentOptions,
  type DurableAgentResult,
  durableAgent,
} from './durable-agent.ts';
export type { DurableToolsOptions } from './durable-tools.ts';
export { DurableAgentError, type DurableAgentErrorCode } from './errors.ts';
