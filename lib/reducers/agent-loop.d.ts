/**
 * Types of the agent-loop artifact (`agent-loop.js`, plain JavaScript run by the QuickJS
 * sandbox). The behaviour is documented in the artifact's header; these shapes mirror it.
 */
import type { Effect, Projection } from '../contracts/index.ts';

/** One tool of run_started.data.context.tools. */
export interface AgentLoopToolEntry {
  name: string;
  description?: string;
  schema?: Record<string, unknown>;
  kind?: 'function' | 'domain';
  function_path?: string;
  /** Default true: a tool not declared read-only may change something. */
  mutating?: boolean;
  /** Default `!mutating`. */
  replay_safe?: boolean;
  timeout_ms?: number;
  interruptible?: boolean;
  /** A succeeded result of this tool ends the run with complete{outcome: ends_run}. */
  ends_run?: 'succeeded' | 'partial' | 'blocked';
}

/** run_started.data.context as the agent loop reads it. */
export interface AgentLoopContextInput {
  instructions?: string;
  tools?: AgentLoopToolEntry[];
  mode?: 'conversation' | 'task';
  loop_limit?: number;
  max_retries?: number;
}

/** A tool entry with its defaults applied, as the state keeps it. */
export type AgentLoopTool = Required<
  Pick<AgentLoopToolEntry, 'name' | 'kind' | 'schema' | 'mutating' | 'replay_safe'>
> &
  Omit<AgentLoopToolEntry, 'name' | 'kind' | 'schema' | 'mutating' | 'replay_safe'>;

/** How the reducer answered (or will answer) one call of the current turn. */
export interface AgentLoopCallResult {
  status: string;
  /** Seq of the tool_result event that answered the call. */
  seq?: number;
  /** The note the reducer answered the call with itself (refused, error, outcome_unknown, not_executed). */
  content?: string;
}

export interface AgentLoopCall {
  call_id: string;
  name: string;
  /** Kept only until the call is answered. */
  args?: Record<string, unknown>;
  state: 'pending' | 'running' | 'waiting' | 'done';
  attempts: number;
  result?: AgentLoopCallResult;
}

/** The reducer's own state (canonical JSON far below 256 KiB: the transcript stays in the log). */
export interface AgentLoopState {
  v: 1;
  last_event_seq: number;
  phase: 'model' | 'tool' | 'user' | 'ended' | 'stopped';
  awaiting: string | null;
  cutoff_seq: number;
  steer_seq: number;
  mode: 'conversation' | 'task';
  loop_limit: number;
  max_retries: number;
  instructions?: string;
  objective?: string;
  tools: AgentLoopTool[];
  turn: { seq: number; next: number; calls: AgentLoopCall[] } | null;
  model_attempt: number;
  streak: { key: string; count: number };
  interrupted: boolean;
  budget: { which: string; limit: number; used: number } | null;
  outcome: 'succeeded' | 'partial' | 'blocked' | 'failed' | null;
  counters: { model_turns: number; tool_calls: number; retries: number; loops: number };
}

/** A diagnostic entry of the response. */
export interface AgentLoopDiagnostic {
  code: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  seq: number;
}

/** The response, as the artifact writes it (still to be validated by core). */
export interface AgentLoopResponse {
  contract: string;
  state: AgentLoopState | null;
  state_rev: number;
  effects: Effect[];
  projection: Projection | null;
  diagnostics: AgentLoopDiagnostic[];
  refused: { code: string; message: string } | null;
}

/** Reduces one `raisin.agent-run.reducer/1` request. Never throws (faults come back as `refused`). */
export function reduce(request: unknown): AgentLoopResponse;
