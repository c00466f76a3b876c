/**
 * The use cases over the ports: createRun, stepRun, applyControl, deliverResult, sweep, and the
 * read side (getRun, readEvents, checkpoints). DESIGN sections 5 to 8; seed agent-runs.
 *
 * Every change to a run goes through `store.commit` (one TransactWriteItems). The step worker
 * fuses its commits: an operation's result event, the reducer's answer to it and the start of
 * the next operation are committed together, so the hot path is one transaction per operation.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  Budgets,
  type ControlAck,
  Control as ControlSchema,
  childOfResumeKey,
  type Effect,
  isTerminalStatus,
  JsonObject,
  type ModelTurnInput,
  OnExceeded,
  type Principal,
  ReducerBinding,
  type RunEvent,
  type RunRecord,
  Subject,
  type ToolResultEnvelope,
} from '../contracts/index.ts';
import { compileContext } from '../core/context-compiler.ts';
import { type Caller, capabilityHash, controlDigest, isAuthorized } from '../core/controls.ts';
import { principalKeyOf } from '../core/principal.ts';
import { effectiveProjection } from '../core/projection.ts';
import { buildReducerRequest, toReducerEvent } from '../core/reducer-request.ts';
import { validateReducerResponse } from '../core/reducer-validation.ts';
import {
  acquireLease,
  applyReducerAnswer,
  consumeSteer,
  createRun as createRunRecord,
  decideControl,
  deliverResult as deliverResultTransition,
  expireRequests,
  type Fence,
  failRun,
  finishOperation,
  gateOperation,
  hasWork,
  isDelegation,
  LEASE_TTL_MS,
  type OperationResult,
  operationGated,
  pauseRun,
  type ReducerAnswer,
  releaseLease,
  renewLease,
  startOperation,
  type TransitionResult,
  takeOver,
} from '../core/run-machine.ts';
import { normalizeToolResult } from '../core/tool-result-validation.ts';
import { SWEEP_SHARDS } from '../store/table.ts';
import { CommitRejected, CommitTooLarge } from './commit-errors.ts';
import { createDelegation, type OwedReport } from './delegation.ts';
import { EngineError, LeaseLost } from './errors.ts';
import type {
  CheckpointItem,
  Clock,
  ModelHost,
  ReducerHost,
  RunStore,
  StepQueue,
  ToolHost,
} from './ports.ts';

// ---------------------------------------------------------------- inputs

/** The body of a create request. Seed: agent-runs, "Subject, principal and admission". */
export const CreateRunInput = z.strictObject({
  subject: Subject,
  reducer: ReducerBinding.pick({ function_path: true, handler: true }).nullable().optional(),
  /** The run's first input (run_started.data.input); null when absent. */
  input: z.unknown().default(null),
  objective: z.string().max(10_000).optional(),
  context: z.unknown().optional(),
  budgets: Budgets.default({}),
  on_exceeded: OnExceeded.default('pause'),
  as_agent: z.string().min(1).optional(),
  on_behalf_of: z.string().min(1).optional(),
  create_key: z.string().min(1).max(256).optional(),
  executor_config: JsonObject.default({}),
});
export type CreateRunInput = z.input<typeof CreateRunInput>;

export interface CreateRunOutput {
  run: RunRecord;
  created: boolean;
  /** The control capability secret: returned once, at creation; stored only as a hash. */
  control_capability?: string;
}

/** Named points where a fault injector may kill the worker (crash tests, chaos replay). */
export type CrashPoint =
  | 'after_lease_acquire'
  | 'after_reducer_answer'
  | 'after_dispatch'
  | 'after_commit_before_send'
  | 'during_heartbeat';

export interface EngineOptions {
  store: RunStore;
  queue: StepQueue;
  clock: Clock;
  reducers: ReducerHost;
  tools: ToolHost;
  models: ModelHost;
  /** Names this process; each step adds a unique suffix so two steps never share a fence. */
  workerId?: string;
  leaseTtlMs?: number;
  heartbeatMs?: number;
  /** Delay before the sweeper wakes a queued run whose step message was lost (ms). */
  wakeGraceMs?: number;
  /** Fault injection: throw from here to simulate a crash at that point. */
  faults?: (point: CrashPoint, runId: string) => void | Promise<void>;
  log?: (entry: Record<string, unknown>) => void;
}

export type StepOutcome =
  | { kind: 'not_found' }
  | { kind: 'nothing_to_do'; status: string }
  | { kind: 'busy' }
  | { kind: 'fenced' }
  | { kind: 'progressed'; status: string; operations: number };

export interface SweepReport {
  examined: number;
  taken_over: number;
  woken: number;
  expired: number;
  finalized: number;
  /** Hand-backs of ended children delivered to their parents. */
  handed_back: number;
  /** Children stopped because their parent ended. */
  children_stopped: number;
}

/** A report of a sweep that did nothing (every count 0). */
export function emptySweepReport(): SweepReport {
  return {
    examined: 0,
    taken_over: 0,
    woken: 0,
    expired: 0,
    finalized: 0,
    handed_back: 0,
    children_stopped: 0,
  };
}

/** A child run as its parent's listing shows it. */
export interface ChildRunSummary {
  run_id: string;
  status: RunRecord['status'];
  depth: number;
  parent_op_id?: string;
  created_at: number;
}

export interface Engine {
  createRun(input: unknown, caller: Caller): Promise<CreateRunOutput>;
  getRun(runId: string, caller: Caller): Promise<RunRecord>;
  readEvents(runId: string, caller: Caller, after: number, limit: number): Promise<RunEvent[]>;
  listCheckpoints(runId: string, caller: Caller): Promise<CheckpointItem[]>;
  getCheckpoint(runId: string, caller: Caller, n: number): Promise<CheckpointItem>;
  /** The child runs `runId` delegated to, oldest first. */
  listChildren(runId: string, caller: Caller): Promise<ChildRunSummary[]>;
  applyControl(runId: string, control: unknown, caller: Caller): Promise<ControlAck>;
  deliverResult(resumeKey: string, result: unknown, caller: Caller): Promise<{ run_id: string; seq: number }>;
  stepRun(runId: string): Promise<StepOutcome>;
  sweep(shards?: number[]): Promise<SweepReport>;
}

/**
 * Whether a step message should follow a commit: a queued run with work, or an ended run whose
 * reducer is still owed events (e.g. `stopped`, delivered so that it may write a checkpoint).
 */
export function needsStep(record: RunRecord): boolean {
  if (record.status === 'queued') return hasWork(record);
  return isTerminalStatus(record.status) && record.reducer !== null && record.inbox.length > 0;
}

/** Attempts of a control or a delivered result that lose the record to concurrent commits. */
const CONTENDED_ATTEMPTS = 16;

/**
 * A short random pause after a commit lost to a concurrent one (full jitter, 5 ms doubling to a
 * 250 ms cap), so that many controls sent to one run at once spread out instead of colliding again.
 */
function contentionPause(attempt: number): Promise<void> {
  const cap = Math.min(250, 5 * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
}

/**
 * The view readers get: the record with its effective projection, without the capability hash
 * (a digest of a secret has no use outside the store).
 */
export function runView(record: RunRecord): RunRecord {
  const { capability_hash: _hash, ...rest } = record;
  return { ...rest, projection: effectiveProjection(record.projection, record.status) } as RunRecord;
}

// ---------------------------------------------------------------- engine

export function createEngine(options: EngineOptions): Engine {
  const { store, queue, clock, reducers, tools, models } = options;
  const baseWorkerId = options.workerId ?? `worker-${randomUUID().slice(0, 8)}`;
  const leaseTtlMs = options.leaseTtlMs ?? LEASE_TTL_MS;
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  const wakeGraceMs = options.wakeGraceMs ?? 60_000;
  const faults = options.faults ?? (() => {});
  const log = options.log ?? (() => {});

  /** Sends a wake-up after a commit that left work. A lost message is covered by wake_at. */
  /** Sends the step message after a commit. A lost message is covered by the run's wake_at. */
  async function wake(runId: string): Promise<void> {
    await faults('after_commit_before_send', runId);
    try {
      await queue.send({ run_id: runId });
    } catch (err) {
      log({
        level: 'warn',
        message: 'step message not sent; the sweeper will wake the run',
        run_id: runId,
        error: String(err),
      });
    }
  }

  const delegation = createDelegation({
    store,
    reducers,
    clock,
    wake,
    needsStep,
    applyControl,
    wakeGraceMs,
    log,
  });

  /**
   * Runs the duties a run that just ended owes (hand-back, stop children). A failure is logged
   * and left to the sweeper: the duties stay owed on the record until done.
   */
  async function afterEnd(record: RunRecord): Promise<OwedReport | null> {
    if (!isTerminalStatus(record.status) || !('owed' in record) || record.owed.length === 0) return null;
    try {
      return await delegation.settleEnded(record);
    } catch (err) {
      log({
        level: 'warn',
        message: 'owed duties left to the sweeper',
        run_id: record.run_id,
        error: String(err),
      });
      return null;
    }
  }

  async function readRun(runId: string, caller: Caller): Promise<RunRecord> {
    const record = await store.getRun(runId);
    if (record === null) throw new EngineError('run_not_found', `run ${runId} not found`, { run_id: runId });
    if (!isAuthorized(record, caller))
      throw new EngineError('unauthorized', 'not allowed to read this run', { run_id: runId });
    return record;
  }

  /** Adds the checkpoint items that `checkpoint_written` events in a commit call for. */
  function checkpointsOf(record: RunRecord, events: RunEvent[]): CheckpointItem[] {
    return events
      .filter((e) => e.kind === 'checkpoint_written')
      .map((e) => ({
        n: Number(e.data.checkpoint_no),
        reason: String(e.data.reason ?? 'checkpoint'),
        core: {
          status: record.status,
          open_requests: record.open_requests,
          queued_steers: record.queued_steers,
          usage: record.usage,
          budgets: record.budgets,
          counters: record.counters,
          operation: record.operation,
        },
        state_rev: Number(e.data.state_rev ?? record.state_rev),
        transcript_cutoff_seq: e.seq,
        at: e.at,
      }));
  }

  // -------------------------------------------------------------- create

  async function createRun(raw: unknown, caller: Caller): Promise<CreateRunOutput> {
    const parsed = CreateRunInput.safeParse(raw);
    if (!parsed.success) {
      throw new EngineError('validation_failed', 'invalid create request', { issues: parsed.error.issues });
    }
    const input = parsed.data;
    const principal = principalFor(caller.principal, input.as_agent, input.on_behalf_of);
    const principalKey = principalKeyOf(principal);
    if (input.create_key !== undefined) {
      const existing = await store.findByCreateKey(principalKey, input.create_key);
      if (existing !== null) return { run: runView(await readRun(existing, caller)), created: false };
    }
    const live = await store.findBySubject(input.subject);
    if (live !== null) {
      const record = await store.getRun(live);
      if (record !== null && !isTerminalStatus(record.status)) {
        return { run: runView(record), created: false };
      }
    }
    let reducer: RunRecord['reducer'] = null;
    if (input.reducer) {
      const resolved = await reducers.resolve(input.reducer);
      if (resolved === null) {
        throw new EngineError('reducer_not_found', `no reducer at ${input.reducer.function_path}`, {
          function_path: input.reducer.function_path,
        });
      }
      reducer = { ...input.reducer, artifact_hash: resolved.artifact_hash };
    }
    const secret = randomBytes(32).toString('base64url');
    const now = clock.now();
    const created = createRunRecord(
      {
        run_id: `run_${randomUUID().replaceAll('-', '')}`,
        principal,
        subject: input.subject,
        reducer,
        input: input.input,
        ...(input.objective !== undefined ? { objective: input.objective } : {}),
        ...(input.context !== undefined ? { context: input.context } : {}),
        budgets: input.budgets,
        on_exceeded: input.on_exceeded,
        executor_config: input.executor_config,
        capability_hash: capabilityHash(secret),
      },
      now,
    );
    const record = { ...created.record, wake_at: now + wakeGraceMs } as RunRecord;
    try {
      const stored = await store.commit({
        record,
        expectedVersion: null,
        events: created.events,
        ...(input.create_key !== undefined ? { createKey: { principalKey, key: input.create_key } } : {}),
      });
      if (reducer !== null) await wake(stored.run_id);
      return { run: runView(stored), created: true, control_capability: secret };
    } catch (err) {
      if (
        err instanceof CommitRejected &&
        (err.reason === 'subject_taken' || err.reason === 'create_key_taken')
      ) {
        const existing =
          err.reason === 'subject_taken'
            ? await store.findBySubject(input.subject)
            : await store.findByCreateKey(principalKey, input.create_key ?? '');
        if (existing !== null) return { run: runView(await readRun(existing, caller)), created: false };
      }
      throw err;
    }
  }

  // -------------------------------------------------------------- controls

  async function applyControl(runId: string, raw: unknown, caller: Caller): Promise<ControlAck> {
    const parsed = ControlSchema.safeParse(raw);
    if (!parsed.success)
      throw new EngineError('validation_failed', 'invalid control', { issues: parsed.error.issues });
    const control = parsed.data;
    const digest = controlDigest(control);
    for (let attempt = 0; attempt < CONTENDED_ATTEMPTS; attempt += 1) {
      const { record, ack } = await store.getRunAndAck(runId, control.control_id);
      if (record === null)
        throw new EngineError('run_not_found', `run ${runId} not found`, { run_id: runId });
      const authorized = isAuthorized(record, caller);
      const decision = decideControl(
        record,
        control,
        digest,
        ack === null ? null : { digest: ack.digest, seq: ack.seq },
        authorized,
        clock.now(),
      );
      if (decision.kind === 'duplicate') return { ack: 'duplicate', original_seq: decision.original_seq };
      const reply: ControlAck =
        decision.kind === 'applied'
          ? { ack: 'applied', seq: decision.seq }
          : { ack: 'rejected', reason: decision.reason, seq: decision.seq };
      if (!authorized)
        log({
          level: 'warn',
          message: 'unauthorized control',
          run_id: runId,
          control_id: control.control_id,
          principal: caller.principal,
        });
      const storeAck = !(decision.kind === 'rejected' && decision.reason === 'control_id_reused');
      try {
        const stored = await store.commit({
          record: decision.record,
          expectedVersion: record.version,
          events: decision.events,
          checkpoints: checkpointsOf(decision.record, decision.events),
          ...(storeAck
            ? { controlAck: { control_id: control.control_id, digest, ack: reply, seq: decision.seq } }
            : {}),
        });
        if (needsStep(stored)) await wake(runId);
        await afterEnd(stored);
        return reply;
      } catch (err) {
        if (
          err instanceof CommitRejected &&
          (err.reason === 'stale_version' || err.reason === 'control_ack_exists')
        ) {
          await contentionPause(attempt);
          continue;
        }
        throw err;
      }
    }
    throw new EngineError(
      'store_unavailable',
      'the run is too busy to take the control now; retry',
      { run_id: runId },
      { retryable: true },
    );
  }

  async function deliverResult(
    resumeKey: string,
    raw: unknown,
    caller: Caller,
  ): Promise<{ run_id: string; seq: number }> {
    if (childOfResumeKey(resumeKey) !== null && caller.principal.kind !== 'system') {
      // A child's end is delivered by the runtime (the hand-back), never by a client.
      throw new EngineError('unauthorized', 'child:{run_id} results are delivered by the child run itself', {
        resume_key: resumeKey,
      });
    }
    const found = await store.findByResumeKey(resumeKey);
    if (found === null)
      throw new EngineError('resume_key_not_found', 'no run waits for that resume_key', {
        resume_key: resumeKey,
      });
    for (let attempt = 0; attempt < CONTENDED_ATTEMPTS; attempt += 1) {
      const record = await readRun(found.run_id, caller);
      const { envelope } = normalizeToolResult(raw, found.op_id);
      const result = deliverResultTransition(record, resumeKey, envelope, clock.now());
      if (!result.ok) {
        throw new EngineError(
          result.code === 'run_terminal' ? 'run_terminal' : 'resume_key_not_found',
          result.message,
          { run_id: record.run_id },
        );
      }
      try {
        const stored = await store.commit({
          record: result.record,
          expectedVersion: record.version,
          events: result.events,
        });
        if (stored.status === 'queued' && hasWork(stored)) await wake(stored.run_id);
        return {
          run_id: stored.run_id,
          seq: result.events[result.events.length - 1]?.seq ?? stored.last_seq,
        };
      } catch (err) {
        if (err instanceof CommitRejected && err.reason === 'stale_version') {
          await contentionPause(attempt);
          continue;
        }
        throw err;
      }
    }
    throw new EngineError('store_unavailable', 'the run is too busy; retry', {}, { retryable: true });
  }

  // -------------------------------------------------------------- the step

  async function stepRun(runId: string): Promise<StepOutcome> {
    const first = await store.getRun(runId);
    if (first === null) return { kind: 'not_found' };
    if (isTerminalStatus(first.status)) {
      if (first.inbox.length > 0 && first.reducer !== null) await deliverAfterEnd(first);
      return { kind: 'nothing_to_do', status: first.status };
    }
    const acquired = acquireLease(
      first,
      `${baseWorkerId}/${randomUUID().slice(0, 8)}`,
      clock.now(),
      leaseTtlMs,
    );
    if (!acquired.ok)
      return acquired.code === 'lease_held'
        ? { kind: 'busy' }
        : { kind: 'nothing_to_do', status: first.status };
    let base: RunRecord;
    try {
      base = await store.commit({ record: acquired.record, expectedVersion: first.version, events: [] });
    } catch (err) {
      if (err instanceof CommitRejected && err.reason === 'stale_version') return { kind: 'busy' };
      throw err;
    }
    const lease = base.lease;
    if (lease === null) throw new Error('acquired a lease that is not there');
    const fence: Fence = { owner: lease.owner, epoch: base.epoch };
    await faults('after_lease_acquire', runId);
    const worker = new StepWorker(base, fence);
    try {
      return await worker.run();
    } catch (err) {
      if (err instanceof LeaseLost) return { kind: 'fenced' };
      throw err;
    }
  }

  /**
   * Delivers events queued for the reducer of a run that has ended (e.g. `stopped`): only
   * checkpoints apply. Returns the last record it committed (or `record`); after a stale commit
   * that record may be behind, which the owed duties' own retries absorb.
   */
  async function deliverAfterEnd(record: RunRecord): Promise<RunRecord> {
    let current = record;
    while (current.inbox.length > 0 && current.reducer !== null) {
      const seq = current.inbox[0] as number;
      const [event] = await store.readEvents(current.run_id, seq - 1, 1);
      const reducerEvent = event !== undefined ? toReducerEvent(event) : null;
      let answer: Omit<ReducerAnswer, 'event_seq'> = {
        state_rev: current.state_rev,
        effects: [],
        projection: undefined,
        diagnostics: [],
      };
      let newState: unknown;
      if (reducerEvent !== null) {
        const state = await store.getState(current.run_id, current.state_rev, current.state_at);
        const request = buildReducerRequest(current, state, reducerEvent);
        const res = await reducers.reduce(current.reducer, request);
        if (res.kind === 'answered') {
          const v = validateReducerResponse(request, res.response);
          if (v.ok && v.response.refused === null) {
            answer = {
              state_rev: v.response.state_rev,
              effects: validEffects(v.response.effects),
              projection: undefined,
              diagnostics: v.response.diagnostics,
            };
            if (v.response.state_rev !== current.state_rev) newState = v.response.state;
          }
        }
      }
      const applied = applyReducerAnswer(current, { event_seq: seq, ...answer }, clock.now());
      if (!applied.ok) return current;
      try {
        current = await store.commit({
          record: applied.record,
          expectedVersion: current.version,
          events: applied.events,
          checkpoints: checkpointsOf(applied.record, applied.events),
          ...(newState !== undefined ? { state: { rev: answer.state_rev, value: newState } } : {}),
        });
      } catch (err) {
        if (err instanceof CommitRejected && err.reason === 'stale_version') return current;
        throw err;
      }
    }
    return current;
  }

  /** After the run ended only checkpoint effects apply (agent-run-contracts, effects_after_terminal). */
  function validEffects(effects: Effect[]): Effect[] {
    return effects.filter((e) => e.kind === 'checkpoint');
  }

  /**
   * One step invocation holding the lease. `base` is the last committed record; `staged` the
   * record with the transitions not yet committed. On a stale version the worker re-reads and
   * recomputes from the fresh record (the reducer is deterministic); an operation's result is
   * kept across that so that it is never lost or run twice by this worker.
   */
  class StepWorker {
    base: RunRecord;
    readonly fence: Fence;
    staged: RunRecord;
    events: RunEvent[] = [];
    stateWrite: { rev: number; value: unknown } | undefined;
    readonly eventCache = new Map<number, RunEvent>();
    readonly stateCache = new Map<number, unknown>();
    /** An operation result not yet committed. */
    pendingResult: OperationResult | undefined;
    /** Children whose waits this worker's commits closed without their result. */
    readonly detached: string[] = [];
    operationsRun = 0;

    constructor(base: RunRecord, fence: Fence) {
      this.base = base;
      this.staged = base;
      this.fence = fence;
    }

    apply(result: TransitionResult): boolean {
      if (!result.ok) return false;
      this.staged = result.record;
      this.events.push(...result.events);
      for (const e of result.events) this.eventCache.set(e.seq, e);
      return true;
    }

    /** Commits the staged transitions; on a stale version re-reads and recomputes. */
    async commit(): Promise<void> {
      for (;;) {
        const before = this.base;
        const events = this.events;
        try {
          const stored = await store.commit({
            record: this.staged,
            expectedVersion: this.base.version,
            fence: this.fence,
            events: this.events,
            checkpoints: checkpointsOf(this.staged, this.events),
            ...(this.stateWrite !== undefined ? { state: this.stateWrite } : {}),
          });
          this.noteDetachedChildren(before, events);
          this.committed(stored);
          return;
        } catch (err) {
          if (
            err instanceof CommitTooLarge ||
            (err instanceof CommitRejected && err.reason === 'validation')
          ) {
            // Storing this outcome will never succeed: retrying would repeat the operation forever.
            await this.refuse(err);
            return;
          }
          if (!(err instanceof CommitRejected)) throw err;
          if (err.reason === 'fenced_out') throw new LeaseLost('the lease was taken: writing nothing more');
          if (err.reason !== 'stale_version') throw err;
          await this.reload();
          if (this.pendingResult === undefined) return; // recompute in the loop from the fresh record
          if (!this.apply(this.recordOperationResult(this.pendingResult)))
            throw new LeaseLost('operation no longer ours');
        }
      }
    }

    /**
     * Ends the run failed `invariant_violation:commit_refused` when what it staged can never be
     * stored (too large, or refused by DynamoDB's validation): the failure is committed from the
     * last stored record, so nothing staged is kept. Throws the original error when even that fails.
     */
    async refuse(cause: Error): Promise<void> {
      log({
        level: 'error',
        message: 'commit refused; failing the run',
        run_id: this.base.run_id,
        error: cause.message,
      });
      const failed = failRun(this.base, 'invariant_violation:commit_refused', clock.now());
      if (!failed.ok) throw cause;
      let stored: RunRecord;
      try {
        stored = await store.commit({
          record: failed.record,
          expectedVersion: this.base.version,
          fence: this.fence,
          events: failed.events,
        });
      } catch {
        throw cause;
      }
      this.committed(stored);
    }

    /** Takes `stored` as the base after a commit: nothing is staged any more. */
    committed(stored: RunRecord): void {
      this.base = stored;
      this.staged = stored;
      this.events = [];
      this.stateWrite = undefined;
      this.pendingResult = undefined;
    }

    /** Notes the child waits a commit closed without delivering their result (request_closed). */
    noteDetachedChildren(before: RunRecord, events: RunEvent[]): void {
      for (const e of events) {
        if (e.kind !== 'request_closed') continue;
        const request = before.open_requests.find((r) => r.request_id === e.data.request_id);
        const child = request?.kind === 'result' ? childOfResumeKey(request.resume_key) : null;
        if (child !== null) this.detached.push(child);
      }
    }

    /** Re-reads the run after a stale commit; drops every uncommitted transition. */
    async reload(): Promise<void> {
      const fresh = await store.getRun(this.base.run_id);
      if (
        fresh === null ||
        fresh.lease === null ||
        fresh.lease.owner !== this.fence.owner ||
        fresh.epoch !== this.fence.epoch
      ) {
        throw new LeaseLost('fenced out');
      }
      // Everything past the last commit we know of was staged by this worker and never stored:
      // a concurrent commit (a control) may have taken those seqs for other events.
      const committed = this.base;
      for (const seq of [...this.eventCache.keys()])
        if (seq > committed.last_seq) this.eventCache.delete(seq);
      for (const rev of [...this.stateCache.keys()])
        if (rev > committed.state_rev) this.stateCache.delete(rev);
      this.base = fresh;
      this.staged = fresh;
      this.events = [];
      this.stateWrite = undefined;
    }

    recordOperationResult(result: OperationResult): TransitionResult {
      return finishOperation(this.staged, this.fence, result, clock.now());
    }

    async run(): Promise<StepOutcome> {
      const deadline = clock.now() + leaseTtlMs / 2;
      for (;;) {
        const r = this.staged;
        if (isTerminalStatus(r.status) || r.status === 'paused') break;
        if (clock.now() >= deadline) break;
        if (r.inbox.length > 0) {
          await this.deliverHead();
          continue;
        }
        const op = r.operation;
        if (op !== null && op.started_at === null) {
          if (operationGated(r)) {
            // Held by its approval: a steer is consumed now (the reducer may withdraw the call).
            if (r.queued_steers.length > 0 && this.apply(consumeSteer(r, clock.now()))) continue;
            break;
          }
          if (await this.gate()) continue;
          if (!this.apply(startOperation(r, clock.now()))) break;
          if (this.staged.status !== 'running') continue; // paused or failed by a budget
          const started = this.staged.operation;
          if (started === null) continue;
          await this.commit();
          if (this.staged.operation?.op_id !== started.op_id || this.staged.operation.started_at === null)
            continue;
          this.pendingResult = await this.dispatch();
          this.operationsRun += 1;
          await faults('after_dispatch', r.run_id);
          if (!this.apply(this.recordOperationResult(this.pendingResult))) {
            // The base moved (a heartbeat renewed the lease): recompute on the latest record.
            await this.reload();
            if (!this.apply(this.recordOperationResult(this.pendingResult)))
              throw new LeaseLost('operation no longer ours');
          }
          continue;
        }
        if (op === null && r.queued_steers.length > 0) {
          // Every queued steer at this boundary, so that one model turn can answer them all.
          while (
            this.staged.queued_steers.length > 0 &&
            this.apply(consumeSteer(this.staged, clock.now()))
          ) {}
          continue;
        }
        break;
      }
      // Release: the run rests waiting or queued (with a wake deadline for the sweeper).
      const needsRelease = this.staged.lease !== null && this.staged.status === 'running';
      if (needsRelease) {
        if (!this.apply(releaseLease(this.staged, this.fence, clock.now(), wakeGraceMs)))
          throw new LeaseLost('lease lost at release');
      }
      if (this.events.length > 0 || needsRelease) await this.commit();
      // A stale commit recomputes from a fresh record that may have new work: loop again.
      if (this.staged.status === 'running' && this.staged.lease?.owner === this.fence.owner)
        return this.run();
      const final = this.staged;
      if (final.status === 'queued' && hasWork(final)) await wake(final.run_id);
      if (final.status === 'waiting') await delegation.collectEnded(final);
      if (this.detached.length > 0) {
        await delegation.stopDetached(final, this.detached.splice(0)).catch((err: unknown) =>
          log({
            level: 'warn',
            message: 'detached children left running',
            run_id: final.run_id,
            error: String(err),
          }),
        );
      }
      await afterEnd(final);
      return { kind: 'progressed', status: final.status, operations: this.operationsRun };
    }

    /** Delivers the inbox head to the reducer and stages its validated answer. */
    async deliverHead(): Promise<void> {
      const r = this.staged;
      const seq = r.inbox[0] as number;
      const binding = r.reducer;
      if (binding === null) {
        this.apply(
          applyReducerAnswer(
            r,
            { event_seq: seq, state_rev: r.state_rev, effects: [], projection: undefined, diagnostics: [] },
            clock.now(),
          ),
        );
        return;
      }
      const event = await this.eventAt(seq);
      const reducerEvent = toReducerEvent(event);
      if (reducerEvent === null) {
        this.apply(failRun(r, 'invariant_violation:event_not_deliverable', clock.now()));
        return;
      }
      const state = await this.stateAt(r.state_rev);
      const request = buildReducerRequest(r, state, reducerEvent);
      const res = await reducers.reduce(binding, request);
      await faults('after_reducer_answer', r.run_id);
      const now = clock.now();
      if (res.kind === 'unavailable') {
        log({ level: 'warn', message: 'reducer unavailable', run_id: r.run_id, reason: res.reason });
        this.apply(pauseRun(r, 'reducer_unavailable', now));
        return;
      }
      if (res.kind === 'changed') {
        this.apply(pauseRun(r, 'reducer_changed', now));
        return;
      }
      if (res.kind === 'threw') {
        this.apply(failRun(r, `reducer_refused:${res.code}`, now));
        return;
      }
      const v = validateReducerResponse(request, res.response);
      if (!v.ok) {
        log({
          level: 'warn',
          message: 'reducer response refused',
          run_id: r.run_id,
          code: v.code,
          detail: v.message,
        });
        this.apply(failRun(r, `reducer_refused:${v.code}`, now));
        return;
      }
      if (v.response.refused !== null) {
        this.apply(failRun(r, `reducer_refused:${v.response.refused.code}`, now));
        return;
      }
      const pinned =
        binding.artifact_hash === undefined
          ? ({ ...r, reducer: { ...binding, artifact_hash: res.artifact_hash } } as RunRecord)
          : r;
      const applied = applyReducerAnswer(
        pinned,
        {
          event_seq: seq,
          state_rev: v.response.state_rev,
          effects: v.response.effects,
          projection: v.response.projection,
          diagnostics: v.response.diagnostics,
        },
        now,
      );
      if (!this.apply(applied)) {
        this.apply(failRun(r, 'invariant_violation:reducer_answer', now));
        return;
      }
      if (v.response.state_rev !== r.state_rev) {
        this.stateWrite = { rev: v.response.state_rev, value: v.response.state };
        this.stateCache.set(v.response.state_rev, v.response.state);
      }
    }

    async eventAt(seq: number): Promise<RunEvent> {
      const cached = this.eventCache.get(seq);
      if (cached !== undefined) return cached;
      const page = await store.readEvents(this.base.run_id, seq - 1, 100);
      for (const e of page) this.eventCache.set(e.seq, e);
      const found = this.eventCache.get(seq);
      if (found === undefined) throw new Error(`event ${seq} of run ${this.base.run_id} is missing`);
      return found;
    }

    async stateAt(rev: number): Promise<unknown> {
      if (this.stateCache.has(rev)) return this.stateCache.get(rev);
      const value = await store.getState(
        this.base.run_id,
        rev,
        rev === this.base.state_rev ? this.base.state_at : undefined,
      );
      this.stateCache.set(rev, value);
      return value;
    }

    /**
     * Runs the policy gate before a pending tool call: deny answers the call without running
     * it; require_approval opens an approval (the run then waits). Returns true when it staged
     * something. Seed: tool-invocation-contract, "Policy and authorization".
     */
    async gate(): Promise<boolean> {
      const r = this.staged;
      const op = r.operation;
      if (op === null || op.effect.kind !== 'call_tool') return false;
      if (isDelegation(op)) return false; // core's own operation: its policy is the delegation budgets
      const decision = tools.gate(this.toolRequest(op));
      if (decision.decision === 'allow') return false;
      if (decision.decision === 'require_approval') {
        if (op.approved_digest === decision.digest) return false;
        return this.apply(
          gateOperation(
            r,
            {
              digest: decision.digest,
              summary: decision.summary,
              tool: op.effect.tool,
              tool_version: decision.tool_version,
            },
            clock.now(),
          ),
        );
      }
      // deny: the call is answered with a failed envelope, and no handler runs.
      if (!this.apply(startOperation(r, clock.now()))) return false;
      if (this.staged.status !== 'running') return true;
      const envelope: ToolResultEnvelope = {
        envelope: 'raisin.tool-result/1',
        operation_id: op.op_id,
        status: 'failed',
        error_class: 'permission_denied',
        reads: [],
        writes: [],
        artifact_refs: [],
        evidence: [],
        diagnostics: [
          { code: decision.code, severity: 'error', message: `the policy denied ${op.effect.tool}` },
        ],
        suggested_next_actions: [],
        retry_policy: { retryable: false },
      };
      return this.apply(this.recordOperationResult({ kind: 'tool_result', envelope }));
    }

    toolRequest(op: NonNullable<RunRecord['operation']>) {
      const effect = op.effect;
      if (effect.kind !== 'call_tool') throw new Error('not a tool call');
      return {
        run_id: this.staged.run_id,
        op_id: op.op_id,
        tool: effect.tool,
        args: effect.args,
        principal: this.staged.principal,
        subject: this.staged.subject,
        attempt: op.attempt,
        mutating: effect.mutating,
        replay_safe: effect.replay_safe,
        ...(effect.timeout_ms !== undefined ? { timeout_ms: effect.timeout_ms } : {}),
        ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
      };
    }

    /** Executes the started operation with an AbortSignal and a lease heartbeat. */
    async dispatch(): Promise<OperationResult> {
      const op = this.staged.operation;
      if (op === null) throw new Error('no operation to dispatch');
      const abort = new AbortController();
      let lost = false;
      let cancelled = false;
      let beating = Promise.resolve();
      const timer = setInterval(() => {
        beating = beating.then(async () => {
          try {
            await faults('during_heartbeat', this.base.run_id);
            const current = await store.getRun(this.base.run_id);
            if (
              current === null ||
              current.lease === null ||
              current.lease.owner !== this.fence.owner ||
              current.epoch !== this.fence.epoch
            ) {
              lost = true;
              abort.abort(new LeaseLost('lease lost'));
              return;
            }
            if (current.status === 'cancelling' && op.interruptible && !cancelled) {
              cancelled = true;
              abort.abort(new Error('run stopped'));
            }
            const renewed = renewLease(current, this.fence, clock.now(), leaseTtlMs);
            if (!renewed.ok) return;
            this.base = await store.commit({
              record: renewed.record,
              expectedVersion: current.version,
              fence: this.fence,
              events: [],
            });
            this.staged = this.base;
          } catch (err) {
            if (err instanceof CommitRejected && err.reason === 'stale_version') return; // next beat retries
            lost = true;
            abort.abort(err);
          }
        });
      }, heartbeatMs);
      try {
        const result = await this.execute(op, abort.signal);
        clearInterval(timer);
        await beating;
        if (lost) throw new LeaseLost('the lease was lost while the operation ran');
        if (cancelled && abort.signal.aborted) {
          const usage = result.kind === 'model_turn_completed' ? result.usage : undefined;
          return { kind: 'operation_cancelled', acknowledged: true, ...(usage ? { usage } : {}) };
        }
        return result;
      } finally {
        clearInterval(timer);
      }
    }

    async execute(op: NonNullable<RunRecord['operation']>, signal: AbortSignal): Promise<OperationResult> {
      const effect = op.effect;
      if (effect.kind === 'call_tool' && isDelegation(op)) {
        return { kind: 'tool_result', envelope: await delegation.startChild(this.staged, op) };
      }
      if (effect.kind === 'call_tool') {
        const envelope = await tools.execute(this.toolRequest(op), signal);
        return { kind: 'tool_result', envelope };
      }
      if (effect.kind === 'request_model_turn') {
        const record = this.staged;
        // The transcript window the reducer asked for (agent-run-contracts, request_model_turn):
        // events after to_seq (e.g. steers consumed since the reducer asked) wait for the next turn.
        const context = (effect.context ?? {}) as { transcript?: { from_seq?: number; to_seq?: number } };
        const fromSeq = context.transcript?.from_seq ?? 1;
        const toSeq = context.transcript?.to_seq;
        const events = await this.eventsFrom(fromSeq);
        // Calls the reducer answered itself (no tool_result event) carry the model-visible `content`.
        const answers = (effect.tool_results ?? []).flatMap((r) =>
          typeof r.content === 'string'
            ? [
                {
                  call_id: r.call_id,
                  ...(typeof r.name === 'string' ? { name: r.name } : {}),
                  content: r.content,
                },
              ]
            : [],
        );
        const compiled = compileContext(events, {
          instructions: effect.instructions,
          from_seq: fromSeq,
          ...(typeof toSeq === 'number' ? { to_seq: toSeq } : {}),
          answers,
        });
        const input: ModelTurnInput = {
          run_id: record.run_id,
          operation_id: op.op_id,
          attempt: op.attempt,
          subject: record.subject,
          executor_config: record.executor_config,
          request: {
            tools_offered: effect.tools_offered,
            ...(effect.instructions !== undefined ? { instructions: effect.instructions } : {}),
            tool_results: effect.tool_results ?? [],
            ...(effect.output_schema !== undefined ? { output_schema: effect.output_schema } : {}),
            ...(effect.context !== undefined ? { context: effect.context } : {}),
          },
        };
        const out = await models.turn(input, compiled, signal);
        if ('error_class' in out) {
          const { error_class, message, retryable, ...detail } = out as typeof out & Record<string, unknown>;
          return {
            kind: 'operation_failed',
            error_class,
            retryable: retryable ?? false,
            outcome_unknown: false,
            message,
            ...(Object.keys(detail).length > 0 ? { detail } : {}),
          };
        }
        return {
          kind: 'model_turn_completed',
          message: out.message,
          tool_calls: out.tool_calls,
          finish_reason: out.finish_reason,
          usage: out.usage,
        };
      }
      return {
        kind: 'operation_failed',
        error_class: 'unsupported',
        retryable: false,
        outcome_unknown: false,
        message: `cannot execute ${effect.kind}`,
      };
    }

    async eventsFrom(fromSeq: number): Promise<RunEvent[]> {
      const last = this.staged.last_seq;
      const missing: number[] = [];
      for (let s = fromSeq; s <= last; s += 1) if (!this.eventCache.has(s)) missing.push(s);
      if (missing.length > 0) {
        const first = missing[0] as number;
        const page = await store.readEvents(this.base.run_id, first - 1, last - first + 1);
        for (const e of page) this.eventCache.set(e.seq, e);
      }
      const out: RunEvent[] = [];
      for (let s = fromSeq; s <= last; s += 1) {
        const e = this.eventCache.get(s);
        if (e !== undefined) out.push(e);
      }
      return out;
    }
  }

  // -------------------------------------------------------------- the sweeper

  /**
   * One sweeper pass over the given shards (default all): takes over expired leases, wakes
   * queued runs nobody drives, closes expired requests, and finishes the bookkeeping of ended
   * runs. Every action is a conditional commit, so two sweepers at once are safe.
   * Seed: agent-runs, "Leases, recovery and the sweeper".
   */
  async function sweep(shards?: number[]): Promise<SweepReport> {
    const report = emptySweepReport();
    const list = shards ?? Array.from({ length: SWEEP_SHARDS }, (_, i) => i);
    for (const shard of list) {
      const ids = await store.sweepCandidates(shard, clock.now(), 200);
      for (const id of ids) {
        report.examined += 1;
        try {
          await sweepRun(id, report);
        } catch (err) {
          if (
            err instanceof CommitRejected &&
            (err.reason === 'stale_version' || err.reason === 'fenced_out')
          )
            continue;
          log({ level: 'error', message: 'sweep of a run failed', run_id: id, error: String(err) });
        }
      }
    }
    return report;
  }

  async function sweepRun(runId: string, report: SweepReport): Promise<void> {
    const record = await store.getRun(runId);
    if (record === null) return;
    const now = clock.now();
    if (record.lease !== null) {
      if (record.lease.expires_at > now) return;
      const taken = takeOver(record, now);
      if (!taken.ok) return;
      const stored = await store.commit({
        record: { ...taken.record, wake_at: now + wakeGraceMs } as RunRecord,
        expectedVersion: record.version,
        events: taken.events,
      });
      report.taken_over += 1;
      log({
        level: 'info',
        message: 'lease taken over',
        run_id: runId,
        previous_owner: record.lease.owner,
        epoch: stored.epoch,
      });
      if (hasWork(stored)) await wake(runId);
      countOwed(report, await afterEnd(stored));
      return;
    }
    if (isTerminalStatus(record.status)) {
      let ended: RunRecord = record;
      if (record.inbox.length > 0) {
        ended = await deliverAfterEnd(record);
        report.finalized += 1;
      }
      countOwed(report, await afterEnd(ended));
      return;
    }
    if (record.open_requests.some((r) => r.expires_at !== null && r.expires_at <= now)) {
      const expired = expireRequests(record, now);
      if (expired.ok) {
        const stored = await store.commit({
          record: expired.record,
          expectedVersion: record.version,
          events: expired.events,
        });
        report.expired += 1;
        if (stored.status === 'queued' && hasWork(stored)) await wake(runId);
      }
      return;
    }
    if (record.status === 'queued' && record.wake_at !== null && record.wake_at <= now) {
      // Push the wake deadline out first (so a second sweeper does not also wake it), then wake.
      await store.commit({
        record: { ...record, wake_at: now + wakeGraceMs } as RunRecord,
        expectedVersion: record.version,
        events: [],
      });
      report.woken += 1;
      await wake(runId);
    }
  }

  function countOwed(report: SweepReport, owed: OwedReport | null): void {
    if (owed === null) return;
    report.handed_back += owed.handed_back;
    report.children_stopped += owed.children_stopped;
  }

  return {
    createRun,
    async listChildren(runId, caller) {
      await readRun(runId, caller);
      const ids = await store.listChildren(runId);
      const records = await Promise.all(ids.map((id) => store.getRun(id)));
      return records
        .filter((r): r is RunRecord => r !== null)
        .map((r) => ({
          run_id: r.run_id,
          status: r.status,
          depth: r.depth,
          ...(r.parent_op_id !== undefined ? { parent_op_id: r.parent_op_id } : {}),
          created_at: r.created_at,
        }))
        .sort((a, b) => a.created_at - b.created_at);
    },
    async getRun(runId, caller) {
      return runView(await readRun(runId, caller));
    },
    async readEvents(runId, caller, after, limit) {
      await readRun(runId, caller);
      return store.readEvents(runId, after, limit);
    },
    async listCheckpoints(runId, caller) {
      await readRun(runId, caller);
      return store.listCheckpoints(runId);
    },
    async getCheckpoint(runId, caller, n) {
      await readRun(runId, caller);
      const cp = await store.getCheckpoint(runId, n);
      if (cp === null)
        throw new EngineError('run_not_found', `checkpoint ${n} of run ${runId} not found`, {
          run_id: runId,
          n,
        });
      return cp;
    },
    applyControl,
    deliverResult,
    stepRun,
    sweep,
  };
}

/**
 * The principal a create acts as: the caller; with as_agent, the agent acting for the caller;
 * with on_behalf_of (system callers only), the user named. Seed: "Subject, principal and admission".
 */
export function principalFor(caller: Principal, asAgent?: string, onBehalfOf?: string): Principal {
  if (onBehalfOf !== undefined && caller.kind !== 'system') {
    throw new EngineError('unauthorized', 'on_behalf_of is for system callers only', {});
  }
  const user = onBehalfOf ?? (caller.kind === 'user' ? caller.id : caller.on_behalf_of);
  if (asAgent !== undefined) {
    return { kind: 'agent', id: asAgent, ...(user !== undefined ? { on_behalf_of: user } : {}) };
  }
  if (onBehalfOf !== undefined) return { kind: 'user', id: onBehalfOf };
  return caller;
}
