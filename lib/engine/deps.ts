/**
 * What every use case of the engine runs over: the ports, the timing settings and the two
 * hooks (log, fault injection), resolved once from the engine's options; plus the two actions
 * every use case shares: committing a change of a run (checkpoints derived in core) and waking
 * a step worker. docs/architecture.md, "The commit", "The step", "Conventions".
 */
import { randomUUID } from 'node:crypto';
import {
  isTerminalStatus,
  type RunEvent,
  type RunRecord,
  type ToolResultEnvelope,
} from '../contracts/index.ts';
import { resolveTimings, WAKE_GRACE_MS } from '../contracts/timings.ts';
import type { AdmissionConfig } from '../core/admission.ts';
import { checkpointsOf } from '../core/checkpoints.ts';
import { DEFAULT_PRICES, type PriceTables } from '../core/prices.ts';
import {
  EARLY_RESULT_TTL_MS,
  hasWork,
  leaseOwnerOf,
  RESULT_EXPIRY_MS,
  type WorkerIncarnation,
} from '../core/run-machine.ts';
import { noteCommitted } from '../telemetry/otel.ts';
import type {
  Clock,
  Commit,
  ModelHost,
  ReducerHost,
  RegistryStore,
  RunStore,
  StepQueue,
  ToolHost,
} from './ports.ts';
import type { RecordCache } from './record-cache.ts';
import { createUsageMeter, type UsageMeter } from './usage-meter.ts';

/** Named points where a fault injector may kill the worker (crash tests, chaos replay). */
export type CrashPoint =
  /** After the step's first commit, the one that wrote its lease (with its first moves). */
  | 'after_lease_acquire'
  | 'after_reducer_answer'
  /** After an operation's start commit, before it is dispatched (or cancelled by a stop seen then). */
  | 'before_dispatch'
  | 'after_dispatch'
  | 'after_commit_before_send'
  | 'during_heartbeat';

export type Log = (entry: Record<string, unknown>) => void;

export interface EngineOptions {
  store: RunStore;
  queue: StepQueue;
  clock: Clock;
  reducers: ReducerHost;
  tools: ToolHost;
  models: ModelHost;
  /** The registries (tools, policy, agents as data); default: none published, nothing publishable. */
  registries?: RegistryStore;
  /** Names this process; each step adds a unique suffix so two steps never share a fence. */
  workerId?: string;
  /**
   * The worker slot this process fills, when at most one live process fills it at a time (a
   * container, a systemd unit, the local stack; never Lambda, whose sandboxes share no slot).
   * Given, the process's leases are owned `<slot>@<start ms>/...` (workerId is ignored), and a
   * restarted process takes over at once, without waiting the lease out, the runs an earlier
   * process of the same slot held (core heldByDeadPredecessor; the epoch fence still protects
   * every write). Default null: no slot, leases are waited out.
   */
  workerSlot?: string | null;
  /** Lease length (ms, default 90 000). */
  leaseTtlMs?: number;
  /** How often a worker renews its lease while an operation runs (ms, default 30 000). */
  heartbeatMs?: number;
  /**
   * How often an interruptible operation in flight reads its run's status to see a stop (ms,
   * default 2 000): a stop reaches it within about this long (stop-watch.ts).
   */
  stopPollMs?: number;
  /**
   * Clock-skew allowance (ms, default a third of the lease: 30 000 with the default lease): the
   * sweeper takes over a lease only once its own clock passes `expires_at` by this much, so a
   * live worker whose clock runs behind is not taken over (core/sweeper.ts defaultClockSkewMs).
   */
  clockSkewMs?: number;
  /** Delay before the sweeper wakes a queued run whose step message was lost (ms, default 60 000). */
  wakeGraceMs?: number;
  /** How many due runs a sweeper pass handles per shard (default 200, sweep.ts SWEEP_CANDIDATES). */
  sweepCandidates?: number;
  /** Admission quotas and risk tier floor of the deployment (default: unlimited, standard). */
  admission?: AdmissionConfig;
  /**
   * Accept with evidence: a resume with accept_reducer_change of a run paused
   * `reducer_changed` is rejected `reducer_check_failed` unless the artifact published now
   * decides every recorded delivery of the run as the old one did (lib/engine/upgrade/reducer-check.ts,
   * run at the resume). Default false; AGENT_RUNS_REQUIRE_REDUCER_CHECK=true in a deployment.
   */
  requireReducerCheck?: boolean;
  /** How long a result request stays open when its tool names no result_expires_in_ms (ms, default 24 h). */
  resultExpiresInMs?: number;
  /** How long a result that arrived before its wait is held by its resume_key (ms, default 15 min). */
  earlyResultTtlMs?: number;
  /**
   * The price tables a run's cost is computed at when it is read (default: lib/core/prices.ts
   * DEFAULT_PRICES, AWS us-east-1 on-demand list prices with their date).
   */
  prices?: PriceTables;
  /**
   * Meters what the engine does per run (step messages, step invocations and their duration)
   * until the run's next commit carries it (default: a meter in this process's memory at
   * `lambdaMemoryMb`).
   */
  meter?: UsageMeter;
  /** The step function's configured memory (MB), for its GB-seconds (default 1024, the stack's). */
  lambdaMemoryMb?: number;
  /** Fault injection: throw from here to simulate a crash at that point. */
  faults?: (point: CrashPoint, runId: string) => void | Promise<void>;
  log?: Log;
}

/** The registries of an engine given none: every registry empty at version 0; publishing is refused. */
const NO_REGISTRIES: RegistryStore = {
  head: async () => 0,
  snapshot: async (kind, version) => (version === 0 ? { kind, version: 0, entries: {} } : null),
  entry: async () => null,
  versions: async () => [],
  publish: async () => {
    throw new Error('this engine has no registry store');
  },
};

/**
 * The engine's options with every default applied: what each use case receives. `incarnation`:
 * this process's slot and start when it fills a slot (EngineOptions.workerSlot), else null.
 */
export type EngineDeps = Required<EngineOptions> & { incarnation: WorkerIncarnation | null };

export function resolveDeps(options: EngineOptions): EngineDeps {
  // The lease, heartbeat, skew and stop-poll defaults are the ones the CLI and console assume.
  const timings = resolveTimings(options);
  const incarnation = incarnationFor(options);
  return {
    store: options.store,
    queue: options.queue,
    clock: options.clock,
    reducers: options.reducers,
    tools: options.tools,
    models: options.models,
    registries: options.registries ?? NO_REGISTRIES,
    // A slotted process's leases are owned `<slot>@<start ms>/...` (core leaseOwnerOf).
    workerId:
      incarnation !== null
        ? leaseOwnerOf(incarnation, '').slice(0, -1)
        : (options.workerId ?? `worker-${randomUUID().slice(0, 8)}`),
    workerSlot: options.workerSlot ?? null,
    incarnation,
    leaseTtlMs: timings.lease_ttl_ms,
    heartbeatMs: timings.heartbeat_ms,
    stopPollMs: timings.stop_poll_ms,
    clockSkewMs: timings.clock_skew_ms,
    wakeGraceMs: options.wakeGraceMs ?? WAKE_GRACE_MS,
    sweepCandidates: options.sweepCandidates ?? 200,
    admission: options.admission ?? {},
    requireReducerCheck: options.requireReducerCheck ?? false,
    resultExpiresInMs: options.resultExpiresInMs ?? RESULT_EXPIRY_MS,
    earlyResultTtlMs: options.earlyResultTtlMs ?? EARLY_RESULT_TTL_MS,
    prices: options.prices ?? DEFAULT_PRICES,
    lambdaMemoryMb: options.lambdaMemoryMb ?? DEFAULT_LAMBDA_MEMORY_MB,
    meter:
      options.meter ?? createUsageMeter({ memoryMb: options.lambdaMemoryMb ?? DEFAULT_LAMBDA_MEMORY_MB }),
    faults: options.faults ?? (() => {}),
    log: options.log ?? (() => {}),
  };
}

/** The slot and start of this process when it fills a slot; throws RangeError for a slot name that could forge another owner. */
function incarnationFor(options: EngineOptions): WorkerIncarnation | null {
  if (options.workerSlot == null) return null;
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(options.workerSlot))
    throw new RangeError(
      `workerSlot must be 1-64 letters, digits, '.', '_', ':' or '-': ${JSON.stringify(options.workerSlot)}`,
    );
  return { slot: options.workerSlot, startedAt: options.clock.now() };
}

/** The step function's memory in the CDK stack (cdk/stack.ts FUNCTIONS.step), in MB. */
export const DEFAULT_LAMBDA_MEMORY_MB = 1024;

/** A commit as a use case states it: the checkpoints its events call for are added by `commitRun`. */
export type CommitParts = Omit<Commit, 'checkpoints'>;

/**
 * Writes one commit of a run, with the checkpoints its `checkpoint_written` events call for
 * (core decides what each captures). Returns the stored record. Throws CommitRejected or
 * CommitTooLarge (ports.ts).
 */
export async function commitRun(deps: EngineDeps, parts: CommitParts): Promise<RunRecord> {
  const checkpoints = checkpointsOf(parts.record, parts.events);
  // What the engine metered for the run since its last commit rides in this one (usage-meter.ts).
  const runId = parts.record.run_id;
  const charge = deps.meter.take(runId);
  try {
    const stored = await deps.store.commit({
      ...parts,
      ...(checkpoints.length > 0 ? { checkpoints } : {}),
      charge,
    });
    noteCommitted(stored, parts.events); // the run span, when this commit ended the run
    return stored;
  } catch (err) {
    deps.meter.giveBack(runId, charge);
    throw err;
  }
}

/** The commit parts of a transition result on the record read at `expectedVersion`. */
export function commitOf(
  result: { record: RunRecord; events: RunEvent[] },
  expectedVersion: number | null,
): CommitParts {
  return { record: result.record, expectedVersion, events: result.events };
}

/**
 * Whether a step message should follow a commit: a queued server-driven run with work (a
 * client-driven run is never stepped), or an ended run whose
 * reducer is still owed events (e.g. `stopped`, delivered so that it may write a checkpoint).
 */
export function needsStep(record: RunRecord): boolean {
  if (record.status === 'queued') return record.reducer !== null && hasWork(record);
  return isTerminalStatus(record.status) && record.reducer !== null && record.inbox.length > 0;
}

/** Sends the step message after a commit. A lost message is covered by the run's wake deadline. */
export async function wake(deps: EngineDeps, runId: string): Promise<void> {
  await deps.faults('after_commit_before_send', runId);
  try {
    await deps.queue.send({ run_id: runId });
    deps.meter.sent(runId);
  } catch (err) {
    deps.log({
      level: 'warn',
      message: 'step message not sent; the sweeper will wake the run',
      run_id: runId,
      error: String(err),
    });
  }
}

// ---------------------------------------------------------------- delegation

/** What running an ended run's owed duties did. */
export interface OwedReport {
  handed_back: number;
  children_stopped: number;
}

/**
 * Delegation's part in the use cases (delegation.ts implements it). docs/contracts/run-lifecycle.md
 * ("child runs with a durable mailbox"; the sweeper "delivers owed child hand-backs, stops children
 * of ended parents").
 */
export interface Delegation {
  /**
   * Executes a delegate operation of `parent`: creates the child run (or finds the one this
   * operation already created: the create key is `delegate:{op_id}` under the parent's
   * principal) and answers `waiting` on `child:{child_run_id}` (`succeeded` for a background child,
   * `wait: false`). The child's tree limits are reserved from the parent's remaining budget; a
   * delegation the parent cannot cover → `failed` permission_denied (`child_budget_exceeded:<which>`).
   * The child inherits the parent's
   * reducer, executor_config, on_exceeded and run context (run_started.data.context) unless the
   * args give them, and max_depth as a ceiling. A child that already ended is answered with its
   * hand-back at once. Bad args → `failed` invalid_input (`delegate_args_invalid`, naming the
   * field); no reducer → invalid_input (`delegate_reducer_missing`); unknown reducer → not_found
   * (`reducer_not_found`); the subject held by another live run → conflict (`subject_taken`).
   * Never throws for bad input.
   */
  startChild(parent: RunRecord, op: NonNullable<RunRecord['operation']>): Promise<ToolResultEnvelope>;
  /**
   * Executes a delegate-message operation of `run` (the mailbox): with `child_run_id`, steers that
   * child of `run` (it sees `text` as `user_input`); without, posts to `run`'s parent (it sees
   * `user_input` `{from_child, text}`). Authorized by the parent/child link alone; the steer's
   * control_id is derived from the operation, so a re-dispatch delivers it once. Answers
   * `succeeded` with `{to, ack}`; bad args → failed invalid_input (`delegate_message_args_invalid`),
   * no such link → permission_denied (`not_linked`), the receiver ended → conflict (`run_terminal`).
   */
  sendMessage(run: RunRecord, op: NonNullable<RunRecord['operation']>): Promise<ToolResultEnvelope>;
  /** Runs the duties an ended run owes (stop its children, hand back to its parent). */
  settleEnded(record: RunRecord): Promise<OwedReport>;
  /**
   * For a parent at rest (waiting, or with live children): hands back every child it waits for
   * or holds live that has already ended (its hand-back was deferred while the parent's delegate
   * operation was in flight).
   */
  collectEnded(parent: RunRecord): Promise<number>;
  /**
   * Stops the children whose waits `parent` closed without their result (withdrawn by a steer,
   * expired): nobody waits for their outcome any more. Best effort: a child left running is
   * stopped when its parent ends.
   */
  stopDetached(parent: RunRecord, childIds: string[]): Promise<number>;
}

/** The deps plus delegation: what the use cases that may end a run or start a child receive. */
export interface EngineContext extends EngineDeps {
  delegation: Delegation;
  /** The records this process committed last, by run id (the next step starts from one). */
  records: RecordCache;
}

/**
 * Runs the duties a run that just ended owes (hand-back, stop children). A failure is logged
 * and left to the sweeper: the duties stay owed on the record until done.
 */
export async function afterEnd(ctx: EngineContext, record: RunRecord): Promise<OwedReport | null> {
  if (!isTerminalStatus(record.status) || !('owed' in record) || record.owed.length === 0) return null;
  try {
    return await ctx.delegation.settleEnded(record);
  } catch (err) {
    ctx.log({
      level: 'warn',
      message: 'owed duties left to the sweeper',
      run_id: record.run_id,
      error: String(err),
    });
    return null;
  }
}
