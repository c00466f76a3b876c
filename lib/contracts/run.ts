/**
 * Run lifecycle shapes: statuses, budgets, usage, open requests, the
 * operation, and the closed run record. docs/contracts/run-lifecycle.md, "Lifecycle", "Operations",
 * "Controls", "Budgets", "Leases, recovery and the sweeper".
 */
import { z } from 'zod';
import { Count, JsonObject, Subject } from './common.ts';
import { CompactionRef, LargeResultRef } from './compaction.ts';
import { ForkOrigin } from './fork.ts';
import { type BUDGET_LIMITS, RUN_STATUSES } from './names.ts';
import { ApprovalSubject, Effect, Projection } from './reducer.ts';

// ---------------------------------------------------------------- statuses

export {
  BUDGET_LIMITS,
  isTerminalStatus,
  RUN_STATUSES,
  TERMINAL_STATUSES,
  type TerminalStatus,
} from './names.ts';
/**
 * A run's status: `queued`, `running`, `waiting` (an approval or question is open), `paused`,
 * `cancelling` (stopping once the operation in flight ends), and the terminal `completed`,
 * `failed`, `stopped`.
 */
export const RunStatus = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof RunStatus>;

// ---------------------------------------------------------------- budgets and usage

export type BudgetLimit = (typeof BUDGET_LIMITS)[number];

const Limit = z.number().int().positive();
/** Strict: an unknown key (a typo such as max_turn) is refused, never silently unlimited. */
export const Budgets = z.strictObject({
  max_turns: Limit.optional(),
  max_operations: Limit.optional(),
  max_model_calls: Limit.optional(),
  max_total_tokens: Limit.optional(),
  max_wall_ms: Limit.optional(),
  max_consecutive_op_failures: Limit.optional(),
  max_children: Limit.optional(),
  max_live_children: Limit.optional(),
  max_depth: Limit.optional(),
});
export type Budgets = z.infer<typeof Budgets>;

/**
 * The limits a delegation tree shares: a child's own limits for these are reserved from what its
 * parent has left, and its usage is charged back to the parent at the hand-back (tree budgets).
 */
export const TREE_LIMITS = ['max_turns', 'max_operations', 'max_model_calls', 'max_total_tokens'] as const;
export type TreeLimit = (typeof TREE_LIMITS)[number];
/** Amounts per tree limit (a reservation, or usage charged), keyed by the limit's name. */
export const TreeAmounts = z.strictObject({
  max_turns: Count.optional(),
  max_operations: Count.optional(),
  max_model_calls: Count.optional(),
  max_total_tokens: Count.optional(),
});
export type TreeAmounts = z.infer<typeof TreeAmounts>;

/** What a live child holds of its parent: its reservation, and whether the parent waits on it. */
export const ChildTerms = z.object({ reserved: TreeAmounts, wait: z.boolean() });
export type ChildTerms = z.infer<typeof ChildTerms>;

export const OnExceeded = z.enum(['pause', 'fail']);

/**
 * The run's risk tier, fixed at admission (docs/architecture.md, "The seams of a
 * step": admission sets the risk tier that decides approvals and sandbox policy), ordered low <
 * standard < high. A create may ask for a tier at or above the deployment's floor, never below it.
 */
export const RISK_TIERS = ['low', 'standard', 'high'] as const;
export const RiskTier = z.enum(RISK_TIERS);
export type RiskTier = z.infer<typeof RiskTier>;
export type OnExceeded = z.infer<typeof OnExceeded>;

/**
 * What a model turn whose provider stays unavailable (rate_limited, transient or timeout after
 * every retry) does to the run: `pause` (the default) pauses it `provider_outage:<class>` with
 * the turn kept, dispatched again on resume; `fail` hands the reducer the operation_failed.
 */
export const OnProviderOutage = z.enum(['pause', 'fail']);
export type OnProviderOutage = z.infer<typeof OnProviderOutage>;

/**
 * Usage counters; they never decrease. `turns`: model turns that ended; `model_calls`: calls
 * made to the model provider, each retry included (what costs time and money); `model_retries`:
 * the calls beyond the first of their turn. `max_turns` bounds the first, `max_model_calls` the
 * second.
 */
const Dollars = z.number().nonnegative();

/**
 * What a run's usage cost, in US dollars: its model tokens at the model's price and the AWS
 * requests the runtime made for it (its `metered` counts) at the region's prices. Computed when
 * the run is read (GET /runs/{id}, the run list) from the deployment's price tables
 * (lib/core/prices.ts, which dates each price); never stored. `model`: the price-table entry its
 * tokens were priced at, null when the run's model has no price (its tokens then cost 0 here).
 */
export const UsageCost = z.object({
  currency: z.literal('USD'),
  total_usd: Dollars,
  model_usd: Dollars,
  aws_usd: Dollars,
  model: z.string().nullable(),
  region: z.string(),
  /** The date of the price tables (YYYY-MM-DD). */
  prices_as_of: z.string(),
  lines: z.object({
    model_input_usd: Dollars,
    model_output_usd: Dollars,
    dynamodb_write_usd: Dollars,
    dynamodb_read_usd: Dollars,
    sqs_usd: Dollars,
    lambda_requests_usd: Dollars,
    lambda_duration_usd: Dollars,
    s3_usd: Dollars,
  }),
});
export type UsageCost = z.infer<typeof UsageCost>;

/**
 * What a narrowed run may do, set by the delegation that created it (DelegateArgs.scope, narrowed
 * again by every delegation below): `tools`, the tool names its calls may name (absent: any the
 * policy allows); `writable`, the subjects its mutating calls may write, each covering its path
 * and every path below it in its workspace (absent: any; empty: none). The policy gate enforces
 * both (deny `tool_outside_delegation_scope`, `subject_not_writable`); the reserved delegate tools
 * are governed by the tree bounds instead.
 */
export const RunScope = z.strictObject({
  tools: z.array(z.string().min(1).max(512)).max(256).optional(),
  writable: z
    .array(z.strictObject({ workspace: z.string().min(1), path: z.string().min(1) }))
    .max(64)
    .optional(),
});
export type RunScope = z.infer<typeof RunScope>;

export const Usage = z.object({
  turns: Count.default(0),
  operations: Count.default(0),
  model_calls: Count.default(0),
  model_retries: Count.default(0),
  tool_calls: Count.default(0),
  input_tokens: Count.default(0),
  output_tokens: Count.default(0),
  /** In a run view only: what this usage (with the run's `metered` requests) cost. Never stored. */
  cost: UsageCost.optional(),
});
export type Usage = z.infer<typeof Usage>;
export const EMPTY_USAGE: Usage = {
  turns: 0,
  operations: 0,
  model_calls: 0,
  model_retries: 0,
  tool_calls: 0,
  input_tokens: 0,
  output_tokens: 0,
};

const Units = z.number().nonnegative();

/**
 * The AWS requests the runtime made for a run, counted as it made them and charged to the run
 * in its own commits (lib/store/metering.ts): DynamoDB write and read request units (a commit's
 * write units estimated from its items' sizes by DynamoDB's rules before it is written, reads
 * measured since the run's previous commit), SQS requests (step messages sent), Lambda
 * invocations and the step worker's measured duration (ms, and GB-seconds at the function's
 * configured memory), S3 requests for its large payloads. `record_item_bytes` and
 * `record_index_keys`: the run record item as its last commit wrote it (its size, its index
 * keys), what its next update is charged against; the HTTP answers carry the keys empty (they
 * are the store's, not the API's).
 * Set by the store, like `version`; core never changes it. Absent on runs stored before it.
 */
export const Metered = z.object({
  dynamodb_write_units: Units.default(0),
  dynamodb_read_units: Units.default(0),
  sqs_requests: Count.default(0),
  lambda_invocations: Count.default(0),
  lambda_ms: Units.default(0),
  lambda_gb_seconds: Units.default(0),
  s3_put_requests: Count.default(0),
  s3_get_requests: Count.default(0),
  record_item_bytes: Count.default(0),
  /**
   * The run record item's index key attributes as its last commit wrote them: its next update
   * writes an index entry for each index whose keys it adds, removes or changes.
   */
  record_index_keys: z.record(z.string(), z.union([z.string(), z.number()])).default({}),
});
export type Metered = z.infer<typeof Metered>;
export const EMPTY_METERED: Metered = {
  dynamodb_write_units: 0,
  dynamodb_read_units: 0,
  sqs_requests: 0,
  lambda_invocations: 0,
  lambda_ms: 0,
  lambda_gb_seconds: 0,
  s3_put_requests: 0,
  s3_get_requests: 0,
  record_item_bytes: 0,
  record_index_keys: {},
};

// ---------------------------------------------------------------- principal

/**
 * Who a run acts as. `user`: the creator. `agent`: `as_agent`, acting for `on_behalf_of` (a user).
 * `system`: triggers and the runtime itself; a system caller may create a run on behalf of a user.
 */
export const Principal = z.object({
  kind: z.enum(['user', 'agent', 'system']),
  id: z.string().min(1),
  on_behalf_of: z.string().min(1).optional(),
  /**
   * The groups of the user this principal is, or acts for, as its verified token named them at
   * admission (JWT `cognito:groups` or `groups`). Policy rules match on them; identity never does.
   */
  groups: z.array(z.string().min(1).max(128)).max(64).optional(),
});
export type Principal = z.infer<typeof Principal>;

/**
 * The registry versions a run was admitted with (lib/contracts/registry.ts): the tool catalogue,
 * the tool policy and the agents. 0 means nothing was published yet (the code's tools and policy).
 * docs/architecture.md, "The seams of a step" (the policy, catalogue and model versions a run
 * uses are pinned at admission).
 */
export const RunPins = z.object({ catalogue: Count, policy: Count, agents: Count });
export type RunPins = z.infer<typeof RunPins>;

// ---------------------------------------------------------------- requests and operations

/** An open request: approval, question (input) or parked external result. */
export const OpenRequest = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('approval'),
    request_id: z.string(),
    effect_id: z.string(),
    subject: ApprovalSubject,
    opened_at: z.number(),
    expires_at: z.number().nullable(),
  }),
  z.object({
    kind: z.literal('input'),
    request_id: z.string(),
    effect_id: z.string(),
    question: z.string(),
    choices: z.array(z.string()).optional(),
    schema: JsonObject.optional(),
    opened_at: z.number(),
    expires_at: z.number().nullable(),
  }),
  z.object({
    kind: z.literal('result'),
    request_id: z.string(),
    effect_id: z.string(),
    resume_key: z.string(),
    op_id: z.string(),
    tool: z.string(),
    call_id: z.string().optional(),
    opened_at: z.number(),
    expires_at: z.number().nullable(),
  }),
]);
export type OpenRequest = z.infer<typeof OpenRequest>;

export const QueuedSteer = z.object({
  steer_id: z.string(),
  control_id: z.string(),
  input: z.unknown(),
  seq: Count,
});
export type QueuedSteer = z.infer<typeof QueuedSteer>;

export const OPERATION_KINDS = ['model_turn', 'tool_call', 'compaction'] as const;
export const OperationKind = z.union([z.enum(OPERATION_KINDS), z.string().min(1)]);

/** The six outcomes an operation finishes with. */
export const OPERATION_OUTCOMES = [
  'succeeded',
  'waiting',
  'retryable',
  'blocked',
  'failed',
  'cancelled',
] as const;
export const OperationOutcome = z.enum(OPERATION_OUTCOMES);
export type OperationOutcome = z.infer<typeof OperationOutcome>;

/**
 * The one active operation. `started_at` is null while it is pending (asked for, not yet
 * dispatched, e.g. held by a budget pause). `effect` is the reducer effect that asked for it.
 */
export const Operation = z.object({
  op_id: z.string(),
  kind: OperationKind,
  effect_id: z.string(),
  effect: Effect,
  replay_safe: z.boolean(),
  interruptible: z.boolean(),
  attempt: z.number().int().positive(),
  started_at: z.number().nullable(),
  /** Set when an approval opened by the policy gate for this operation was granted with this digest. */
  approved_digest: z.string().optional(),
  /** For tool calls: the model's call id this operation answers. */
  call_id: z.string().optional(),
  /**
   * For model turns: provider requests made for this turn since it was last kept for a resume,
   * each counted in usage when it was made (a takeover continues the retry budget from here).
   */
  provider_calls: z.number().int().nonnegative().optional(),
  /**
   * For model turns: provider requests of this turn that answered a retryable failure, each noted
   * durably when its answer came (the retry budget a takeover continues: a request lost with its
   * worker, whose answer nobody saw, counts in usage but not here).
   */
  provider_failures: z.number().int().nonnegative().optional(),
});
export type Operation = z.infer<typeof Operation>;
/** An operation asked for but not yet dispatched (held by an approval, a budget pause or a takeover). */
export const PendingOperation = Operation.extend({ started_at: z.null() });
/** An operation dispatched and not yet finished: no request may be open beside it. */
export const InFlightOperation = Operation.extend({ started_at: z.number() });

/** The lease: who executes the run's operations, until when. The fence is (owner, record.epoch). */
export const Lease = z.object({ owner: z.string().min(1), expires_at: z.number() });
export type Lease = z.infer<typeof Lease>;

export const ReducerBinding = z.object({
  function_path: z.string().min(1),
  handler: z.string().optional(),
  artifact_hash: z.string().optional(),
});
export type ReducerBinding = z.infer<typeof ReducerBinding>;

/** Counters core keeps besides usage. */
export const Counters = z.object({
  next_op: Count.default(0),
  next_req: Count.default(0),
  next_steer: Count.default(0),
  checkpoints: Count.default(0),
  consecutive_op_failures: Count.default(0),
  /** Child runs this run started (delegate operations begun at attempt 1); max_children counts these. */
  children: Count.default(0),
});
export type Counters = z.infer<typeof Counters>;
/** The counters of a run that has done nothing yet (every count 0). */
export const NO_COUNTERS: Counters = Counters.parse({});

// ---------------------------------------------------------------- the closed run record

export const OWED_DUTIES = ['handback', 'stop_children'] as const;
export const OwedDuty = z.enum(OWED_DUTIES);
export type OwedDuty = z.infer<typeof OwedDuty>;

const recordBase = {
  run_id: z.string().min(1),
  version: Count,
  created_at: z.number(),
  updated_at: z.number(),
  principal: Principal,
  subject: Subject,
  reducer: ReducerBinding.nullable(),
  executor_config: JsonObject.default({}),
  objective: z.string().optional(),
  budgets: Budgets,
  on_exceeded: OnExceeded,
  on_provider_outage: OnProviderOutage.default('pause'),
  usage: Usage,
  /** The AWS requests made for the run (see {@link Metered}); set by the store's commit. */
  metered: Metered.optional(),
  counters: Counters,
  epoch: Count,
  last_seq: Count,
  /** Seq of the last event delivered to the reducer. */
  reduced_seq: Count,
  /** Seqs of reducer-visible events not yet delivered, oldest first. */
  inbox: z.array(z.number().int().positive()),
  turn: Count,
  state_rev: Count,
  /**
   * Where the store keeps the domain state of `state_rev` (the sort key of the item holding it);
   * set by the store's commit, absent while the state is the initial null.
   */
  state_at: z.string().optional(),
  projection: Projection.nullable(),
  unanswered_calls: z.array(z.string()),
  queued_steers: z.array(QueuedSteer),
  /** The run that delegated this one (a child run), and how deep in the tree it is (root 0). */
  parent_run_id: z.string().optional(),
  /** The parent's delegate operation that created this run. */
  parent_op_id: z.string().optional(),
  depth: Count.default(0),
  /** Child runs started and not yet handed back; max_live_children counts these. */
  live_children: z.array(z.string()).default([]),
  /** Per live child (by run id): its reservation of this run's tree limits, and whether it is awaited. */
  child_terms: z.record(z.string(), ChildTerms).default({}),
  /** Usage charged by children that handed back (their own and their descendants'), per tree limit. */
  tree_usage: TreeAmounts.default({}),
  /** What this child run holds reserved of its parent's tree limits (its own limits for them). */
  reserved: TreeAmounts.optional(),
  /** What this run may call and write (a narrowed child; absent: what its principal may). */
  scope: RunScope.optional(),
  /** What this child run must hand back (its delegation's `returns`), checked at the hand-back. */
  returns: z
    .object({ schema: JsonObject.optional(), evidence: z.array(z.string().min(1)).optional() })
    .optional(),
  capability_hash: z.string().optional(),
  /** The risk tier decided at admission (see {@link RiskTier}); records before it read as standard. */
  risk_tier: RiskTier.default('standard'),
  /**
   * The live-run quota slot this run holds (0-based), when the deployment limits live runs per
   * principal: taken at create, released in the commit that ends the run.
   */
  quota_slot: z.number().int().nonnegative().optional(),
  /** The registry versions pinned at admission (absent on runs admitted before registries existed: all 0). */
  pinned: RunPins.optional(),
  /** Wake deadline (ms epoch): the sweeper wakes the run then if no step message did. */
  wake_at: z.number().nullable(),
  /** A pause asked for during an operation, applied at the next boundary. */
  pause_requested: z.string().optional(),
  /**
   * The reducer asked for a compaction (a checkpoint effect of reason `compaction`): the next
   * model turn is preceded by a compaction operation.
   */
  compaction_requested: z.boolean().optional(),
  /** The latest compaction: the next model turns are compiled from its checkpoint. */
  compaction: CompactionRef.optional(),
  /** The window of large tool results: references to the most recent ones (LARGE_RESULT_WINDOW). */
  large_results: z.array(LargeResultRef).optional(),
  /** Set on a fork: the run and checkpoint it was forked from (its events 2..cutoff are the origin's). */
  origin: ForkOrigin.optional(),
};

const OpenRequests = z.array(OpenRequest);
const NoRequests = z.array(OpenRequest).max(0);
const SomeRequests = z.array(OpenRequest).min(1);

export const QueuedRun = z.object({
  ...recordBase,
  status: z.literal('queued'),
  lease: z.null(),
  operation: PendingOperation.nullable(),
  open_requests: OpenRequests,
});
/** Running with an operation in flight: no request may be open (an approval gates the operation). */
export const RunningWithOperation = z.object({
  ...recordBase,
  status: z.literal('running'),
  lease: Lease,
  operation: InFlightOperation,
  open_requests: NoRequests,
  /**
   * A steer (its steer_id) asked to interrupt the operation in flight (when_busy `interrupt`):
   * its executor cancels it and the steer is consumed at the next boundary. Only while an
   * operation is in flight: every other shape of the record drops it.
   */
  interrupt_requested: z.string().optional(),
});
/** Running between operations: at most a pending operation, which open requests may hold back. */
export const RunningBetweenOperations = z.object({
  ...recordBase,
  status: z.literal('running'),
  lease: Lease,
  operation: PendingOperation.nullable(),
  open_requests: OpenRequests,
});
/** Waiting always has at least one open request, and holds no lease (it costs nothing). */
export const WaitingRun = z.object({
  ...recordBase,
  status: z.literal('waiting'),
  lease: z.null(),
  operation: PendingOperation.nullable(),
  open_requests: SomeRequests,
});
export const PausedRun = z.object({
  ...recordBase,
  status: z.literal('paused'),
  lease: z.null(),
  /** The operation kept for resume (never started while paused). */
  operation: PendingOperation.nullable(),
  open_requests: OpenRequests,
  pause_reason: z.string(),
  paused_from: z.enum(['queued', 'running', 'waiting']),
});
export const CancellingRun = z.object({
  ...recordBase,
  status: z.literal('cancelling'),
  lease: Lease,
  operation: InFlightOperation,
  open_requests: NoRequests,
  stop_reason: z.string(),
});
const terminalBase = {
  ...recordBase,
  lease: z.null(),
  operation: z.null(),
  open_requests: NoRequests,
  queued_steers: z.array(QueuedSteer).max(0),
  terminal_reason: z.string(),
  finished_at: z.number(),
  /**
   * Bookkeeping the run still owes after its end, done right after the ending commit and
   * otherwise by the sweeper: `handback` (deliver the outcome to the parent run) and
   * `stop_children` (stop the children still live).
   */
  owed: z.array(OwedDuty).default([]),
};
export const CompletedRun = z.object({
  ...terminalBase,
  status: z.literal('completed'),
  outcome: z.enum(['succeeded', 'partial', 'blocked']),
  summary: z.string().optional(),
});
export const FailedRun = z.object({ ...terminalBase, status: z.literal('failed') });
export const StoppedRun = z.object({ ...terminalBase, status: z.literal('stopped') });

/**
 * The closed run record. Illegal combinations (an operation in flight while a request is open,
 * waiting with no open request, a terminal run with a lease or an operation, a running run
 * without a lease) have no schema and cannot be parsed, so they cannot be stored.
 */
export const RunRecord = z.union([
  QueuedRun,
  RunningWithOperation,
  RunningBetweenOperations,
  WaitingRun,
  PausedRun,
  CancellingRun,
  CompletedRun,
  FailedRun,
  StoppedRun,
]);
export type RunRecord = z.infer<typeof RunRecord>;
