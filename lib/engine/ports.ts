/**
 * The engine's ports: narrow interfaces the use cases depend on, with adapters beside them
 * (DynamoDB store, SQS queue, S3 blobs, QuickJS/WebAssembly reducer host, tool dispatcher,
 * model-turn functions). DESIGN section 3 ("engine/"), STYLE "Ports as narrow interfaces".
 */
import type {
  ModelTurnError,
  ModelTurnInput,
  ModelTurnOutput,
  Principal,
  ReducerBinding,
  RunEvent,
  Subject,
  ToolDescriptor,
  ToolResultEnvelope,
} from '../contracts/index.ts';

/** Time as a value: the engine never reads the clock itself. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

// ---------------------------------------------------------------- reducers

/** What calling a reducer produced. Seed: agent-run-contracts, "Validation" (last paragraph). */
export type ReducerCallResult =
  /** The reducer answered; `response` is raw JSON still to be validated by core. */
  | { kind: 'answered'; response: unknown; artifact_hash: string }
  /** Missing artifact, trap, timeout, memory limit: the run pauses with reducer_unavailable. */
  | { kind: 'unavailable'; reason: string }
  /** The artifact's hash differs from the one the run bound: the run pauses with reducer_changed. */
  | { kind: 'changed'; bound_hash: string; found_hash: string }
  /** The reducer threw: the run fails with reducer_refused:<code>. */
  | { kind: 'threw'; code: string; message: string };

export interface ReducerHost {
  /** Resolves a binding to its artifact hash (sha256 hex) at create time; null when the function is missing. */
  resolve(binding: ReducerBinding): Promise<{ artifact_hash: string } | null>;
  /**
   * Calls the reducer once with a `raisin.agent-run.reducer/1` request (JSON) under the
   * deterministic execution policy. `binding.artifact_hash`, when set, pins the artifact.
   * Never throws for reducer faults: they come back as a ReducerCallResult.
   */
  reduce(binding: ReducerBinding, request: unknown): Promise<ReducerCallResult>;
}

// ---------------------------------------------------------------- tools

/** The policy gate's answer. Seed: tool-invocation-contract, "Policy and authorization". */
export type PolicyDecision =
  | { decision: 'allow' }
  | { decision: 'deny'; code: string }
  /** Core opens an approval whose subject digest is sha256 of canonical {tool, version, args}. */
  | { decision: 'require_approval'; digest: string; summary: string; tool_version: string };

export interface ToolCallRequest {
  run_id: string;
  op_id: string;
  /** Tool name (or path) as the reducer's call_tool.tool named it. */
  tool: string;
  /** The effect's args; the dispatcher sets args.__raisin_context = {run_id, operation_id}. */
  args: Record<string, unknown>;
  principal: Principal;
  attempt: number;
  mutating: boolean;
  replay_safe: boolean;
  /** Milliseconds the call may take (min of the effect's timeout_ms and the tool's metadata). */
  timeout_ms?: number;
  call_id?: string;
  /** The node the run is about; tools may scope what they touch by it. */
  subject?: Subject;
}

export interface ToolHost {
  /** Metadata only, never handlers or credentials. */
  list(): ToolDescriptor[];
  /** Evaluated before any handler, on stable facts only. No side effect. */
  gate(request: ToolCallRequest): PolicyDecision;
  /**
   * Executes one call and normalizes its answer into raisin.tool-result/1. Never throws for a
   * tool fault: failures come back as an envelope with status failed/retryable and error_class.
   * Honors `signal` (cancellation) and the deadline.
   */
  execute(request: ToolCallRequest, signal: AbortSignal): Promise<ToolResultEnvelope>;
}

// ---------------------------------------------------------------- models

/** A model-neutral message, compiled from the event log. */
export type ContextMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls: { call_id: string; name: string; args: Record<string, unknown> }[];
    }
  | { role: 'tool'; call_id: string; name: string; content: string };

export interface CompiledContext {
  messages: ContextMessage[];
  /** What was included: the seqs and kinds of the events used, and the cutoff. */
  manifest: { from_seq: number; to_seq: number; included: { seq: number; kind: string; role: string }[] };
}

export interface ModelHost {
  /**
   * One model turn through the run's model-turn function (executor_config.model_turn_function).
   * Never throws for a provider fault: it comes back as ModelTurnError with its class.
   */
  turn(
    input: ModelTurnInput,
    context: CompiledContext,
    signal: AbortSignal,
  ): Promise<ModelTurnOutput | ModelTurnError>;
}

export type { RunEvent };
