/**
 * The agent loop's own state, kept by core between events and handed back with the next one.
 * Small and bounded: the transcript stays in the event log and is referenced by seq, only the
 * current turn's pending calls keep their args, the configuration is capped at 160 KiB and one
 * turn's args at 64 KiB (UTF-8 of canonical JSON), so the canonical state stays below the
 * contract's 256 KiB however long the run. docs/contracts/reducer.md, "Writing a deterministic
 * reducer" (state is data, versioned).
 */
import type { AgentLoopOutcome, AgentLoopSettings, AgentLoopToolSettings } from './context-schema.ts';
import type { JsonRecord } from './json.ts';

/** `state.v`: a state of another version is refused (`state_unrecognized`). */
export const STATE_VERSION = 1;

/** model: a model turn is awaited; tool: a call of the turn; user: the answer to ask_user. */
/** verify: the verifier tool's call is awaited (verified completion). */
export type Phase = 'model' | 'tool' | 'user' | 'verify' | 'ended' | 'stopped';

/** A tool entry as the state keeps it: defaults applied, replay_safe resolved, `interruptible` only when false. */
export type AgentLoopTool = AgentLoopToolSettings & { replay_safe: boolean };

/** How the reducer answered (or will answer) one call of the current turn. */
export interface AgentLoopCallResult {
  /** An envelope status, or the reducer's own: refused, error, outcome_unknown, not_executed. */
  status: string;
  /** Seq of the tool_result event that answered the call. */
  seq?: number;
  /** The note the reducer answered the call with itself; the model sees it. */
  content?: string;
}

/** One call of the current model turn. */
export interface AgentLoopCall {
  call_id: string;
  name: string;
  /** Kept only until the call is answered. */
  args?: JsonRecord;
  state: 'pending' | 'running' | 'waiting' | 'done';
  /** call_tool effects issued for this call so far. */
  attempts: number;
  result?: AgentLoopCallResult;
}

/** The model turn whose calls are being run: `next` indexes the call in progress. */
export interface AgentLoopTurn {
  seq: number;
  next: number;
  calls: AgentLoopCall[];
}

export interface AgentLoopState {
  v: typeof STATE_VERSION;
  last_event_seq: number;
  phase: Phase;
  /** The effect id the reducer waits for (its operation's answer), or null. */
  awaiting: string | null;
  /** The transcript a model turn sees ends at this seq. */
  cutoff_seq: number;
  /** Seq of a steer the next model turn must see (0: none). */
  steer_seq: number;
  mode: AgentLoopSettings['mode'];
  loop_limit: number;
  max_retries: number;
  instructions?: string;
  objective?: string;
  /** context.compact_above_tokens: a model turn with this many input tokens asks for a compaction. */
  compact_above_tokens?: number;
  /** The next model turn is preceded by a compaction (set by a turn past compact_above_tokens). */
  compact?: boolean;
  tools: AgentLoopTool[];
  turn: AgentLoopTurn | null;
  /** Attempts of the awaited model turn (1 for the first). */
  model_attempt: number;
  /** The fingerprint of the last call issued and how many times in a row it came. */
  streak: { key: string; count: number };
  /** The awaited operation was cancelled while the run was not running: re-issue on resume. */
  interrupted: boolean;
  /** The budget that paused the run, until it resumes. */
  budget: { which: string; limit: number; used: number } | null;
  outcome: AgentLoopOutcome | 'failed' | null;
  counters: { model_turns: number; tool_calls: number; retries: number; loops: number };
  /** context.plan; absent: no plan tools. */
  plan_mode?: 'track' | 'approve';
  /** The plan the model proposed last (absent until it proposes one). */
  plan?: AgentLoopPlan;
  /** context.no_progress_turns, with the guard's count; absent: no guard. */
  progress?: AgentLoopProgress;
  /** Verified completion (context.verify_completion / verifier_tool); absent: off. */
  verify?: AgentLoopVerification;
}

/** Plan item statuses the model may set (the projection's words). */
export type PlanItemStatus = 'pending' | 'in_progress' | 'completed' | 'blocked';

export interface AgentLoopPlanItem {
  key: string;
  title: string;
  status: PlanItemStatus;
  note?: string;
}

export interface AgentLoopPlan {
  items: AgentLoopPlanItem[];
  /** sha256:rfc8785 of {kind: 'plan', items: [{key, title}]}: what an approval must quote. */
  digest: string;
  /** The digest of the last plan an approval quoted (approve mode), or null. */
  approved_digest: string | null;
}

export interface AgentLoopProgress {
  /** N: this many model turns in a row without progress before one end the run. */
  limit: number;
  /** Model turns in a row that came without progress since the turn before. */
  idle_turns: number;
  /** Progress was made since the last model turn completed. */
  progressed: boolean;
  /** Fingerprints of the last succeeded tool results (a repeat is not new), at most 32. */
  seen: string[];
}

/** One primary artifact a tool reported, or one evidence subject (canonical JSON keys). */
export interface AgentLoopProof {
  locator: string;
  revision: string | null;
}

export interface AgentLoopVerification {
  on_missing: 'partial' | 'ask_user';
  /** The verifier tool's name (an entry of tools), when one is configured. */
  verifier?: string;
  /** Primary artifact_refs of trusted succeeded envelopes, at most 32 (then `overflow`). */
  claims: (AgentLoopProof & { ref: JsonRecord })[];
  /** The last evidence per subject, at most 64 (then `overflow`). */
  evidence: (AgentLoopProof & { ok: boolean; kind: string })[];
  overflow: boolean;
  /** The claim being checked by the verifier (phase verify) or put to the user (phase user). */
  pending?: { summary: string; attempts: number; asked?: boolean };
}
