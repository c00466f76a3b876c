/**
 * The reducer contract `raisin.agent-run.reducer/1`: request, the 11 event kinds, response,
 * the 9 effect kinds, the projection and the 13 validation codes.
 * docs/contracts/reducer.md. Field names are the contract's, exactly.
 *
 * Growth rule: every optional field accepts null and reads it as absent, every defaulted field
 * reads null as its default (optionalField/defaultField in common.ts). A field whose value is
 * any JSON (`z.unknown()`: context, value, detail, changes, ...) keeps a null as that value.
 */
import { z } from 'zod';
import {
  Count,
  defaultField,
  JsonObject,
  optionalField,
  RequestExpiresInMs,
  Subject,
  TokenCount,
} from './common.ts';
import { DELIVERED_AS_PERSISTED } from './events.ts';
import { ForkOrigin } from './fork.ts';
import { ToolResultEnvelope } from './tool-result.ts';

export const REDUCER_CONTRACT = 'raisin.agent-run.reducer/1';

/** The 13 validation codes; a violation fails the run with `reducer_refused:<code>`. */
export const REDUCER_VALIDATION_CODES = [
  'contract_mismatch',
  'state_rev_regressed',
  'effect_id_mismatch',
  'multiple_operations',
  'terminal_not_exclusive',
  'gap_without_follow_up',
  'effects_after_terminal',
  'unknown_effect_kind',
  'state_too_large',
  'effects_without_state_change',
  'open_requests_unresolved',
  'unanswered_tool_calls',
  'projection_invalid',
] as const;
export const ReducerValidationCode = z.enum(REDUCER_VALIDATION_CODES);
export type ReducerValidationCode = z.infer<typeof ReducerValidationCode>;

/** The contract's limit on the canonical state: 256 KiB. */
export const MAX_STATE_BYTES = 256 * 1024;

// ---------------------------------------------------------------- projection

export const PROJECTION_ITEM_STATUSES = [
  'pending',
  'in_progress',
  'waiting',
  'completed',
  'blocked',
  'failed',
  'stopped',
  'paused',
] as const;
export const ProjectionItemStatus = z.enum(PROJECTION_ITEM_STATUSES);
export type ProjectionItemStatus = z.infer<typeof ProjectionItemStatus>;

export const ProjectionItem = z.object({
  key: z.string().min(1),
  title: z.string(),
  status: ProjectionItemStatus,
  detail: z.unknown().optional(),
});
export type ProjectionItem = z.infer<typeof ProjectionItem>;

/**
 * `{items: [{key, title, status, detail?}], summary?}`. docs/contracts/reducer.md, "Projection".
 */
export const Projection = z.object({
  items: z.array(ProjectionItem),
  summary: optionalField(z.string()),
});
export type Projection = z.infer<typeof Projection>;

// ---------------------------------------------------------------- events

export const ToolCall = z.object({ call_id: z.string().min(1), name: z.string().min(1), args: JsonObject });
export type ToolCall = z.infer<typeof ToolCall>;

/** Tokens one model turn used, each way at most MAX_TOKENS_PER_TURN (common.ts). */
export const TokenUsage = z.object({
  input_tokens: defaultField(TokenCount, () => 0),
  output_tokens: defaultField(TokenCount, () => 0),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

const eventBase = {
  seq: z.number().int().positive(),
  effect_id: optionalField(z.string()),
  operation_id: optionalField(z.string()),
};

export const RunStartedData = z.object({
  input: z.unknown(),
  objective: optionalField(z.string()),
  context: z.unknown().optional(),
  /** A fork's run_started: where it was forked from (the reducer never receives a fork's run_started). */
  origin: optionalField(ForkOrigin),
});
export const UserInputData = z.object({ steer_id: z.string(), input: z.unknown() });
export const ModelTurnCompletedData = z.object({
  message: z.object({ text: z.string().nullable().optional() }),
  tool_calls: defaultField(z.array(ToolCall), () => []),
  finish_reason: z.string(),
  usage: TokenUsage,
});
export const ToolResultData = z.object({
  call_id: optionalField(z.string()),
  tool: z.string(),
  envelope: ToolResultEnvelope,
});
export const RequestResolvedData = z.object({
  request_id: z.string(),
  kind: z.enum(['approval', 'input']),
  decision: optionalField(z.enum(['approved', 'rejected'])),
  subject_digest: optionalField(z.string()),
  value: z.unknown().optional(),
  reason: optionalField(z.string()),
});
export const RequestClosedData = z.object({ request_id: z.string(), reason: z.string() });
export const OperationFailedData = z.object({
  error_class: z.string(),
  retryable: z.boolean(),
  outcome_unknown: z.boolean(),
  message: z.string(),
});
/**
 * `before_dispatch`: cancelled by a stop seen after its start commit and before it was
 * dispatched (it never ran); `call_id`: the model's call the operation was for, if any.
 */
export const OperationCancelledData = z.object({
  acknowledged: z.boolean(),
  before_dispatch: optionalField(z.literal(true)),
  call_id: optionalField(z.string()),
});
export const ResumedData = z.object({ from_checkpoint_no: Count.nullable() });
export const BudgetExceededData = z.object({ which: z.string(), limit: z.number(), used: z.number() });
export const StoppedData = z.object({ reason: z.string() });

/** The kinds the reducer sees: the persisted ones of REDUCER_VISIBLE_EVENT_KINDS, with steer_consumed as user_input. */
export const REDUCER_EVENT_KINDS = ['run_started', 'user_input', ...DELIVERED_AS_PERSISTED] as const;
export type ReducerEventKind = (typeof REDUCER_EVENT_KINDS)[number];

/** One event as the reducer sees it: `{seq, kind, effect_id?, operation_id?, data}`; the kind set is closed. */
export const ReducerEvent = z.discriminatedUnion('kind', [
  z.object({ ...eventBase, kind: z.literal('run_started'), data: RunStartedData }),
  z.object({ ...eventBase, kind: z.literal('user_input'), data: UserInputData }),
  z.object({ ...eventBase, kind: z.literal('model_turn_completed'), data: ModelTurnCompletedData }),
  z.object({ ...eventBase, kind: z.literal('tool_result'), data: ToolResultData }),
  z.object({ ...eventBase, kind: z.literal('request_resolved'), data: RequestResolvedData }),
  z.object({ ...eventBase, kind: z.literal('request_closed'), data: RequestClosedData }),
  z.object({ ...eventBase, kind: z.literal('operation_failed'), data: OperationFailedData }),
  z.object({ ...eventBase, kind: z.literal('operation_cancelled'), data: OperationCancelledData }),
  z.object({ ...eventBase, kind: z.literal('resumed'), data: ResumedData }),
  z.object({ ...eventBase, kind: z.literal('budget_exceeded'), data: BudgetExceededData }),
  z.object({ ...eventBase, kind: z.literal('stopped'), data: StoppedData }),
]);
export type ReducerEvent = z.infer<typeof ReducerEvent>;

// ---------------------------------------------------------------- request

/** An open request as the reducer sees it in `run.open_requests`. */
export const OpenRequestSummary = z.object({
  request_id: z.string(),
  kind: z.enum(['approval', 'input', 'result']),
  effect_id: optionalField(z.string()),
  subject_digest: optionalField(z.string()),
  expires_at: optionalField(z.number()),
});
export type OpenRequestSummary = z.infer<typeof OpenRequestSummary>;

export const RunSummary = z.object({
  run_id: z.string(),
  status: z.string(),
  turn: Count,
  last_seq: Count,
  usage: JsonObject,
  budgets: JsonObject,
  open_requests: z.array(OpenRequestSummary),
  unanswered_calls: z.array(z.string()),
  scope: optionalField(JsonObject),
  subject: Subject,
});
export type RunSummary = z.infer<typeof RunSummary>;

export const ReducerRequest = z.object({
  contract: z.literal(REDUCER_CONTRACT),
  accept: z.array(z.string()).min(1),
  run: RunSummary,
  state: z.unknown(),
  state_rev: Count,
  event: ReducerEvent,
});
export type ReducerRequest = z.infer<typeof ReducerRequest>;

// ---------------------------------------------------------------- effects

const effectBase = { effect_id: z.string() };

export const ToolOffered = z.object({
  name: z.string().min(1),
  kind: z.enum(['function', 'domain']),
  function_path: optionalField(z.string()),
  description: optionalField(z.string()),
  schema: JsonObject,
});
export type ToolOffered = z.infer<typeof ToolOffered>;

/** A reference to a tool call a model turn answers (the result itself is in the event log). */
export const ToolResultRef = z.looseObject({ call_id: z.string().min(1) });

export const ApprovalSubject = z.object({
  kind: z.string().min(1),
  digest: z.string().min(1),
  digest_alg: z.string().min(1),
  summary: z.string(),
  changes: z.unknown().optional(),
});
export type ApprovalSubject = z.infer<typeof ApprovalSubject>;

export const CapabilityGap = z.object({
  requested_outcome: z.string(),
  missing: z.unknown(),
  inspected: z.unknown(),
  why_insufficient: z.string(),
  proposed: z.object({ layer: z.string(), description: z.string() }),
  safe_alternative: z.unknown().optional(),
});

export const CallToolEffect = z.object({
  ...effectBase,
  kind: z.literal('call_tool'),
  tool: z.string().min(1),
  args: JsonObject,
  mutating: z.boolean(),
  replay_safe: z.boolean(),
  interruptible: defaultField(z.boolean(), () => true),
  timeout_ms: optionalField(z.number().int().positive()),
  for_call_id: optionalField(z.string()),
});
export const RequestModelTurnEffect = z.object({
  ...effectBase,
  kind: z.literal('request_model_turn'),
  tools_offered: z.array(ToolOffered),
  instructions: optionalField(z.string()),
  context: z.unknown().optional(),
  tool_results: optionalField(z.array(ToolResultRef)),
  output_schema: z.unknown().optional(),
});
export const RequestApprovalEffect = z.object({
  ...effectBase,
  kind: z.literal('request_approval'),
  subject: ApprovalSubject,
  expires_in_ms: optionalField(RequestExpiresInMs),
});
export const AskUserEffect = z.object({
  ...effectBase,
  kind: z.literal('ask_user'),
  question: z.string(),
  choices: optionalField(z.array(z.string())),
  schema: optionalField(JsonObject),
  expires_in_ms: optionalField(RequestExpiresInMs),
});
export const WithdrawRequestEffect = z.object({
  ...effectBase,
  kind: z.literal('withdraw_request'),
  request_id: z.string(),
});
export const CheckpointEffect = z.object({
  ...effectBase,
  kind: z.literal('checkpoint'),
  reason: optionalField(z.string()),
  summary: optionalField(z.string()),
});
export const CompleteEffect = z.object({
  ...effectBase,
  kind: z.literal('complete'),
  outcome: z.enum(['succeeded', 'partial', 'blocked']),
  summary: optionalField(z.string()),
  artifacts: optionalField(z.array(z.unknown())),
  evidence: optionalField(z.array(z.unknown())),
});
export const FailEffect = z.object({
  ...effectBase,
  kind: z.literal('fail'),
  code: z.string().min(1),
  message: z.string(),
});
export const CapabilityGapEffect = z.object({
  ...effectBase,
  kind: z.literal('capability_gap'),
  gap: CapabilityGap,
});

export const EFFECT_KINDS = [
  'call_tool',
  'request_model_turn',
  'request_approval',
  'ask_user',
  'withdraw_request',
  'checkpoint',
  'complete',
  'fail',
  'capability_gap',
] as const;
export type EffectKind = (typeof EFFECT_KINDS)[number];

/** Effect kinds that start an operation or open a request; at most one per response. */
export const OPERATION_EFFECT_KINDS = [
  'call_tool',
  'request_model_turn',
  'request_approval',
  'ask_user',
] as const;

export const Effect = z.discriminatedUnion('kind', [
  CallToolEffect,
  RequestModelTurnEffect,
  RequestApprovalEffect,
  AskUserEffect,
  WithdrawRequestEffect,
  CheckpointEffect,
  CompleteEffect,
  FailEffect,
  CapabilityGapEffect,
]);
export type Effect = z.infer<typeof Effect>;
export type CallToolEffect = z.infer<typeof CallToolEffect>;
export type RequestModelTurnEffect = z.infer<typeof RequestModelTurnEffect>;
export type RequestApprovalEffect = z.infer<typeof RequestApprovalEffect>;
export type AskUserEffect = z.infer<typeof AskUserEffect>;

// ---------------------------------------------------------------- response

export const Refusal = z.object({ code: z.string().min(1), message: z.string() });

/**
 * The reducer's answer. `effects` defaults to [], `diagnostics` to [], `refused` to null.
 * The structural shape only: the contract rules (ids, exclusivity, ...) are checked by
 * `validateReducerResponse` in lib/core.
 */
export const ReducerResponse = z.object({
  contract: z.string(),
  state: z.unknown(),
  state_rev: Count,
  effects: defaultField(z.array(Effect), () => []),
  projection: Projection.nullable().optional(),
  diagnostics: defaultField(z.array(z.unknown()), () => []),
  refused: Refusal.nullable().default(null),
});
export type ReducerResponse = z.infer<typeof ReducerResponse>;
