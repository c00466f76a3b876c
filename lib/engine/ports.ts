/**
 * The engine's ports: narrow interfaces the use cases depend on, with adapters beside them
 * (DynamoDB store, SQS queue, S3 blobs, QuickJS/WebAssembly reducer host, tool dispatcher,
 * model-turn functions). docs/architecture.md, "Code map", "Conventions".
 */
import type {
  Checkpoint,
  CompiledContext,
  ControlAck,
  ModelTurnError,
  ModelTurnInput,
  ModelTurnOutput,
  Principal,
  ReducerBinding,
  RegistryEntry,
  RegistryKind,
  RegistrySnapshot,
  RunEvent,
  RunPins,
  RunRecord,
  RunScope,
  Subject,
  ToolDescriptor,
  ToolEntry,
  ToolResultEnvelope,
} from '../contracts/index.ts';
import type { QuotaUsage } from '../core/admission.ts';
import { type MeterCharge, sumCharges } from '../core/prices.ts';
import type { Fence, ResumeKeyEntry } from '../core/run-machine.ts';
import { EngineModuleError } from './module-error.ts';

/** Time as a value: the engine never reads the clock itself. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

// ---------------------------------------------------------------- reducers

/** What calling a reducer produced. docs/contracts/reducer.md, "Validation" (last paragraph). */
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

/** The policy gate's answer. docs/contracts/tool-result.md, "Policy and authorization". */
export type PolicyDecision =
  | { decision: 'allow'; reason?: string }
  /** `safer`: the call the policy offers instead (transform_to_safer_action), told to the reducer. */
  | { decision: 'deny'; code: string; safer?: { tool: string; args?: Record<string, unknown> } }
  /** Core opens an approval whose subject digest is sha256 of canonical {tool, version, args}. */
  | { decision: 'require_approval'; digest: string; summary: string; tool_version: string; reason?: string };

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
  /** The registry versions the run was admitted with: which catalogue, policy and agents apply. */
  pinned?: RunPins;
  /** What the run may call and write (a narrowed child run; the policy gate enforces it). */
  scope?: RunScope;
}

export interface ToolHost {
  /** Metadata only, never handlers or credentials: the catalogue a run pinned, or (no pins) the current one. */
  list(pinned?: RunPins): ToolDescriptor[] | Promise<ToolDescriptor[]>;
  /** Evaluated before any handler, on stable facts only (the request's pinned versions). No side effect. */
  gate(request: ToolCallRequest): PolicyDecision | Promise<PolicyDecision>;
  /**
   * Executes one call and normalizes its answer into raisin.tool-result/1. Never throws for a
   * tool fault: failures come back as an envelope with status failed/retryable and error_class.
   * Honors `signal` (cancellation) and the deadline.
   */
  execute(request: ToolCallRequest, signal: AbortSignal): Promise<ToolResultEnvelope>;
  /**
   * Checks a tool about to be published as data beyond its wire shape (its input schema
   * compiles, its name is not a code tool's): null when it may be published, else the problem.
   * Absent: the host serves no data tools, and publishing one is refused.
   */
  checkEntry?(entry: ToolEntry): ToolEntryProblem | null | Promise<ToolEntryProblem | null>;
}

/** Why a tool entry may not be published: `tool_name_reserved` (a code tool's name) or `validation_failed` at `path`. */
export interface ToolEntryProblem {
  code: 'tool_name_reserved' | 'validation_failed';
  message: string;
  path: string;
}

// ---------------------------------------------------------------- models

export interface ModelHost {
  /**
   * One model turn through the run's model-turn function (executor_config.model_turn_function).
   * Never throws for a provider fault: it comes back as ModelTurnError with its class.
   * `limits.maxCalls`: provider calls the turn may make at most, retries included (what the
   * run's max_model_calls leaves). The answer may carry `provider_calls` (calls made, default 1).
   */
  turn(
    input: ModelTurnInput,
    context: CompiledContext,
    signal: AbortSignal,
    limits?: ModelTurnLimits,
  ): Promise<ModelTurnOutput | ModelTurnError>;
}

/** What a model turn may still do, and the hook that counts each of its provider requests. */
export interface ModelTurnLimits {
  /** Provider calls this dispatch may make at most (what the run's max_model_calls leaves). */
  maxCalls?: number;
  /**
   * Retryable failures earlier dispatches of this turn met (its retry budget used): a takeover
   * continues the budget from there. Requests lost with a dead worker are not among them.
   */
  failuresBefore?: number;
  /**
   * Awaited before each call of the model-turn function (not when none is made): the engine
   * counts the request durably there. A rejection ends the turn with that error (lease lost).
   */
  beforeCall?: () => Promise<void>;
  /**
   * Awaited after each answer that is a retryable failure, before any backoff: the engine notes
   * it durably there (the budget a takeover continues). A rejection ends the turn with that error.
   */
  afterFailure?: () => Promise<void>;
}

// ---------------------------------------------------------------- the run store

export interface ControlAckItem {
  control_id: string;
  digest: string;
  ack: ControlAck;
  seq: number;
}

/** A stored checkpoint (the contract's Checkpoint). */
export type CheckpointItem = Checkpoint;

/** Everything one commit writes. */
export interface Commit {
  /** The record as it will be stored (its `version` and `state_at` are set by the commit). */
  record: RunRecord;
  /** The version read; null creates the run. */
  expectedVersion: number | null;
  /** The committer's fence, when it holds (or held) the lease. */
  fence?: Fence;
  events: RunEvent[];
  state?: { rev: number; value: unknown };
  checkpoints?: CheckpointItem[];
  controlAck?: ControlAckItem;
  /** Create only: the create key to claim, with the digest of the request it was used for. */
  createKey?: { principalKey: string; key: string; request_digest?: string };
  /** Create only: the parent run of a child run; writes the link `RUN#{parent} / CH#{child}`. */
  parentLink?: string;
  /**
   * Create only: the admission quota items to claim, as read by {@link RunStore.readQuota}: the
   * live-run slot (the record's `quota_slot`) and the creation window's new count. Refused with
   * `quota_moved` when another create of the principal took them first.
   */
  quota?: {
    /** The quota key (lib/core/principal.ts quotaKeyOf): the slot is released under the record's. */
    principalKey: string;
    window?: { start: number; count: number };
  };
  /**
   * Create only (a fork): events `first_seq`..`last_seq` of the new run are those of `run_id`,
   * read through: the store writes one link page instead of copying them.
   */
  eventLink?: { run_id: string; first_seq: number; last_seq: number };
  /**
   * What the committer owes the run besides the commit itself (step messages, step invocations
   * and duration: lib/engine/usage-meter.ts), added to the record's `metered` in this commit with
   * the store's own charge (its reads of the run since its last commit, this commit's S3 puts
   * and write units: lib/store/metering.ts).
   */
  charge?: MeterCharge;
}

// ---------------------------------------------------------------- the run store's refusals
//
// Thrown by every RunStore adapter (DynamoDB, memory); the engine and the HTTP layer react to
// these, never to an adapter's own errors. docs/architecture.md, "The commit".

/** Why a commit was refused, each with one reaction (see {@link CommitRejected}). */
export type CommitFailure =
  /** The run record's lease owner or epoch is not the committer's: stop, write nothing more. */
  | 'fenced_out'
  /** The run record changed since it was read: re-read and recompute. */
  | 'stale_version'
  /** Another transaction touched the same items: retried with backoff here; thrown when exhausted. */
  | 'transaction_conflict'
  /** The subject already has a live run (create only). */
  | 'subject_taken'
  /** The create key was already used (create only). */
  | 'create_key_taken'
  /** Another create of the same principal took the quota slot or window count first (create only): re-read. */
  | 'quota_moved'
  /** The control id already has an ack (a concurrent duplicate): re-read the ack. */
  | 'control_ack_exists'
  /**
   * A wait on a resume key that is held: by a result that arrived first (read it and deliver it
   * in the same commit as the wait), or by another principal's run that waits on it or used it
   * (the wait is refused: resume_key_in_use).
   */
  | 'resume_key_held'
  /** The early result a commit applied is no longer held (it expired): recompute without it. */
  | 'early_result_gone'
  /** A bug: the request itself is invalid (too many items, a bad expression). Fail loudly. */
  | 'validation';

/**
 * A refused commit. Reactions: fenced_out → the worker stops; stale_version → re-read the run
 * and recompute; transaction_conflict → already retried with backoff, the caller treats it as
 * retryable (throttling that outlasts the retries is StoreUnavailable instead, errors.ts);
 * subject_taken / create_key_taken → return the existing run; control_ack_exists → answer from
 * the stored ack; validation → a bug, surfaced as is.
 * `current` is the run record as DynamoDB returned it (ReturnValuesOnConditionCheckFailure).
 */
export class CommitRejected extends EngineModuleError {
  override name = 'CommitRejected';
  /** Why the commit was refused: the reaction to take (see above). */
  readonly code: CommitFailure;
  /** Whether the same commit may go through later: a conflict that outlasted the adapter's retries. */
  readonly retryable: boolean;
  readonly current: RunRecord | null;
  constructor(
    code: CommitFailure,
    message: string,
    current: RunRecord | null = null,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.code = code;
    this.retryable = code === 'transaction_conflict';
    this.current = current;
  }
}

/** A commit too large for one transaction: it is refused whole, never truncated. */
export class CommitTooLarge extends EngineModuleError {
  override name = 'CommitTooLarge';
  readonly code = 'commit_too_large';
  readonly retryable = false;
}

// ---------------------------------------------------------------- what a run owes between commits

/** Most runs one process keeps charges for; the longest untouched are dropped beyond it. */
export const MAX_METERED_RUNS = 10_000;

/**
 * Charges owed to runs, by run id, until a commit of the run carries them: the engine's meter
 * (usage-meter.ts: step messages, step work) and each store adapter (its reads of the run) keep
 * one. Taken when a commit is planned, given back with `add` when it fails, so two commits of
 * one run never carry the same charge. Charges are MeterCharge units (lib/core/prices.ts).
 * README "Cost per run".
 */
export class PendingCharges {
  readonly #owed = new Map<string, MeterCharge>();

  /** Adds `charge` to what `runId` owes. */
  add(runId: string, charge: MeterCharge): void {
    const next = sumCharges(this.#owed.get(runId) ?? {}, charge);
    this.#owed.delete(runId);
    this.#owed.set(runId, next);
    if (this.#owed.size > MAX_METERED_RUNS) {
      const oldest = this.#owed.keys().next().value;
      if (oldest !== undefined) this.#owed.delete(oldest);
    }
  }

  /** What `runId` owes now (empty when nothing), left owed. */
  owed(runId: string): MeterCharge {
    return { ...this.#owed.get(runId) };
  }

  /**
   * What `runId` owes now (empty when nothing), taken for a commit about to carry it: a second
   * commit of the run meanwhile cannot carry it too. Give it back with `add` when the commit fails.
   */
  take(runId: string): MeterCharge {
    const owed = this.#owed.get(runId) ?? {};
    this.#owed.delete(runId);
    return owed;
  }
}

/**
 * Request counters, for the benchmark (DynamoDB requests and consumed capacity): `reads`
 * (GetItem, BatchGetItem), `queries`, `transactions` (commits executed, each one plan),
 * `writeRequests` (write requests sent for them: a TransactWriteItems, or a commit's plain
 * Put and UpdateItem each, a refused attempt's page delete), retries, units.
 */
/** A committed version of a run's record its caller holds (RunStore.readEvents `held`). */
export interface HeldVersion {
  version: number;
  last_seq: number;
}

export interface StoreMetrics {
  reads: number;
  queries: number;
  transactions: number;
  writeRequests: number;
  transactionRetries: number;
  readCapacity: number;
  writeCapacity: number;
}

/** Metrics of a store that has not been used yet (every count 0), for an adapter to count into. */
export function noStoreMetrics(): StoreMetrics {
  return {
    reads: 0,
    queries: 0,
    transactions: 0,
    writeRequests: 0,
    transactionRetries: 0,
    readCapacity: 0,
    writeCapacity: 0,
  };
}

/** What a create key names: the run it created and the digest of the request that created it. */
export interface CreateKeyItem {
  run_id: string;
  request_digest?: string;
}

/** What a resume key holds (see RunStore.readResumeKey). */
export type { ResumeKeyEntry };

/** A result to hold for a resume key no wait holds yet. */
export interface EarlyResultHold {
  resume_key: string;
  /** The body as delivered (JSON text). */
  body: string;
  delivery_id?: string;
  received_at: number;
  /** ms epoch after which the held result no longer counts. */
  expires_at: number;
}

/** What {@link RunStore.getStatus} reads of a run record. */
export interface RunStatusView {
  status: RunRecord['status'];
  /** The steer_id of a steer that asked to interrupt the operation in flight, or null. */
  interrupt_requested: string | null;
}

/**
 * Number of sweep shards: every run belongs to one shard in `[0, SWEEP_SHARDS)` (lib/store/
 * table.ts `sweepShardOf`), and a sweeper pass asks {@link RunStore.sweepCandidates} of each.
 * docs/architecture.md, "The sweeper".
 */
export const SWEEP_SHARDS = 16;

export interface RunStore {
  getRun(runId: string): Promise<RunRecord | null>;
  /**
   * The run's status and the steer interrupting its operation in flight (`interrupt_requested`,
   * null when none), eventually consistent (may lag a just-committed change by about a second):
   * the cheap read a running operation polls to see a stop or an interrupt. Null for an unknown run.
   * `consistent`: a strongly consistent read instead (one read unit per 4 KB of record, not half),
   * which sees every committed change: the look a non-interruptible operation takes before it is
   * dispatched (stop-watch.ts `stopBeforeDispatch`).
   */
  getStatus(runId: string, opts?: { consistent?: boolean }): Promise<RunStatusView | null>;
  /** Run record and one control ack in one consistent BatchGetItem. */
  getRunAndAck(
    runId: string,
    controlId: string,
  ): Promise<{ record: RunRecord | null; ack: ControlAckItem | null }>;
  /**
   * The domain state of revision `rev` (null for rev 0). `at` is the sort key of the item
   * holding it (the record's or a checkpoint's `state_at`); without it the legacy `D#{rev}`
   * item is read. Throws when the item is missing or holds another revision.
   */
  getState(runId: string, rev: number, at?: string): Promise<unknown>;
  /**
   * Events with seq > after, up to limit, in order, strongly consistent: never a gap (a read
   * that meets one, as a read-committed Query may while a commit lands, stops before it).
   * `held`: a version of the record the caller holds (one it committed or read); the events it
   * covers are committed and never change, so what that version's inline tail holds is served
   * from the tail this store instance remembers of it, without a request, and the answer then
   * stops at `held.last_seq`. Without `held`, or when the tail is not remembered or does not
   * reach back to `after`, the record is read as usual.
   */
  readEvents(runId: string, after: number, limit: number, held?: HeldVersion): Promise<RunEvent[]>;
  getCheckpoint(runId: string, n: number): Promise<CheckpointItem | null>;
  listCheckpoints(runId: string): Promise<CheckpointItem[]>;
  /**
   * The run the subject's item names, or null. It may name a run that has ended: the ending
   * commit leaves the subject's release to the table's stream consumer ({@link releaseSubject}),
   * and until then a create takes the subject over as if it were free. Callers that want the
   * subject's live run read the record and check its status.
   */
  findBySubject(subject: Subject): Promise<string | null>;
  /**
   * Frees the subject of `record`, a run that has ended: deletes the subject item if it still
   * names that run (else nothing: another run holds it now). Idempotent; made by the table's
   * stream consumer for each run that ends (lib/handlers/stream-batch.ts), charged to the run by
   * its ending commit. docs/reference/storage.md, "Subjects".
   */
  releaseSubject(record: RunRecord): Promise<void>;
  /** The run a create key names, and the digest of the request it was first used for. */
  findByCreateKey(principalKey: string, key: string): Promise<CreateKeyItem | null>;
  /**
   * What a principal holds against its admission quotas (strongly consistent): the live-run
   * slots of its live runs and its create count in the window starting at `windowStart` (ms).
   */
  readQuota(principalKey: string, windowStart: number): Promise<QuotaUsage>;
  /** The ids of the child runs linked to `parentRunId` (strongly consistent), in id order. */
  listChildren(parentRunId: string): Promise<string[]>;
  /** The run and operation waiting on a resume key, or null (none yet, an early result, or a used key). */
  findByResumeKey(resumeKey: string): Promise<{ run_id: string; op_id: string } | null>;
  /**
   * What a resume key holds at `now` (strongly consistent): a wait (with the delivery applied to
   * it, once one was), a live early result, or null (an expired early result counts as nothing).
   */
  readResumeKey(resumeKey: string, now: number): Promise<ResumeKeyEntry | null>;
  /**
   * Holds a result that arrived before its wait was recorded. False (nothing written) when the
   * key is not free: a wait or an applied delivery holds it, or another live early result.
   * Throws CommitTooLarge above EARLY_RESULT_LIMIT bytes.
   */
  holdEarlyResult(hold: EarlyResultHold): Promise<boolean>;
  /**
   * Runs whose sweep_due ≤ now in one shard (GSI, eventually consistent: re-read before acting).
   * Throws RangeError for a shard outside `[0, SWEEP_SHARDS)`.
   */
  sweepCandidates(shard: number, now: number, limit: number): Promise<string[]>;
  /** Runs by status (newest first), paged by an opaque cursor. */
  listByStatus(
    status: string,
    limit: number,
    cursor?: string,
  ): Promise<{ run_ids: string[]; cursor?: string }>;
  /**
   * The runs of one principal (its key: lib/core/principal.ts principalKeyOf), every status,
   * newest first, paged by an opaque cursor (the `by_principal` index, lib/store/table.ts): what
   * it reads grows with that principal's runs only. Throws SyntaxError for a cursor it did not issue.
   */
  listByPrincipal(
    principalKey: string,
    limit: number,
    cursor?: string,
  ): Promise<{ run_ids: string[]; cursor?: string }>;
  /**
   * The deployment's listing key (32 bytes): created by the first call over the table (one
   * conditional write), the same bytes for every store over it afterwards (one strongly
   * consistent read). What the engine seals listing cursors with (lib/store/listing-key.ts).
   */
  listingKey(): Promise<Uint8Array>;
  /** Writes one commit in one TransactWriteItems; returns the stored record (new version, state_at). */
  commit(commit: Commit): Promise<RunRecord>;
  readonly metrics: StoreMetrics;
}

// ---------------------------------------------------------------- the step queue

/** One wake-up of a step worker for a run. docs/architecture.md, "The step". */
export interface StepMessage {
  run_id: string;
}

/**
 * Wakes step workers. A message is only a hint: the worker re-reads the run, so duplicates and
 * stale messages are harmless.
 */
export interface StepQueue {
  /** Sends one wake-up, optionally delayed (seconds, 0..900). */
  send(message: StepMessage, delaySeconds?: number): Promise<void>;
  /** Number of SendMessage requests made (for benchmarks). */
  readonly sent: () => number;
}

// ---------------------------------------------------------------- the registries

/** Why a registry publication was refused by the store. */
export type RegistryConflict = 'head_moved' | 'version_exists';

/** The store refused a publication: someone published first (`head_moved`) or the version exists. */
export class RegistryConflictError extends EngineModuleError {
  override name = 'RegistryConflictError';
  readonly reason: RegistryConflict;
  readonly code: RegistryConflict;
  /** A moved head may be published over after a new read; an existing version never. */
  readonly retryable: boolean;
  constructor(reason: RegistryConflict, message: string) {
    super(message);
    this.reason = reason;
    this.code = reason;
    this.retryable = reason === 'head_moved';
  }
}

/**
 * Where the registries (tools, policy, agents) live: immutable entries, immutable snapshots and
 * one head per kind. lib/store holds the DynamoDB and memory adapters; test/contract/
 * registry-store.contract.ts runs against both. Reads are strongly consistent.
 */
export interface RegistryStore {
  /** The current registry version of `kind` (0 when nothing was published). */
  head(kind: RegistryKind): Promise<number>;
  /** The snapshot of registry version `version` (version 0: the empty snapshot), or null. */
  snapshot(kind: RegistryKind, version: number): Promise<RegistrySnapshot | null>;
  /** One published document version, or null. */
  entry(kind: RegistryKind, name: string, version: string): Promise<RegistryEntry | null>;
  /** The published versions of `name`, in the order they were published. */
  versions(kind: RegistryKind, name: string): Promise<string[]>;
  /**
   * Publishes `entry` as registry version `snapshot.version` (= the head read + 1) in one
   * transaction: the entry, the snapshot and the head move together or not at all. Throws
   * RegistryConflictError head_moved (the head is no longer `snapshot.version - 1`: read again)
   * or version_exists (that document version is published: it never changes).
   */
  publish(entry: RegistryEntry, snapshot: RegistrySnapshot): Promise<void>;
}

/** Raised by an adapter for what its service reports as unreachable or throttled (errors.ts). */
export { StoreUnavailable } from './errors.ts';
