/**
 * The step (server-driven runs): stage the lease (written with the first commit, take-lease.ts), then loop on core's `nextMove` (deliver the
 * inbox head to the reducer, consume steers, gate and start the pending operation, execute it
 * with an AbortSignal while a heartbeat renews the lease and watches for a stop), committing
 * fused: an operation's result, the reducer's answer to it and the next operation's start in one
 * transaction. Stops when the run waits, pauses or ends, or at half the lease: then releases the
 * lease (with a wake deadline) and sends the next step message. A fenced-out worker writes
 * nothing more. docs/architecture.md, "The step"; docs/contracts/run-lifecycle.md, "Leases,
 * recovery and the sweeper".
 */
import { isTerminalStatus, type RunEvent, type RunRecord } from '../contracts/index.ts';
import { nextMove, operationMustEnd } from '../core/guards.ts';
import { applyReducerOutcome } from '../core/reducer-outcome.ts';
import {
  beginCompaction,
  consumeSteer,
  type Fence,
  failRun,
  finishOperation,
  gateOperation,
  hasWork,
  isDelegateMessage,
  isDelegation,
  leaseNamedBy,
  type OperationResult,
  releaseLease,
  renewLease,
  startOperation,
  type TransitionResult,
} from '../core/run-machine.ts';
import { noteStepLeased, traceStep } from '../telemetry/otel.ts';
import { compactionCheck, type OperationReads } from './compaction.ts';
import { afterEnd, commitRun, type EngineContext, wake } from './deps.ts';
import { deniedEnvelope, executeOperation, toolRequestOf } from './dispatch.ts';
import { detachedChildren, keyInUseEnvelope, resumeKeyClaims } from './early-results.ts';
import { LeaseLost } from './errors.ts';
import { CommitRejected, CommitTooLarge } from './ports.ts';
import { providerCallHooks } from './provider-calls.ts';
import { askReducer } from './reducer-delivery.ts';
import { StepReads } from './step-reads.ts';
import { stopBeforeDispatch, watchForStop } from './stop-watch.ts';
import { LeaseRace, stageLease } from './take-lease.ts';

export type StepOutcome =
  | { kind: 'not_found' }
  | { kind: 'nothing_to_do'; status: string }
  | { kind: 'busy' }
  | { kind: 'fenced' }
  /**
   * The step advanced the run. `rebases`: commits that lost the version race to a concurrent
   * commit (a control) and were replayed on it instead of redoing the work.
   */
  | { kind: 'progressed'; status: string; operations: number; rebases: number };

/**
 * One step message's work on a run. Returns what happened; never throws for a run that is busy
 * (another worker holds its lease) or fenced (the lease was lost mid-step). Throws store errors
 * (the message is then retried). docs/contracts/run-lifecycle.md, "Server-driven and client-driven
 * runs".
 */
export async function stepRun(ctx: EngineContext, runId: string): Promise<StepOutcome> {
  // One invocation's work on the run, its duration charged in the run's commits (usage-meter.ts).
  ctx.meter.beginStep(runId);
  try {
    return await traceStep(runId, () => stepRunMetered(ctx, runId));
  } finally {
    ctx.meter.endStep(runId);
  }
}

async function stepRunMetered(ctx: EngineContext, runId: string): Promise<StepOutcome> {
  let known: RunRecord | undefined;
  // A first commit refused stale_version wrote nothing: start again from the record it carried.
  for (let round = 1; ; round += 1) {
    const taken = await stageLease(ctx, runId, known);
    if ('kind' in taken) return taken;
    const lease = taken.acquired.lease;
    if (lease === null) throw new Error('staged a lease that is not there');
    noteStepLeased(taken.acquired);
    const worker = new StepWorker(ctx, taken.read, { owner: lease.owner, epoch: taken.acquired.epoch });
    worker.stageLease(taken.acquired);
    try {
      return await worker.run();
    } catch (err) {
      if (err instanceof LeaseRace && round < MAX_LEASE_RACES) {
        ctx.records.forget(runId);
        known = err.current ?? undefined;
        continue;
      }
      if (err instanceof LeaseRace) return { kind: 'busy' };
      if (err instanceof LeaseLost) {
        ctx.records.forget(runId);
        return { kind: 'fenced' };
      }
      throw err;
    }
  }
}

/** How many times a step starts again after its first commit lost a race, before it says busy. */
const MAX_LEASE_RACES = 3;

/** One staged transition of the worker, replayable on another record of the same run. */
type Move = (record: RunRecord) => TransitionResult;

/**
 * One step invocation holding the lease. `base` is the last committed record; `staged` the
 * record with the transitions not yet committed. On a stale version the worker re-reads and
 * recomputes from the fresh record (the reducer is deterministic); an operation's result is
 * kept across that so that it is never lost or run twice by this worker.
 */
class StepWorker {
  readonly ctx: EngineContext;
  base: RunRecord;
  readonly fence: Fence;
  staged: RunRecord;
  events: RunEvent[] = [];
  stateWrite: { rev: number; value: unknown } | undefined;
  readonly cache: StepReads;
  /** The moves staged since the last commit, in order (for a rebase). */
  moves: Move[] = [];
  /** How many of this step's commits were rebased onto a concurrent commit. */
  rebases = 0;
  /** An operation result not yet committed. */
  pendingResult: OperationResult | undefined;
  /** Children whose waits this worker's commits closed without their result. */
  readonly detached: string[] = [];
  operationsRun = 0;
  /** Rounds of early results staged into one commit (bounded). */
  earlyRounds = 0;
  /** Whether a commit of this step wrote its lease. Until then it is only staged (stageLease): the
   * first commit is conditioned on the version read, and a stale version is a LeaseRace (start the
   * step again), never a rebase. */
  leaseWritten = true;

  constructor(ctx: EngineContext, base: RunRecord, fence: Fence) {
    this.ctx = ctx;
    this.base = base;
    this.staged = base;
    this.fence = fence;
    this.cache = new StepReads(ctx);
  }

  /** Stages the lease `acquired` (a record under this worker's new lease): the first commit writes it. */
  stageLease(acquired: RunRecord): void {
    this.staged = acquired;
    this.leaseWritten = false;
  }

  apply(result: TransitionResult): boolean {
    if (!result.ok) return false;
    this.staged = result.record;
    this.events.push(...result.events);
    for (const e of result.events) this.cache.events.set(e.seq, e);
    return true;
  }

  /**
   * Applies `move` to the staged record and remembers it, so that a commit that loses the
   * version race to a control can be rebased: the same moves replayed on the fresh record.
   */
  stage(move: Move): boolean {
    if (!this.apply(move(this.staged))) return false;
    this.moves.push(move);
    return true;
  }

  /** Stages the pending operation result (finishOperation) as a move. */
  stageResult(): boolean {
    const result = this.pendingResult;
    if (result === undefined) return false;
    const at = this.ctx.clock.now();
    return this.stage((r) => finishOperation(r, this.fence, result, at));
  }

  /**
   * Replays the staged moves on `current` (a record a concurrent commit produced, still under
   * this worker's lease): no reducer call, no tool call, no read. False when a move no longer
   * applies (the caller then reloads and recomputes). A start refused `steers_queued` (a steer
   * reached the run meanwhile) ends the replay there: the moves before it are kept, and the
   * loop consumes the steer before the operation starts.
   */
  rebase(current: RunRecord): boolean {
    let record = current;
    const events: RunEvent[] = [];
    let kept = this.moves.length;
    for (const [i, move] of this.moves.entries()) {
      const result = move(record);
      if (!result.ok && result.code === 'steers_queued') {
        kept = i;
        break;
      }
      if (!result.ok) return false;
      record = result.record;
      events.push(...result.events);
    }
    this.moves = this.moves.slice(0, kept);
    this.cache.forgetPast(this.base, false);
    for (const e of events) this.cache.events.set(e.seq, e);
    this.base = current;
    this.staged = record;
    this.events = events;
    return true;
  }

  /** The step: advance, release (again while a stale release left work), then the duties after. */
  async run(): Promise<StepOutcome> {
    do await this.advance();
    while (await this.releaseLease());
    return this.afterRelease();
  }

  /** Moves on the staged record (core nextMove) until it rests, ends, or half the lease is used. */
  async advance(): Promise<void> {
    const { clock } = this.ctx;
    const deadline = clock.now() + this.ctx.leaseTtlMs / 2;
    loop: for (;;) {
      const r = this.staged;
      const now = clock.now();
      if (now >= deadline) break;
      const { move } = nextMove(r, now, leaseNamedBy(r, this.fence));
      switch (move) {
        case 'end':
        case 'rest':
          break loop;
        case 'deliver_event':
          await this.deliverHead();
          // A checkpoint references the state and core as committed with it: commit it now, before
          // a next answer replaces the staged state revision.
          if (this.events.some((e) => e.kind === 'checkpoint_written')) await this.commit();
          continue;
        case 'consume_steers':
          // Every queued steer at this boundary, so that one model turn can answer them all.
          while (this.staged.queued_steers.length > 0 && this.stage((r) => consumeSteer(r, clock.now()))) {}
          continue;
        case 'start_operation':
          if (!(await this.startAndDispatch())) break loop;
          continue;
      }
    }
  }

  /** Gates, starts, commits, and executes the pending operation. False when nothing could start. */
  async startAndDispatch(): Promise<boolean> {
    const { clock } = this.ctx;
    if (await this.gate()) return true;
    // The runtime's own compaction (a pure move on the pending model turn: it rebases like the rest).
    if (await compactionCheck(this.ctx, this.staged, this.reads())) this.stage(beginCompaction);
    const startedAt = clock.now();
    if (!this.stage((r) => startOperation(r, startedAt))) return false;
    if (this.staged.status !== 'running') return true; // paused or failed by a budget
    const started = this.staged.operation;
    if (started === null) return true;
    await this.commit();
    if (this.staged.operation?.op_id !== started.op_id || this.staged.operation.started_at === null)
      return true;
    // A stop committed after the start commit still keeps it from running (stop-watch.ts).
    await this.ctx.faults('before_dispatch', this.base.run_id);
    const stopped = await stopBeforeDispatch(this.ctx, this.base.run_id, started);
    this.pendingResult = stopped ?? (await this.dispatch());
    this.operationsRun += 1;
    await this.ctx.faults('after_dispatch', this.base.run_id);
    if (!this.stageResult()) {
      // The base moved (a heartbeat renewed the lease): recompute on the latest record.
      await this.reload();
      if (!this.stageResult()) throw new LeaseLost('operation no longer ours');
    }
    return true;
  }

  /**
   * Release: the run rests waiting or queued (with a wake deadline for the sweeper), committed
   * with what is still staged. True when the run is still running under this lease afterwards
   * (the commit was stale and recomputed from a fresh record): the step must advance again.
   */
  async releaseLease(): Promise<boolean> {
    const needsRelease = this.staged.lease !== null && this.staged.status === 'running';
    if (needsRelease) {
      const at = this.ctx.clock.now();
      if (!this.stage((r) => releaseLease(r, this.fence, at, this.ctx.wakeGraceMs)))
        throw new LeaseLost('lease lost at release');
    }
    if (this.events.length > 0 || needsRelease) await this.commit();
    return this.staged.status === 'running' && this.staged.lease?.owner === this.fence.owner;
  }

  /** After the release: wake a queued run with work, collect ended children, stop detached ones, owed duties. */
  async afterRelease(): Promise<StepOutcome> {
    const final = this.staged;
    if (final.status === 'queued' && hasWork(final)) await wake(this.ctx, final.run_id);
    if (final.status === 'waiting' || (!isTerminalStatus(final.status) && final.live_children.length > 0))
      await this.ctx.delegation.collectEnded(final);
    if (this.detached.length > 0) {
      await this.ctx.delegation.stopDetached(final, this.detached.splice(0)).catch((err: unknown) =>
        this.ctx.log({
          level: 'warn',
          message: 'detached children left running',
          run_id: final.run_id,
          error: String(err),
        }),
      );
    }
    await afterEnd(this.ctx, final);
    return {
      kind: 'progressed',
      status: final.status,
      operations: this.operationsRun,
      rebases: this.rebases,
    };
  }

  /** Commits the staged transitions; on a stale version re-reads and recomputes. */
  async commit(): Promise<void> {
    for (;;) {
      const before = this.base;
      const events = this.events;
      try {
        const stored = await commitRun(this.ctx, {
          record: this.staged,
          expectedVersion: this.base.version,
          ...this.fenced(),
          events: this.events,
          ...(this.stateWrite !== undefined ? { state: this.stateWrite } : {}),
        });
        this.detached.push(...detachedChildren(before, events));
        this.committed(stored);
        if (!this.leaseWritten) {
          this.leaseWritten = true;
          await this.ctx.faults('after_lease_acquire', stored.run_id);
        }
        return;
      } catch (err) {
        if (err instanceof CommitTooLarge || (err instanceof CommitRejected && err.code === 'validation')) {
          // Storing this outcome will never succeed: retrying would repeat the operation forever.
          await this.refuse(err);
          return;
        }
        if (!(err instanceof CommitRejected)) throw err;
        if (err.code === 'fenced_out') throw new LeaseLost('the lease was taken: writing nothing more');
        if (err.code === 'resume_key_held' && (await this.stageEarlyResults())) continue;
        if (err.code !== 'stale_version' && err.code !== 'early_result_gone') throw err;
        if (!this.leaseWritten)
          throw new LeaseRace(err.code === 'stale_version' ? (err.current ?? null) : null);
        // A concurrent commit (a control) took the version: replay the staged moves on it and
        // commit again, without redoing any work.
        // (An early result that is gone is not replayed: recompute without it.)
        const current =
          err.code === 'stale_version'
            ? (err.current ?? (await this.ctx.store.getRun(this.base.run_id)))
            : null;
        if (current !== null && leaseNamedBy(current, this.fence) && this.rebase(current)) {
          this.rebases += 1;
          continue;
        }
        await this.reload();
        if (this.pendingResult === undefined) return; // recompute in the loop from the fresh record
        if (!this.stageResult()) throw new LeaseLost('operation no longer ours');
      }
    }
  }

  /**
   * A wait this commit records met a held key: a result that arrived first is staged on top (one
   * commit records the wait and applies it); a key another principal holds turns the tool's
   * waiting result into a failed one (resume_key_in_use). False after a few rounds, or for a
   * reducer's own wait on such a key: the refusal is then thrown.
   */
  async stageEarlyResults(): Promise<boolean> {
    this.earlyRounds += 1;
    if (this.earlyRounds > 3) return false;
    const { moves, inUse } = await resumeKeyClaims(this.ctx, this.events);
    if (inUse === undefined) {
      for (const move of moves) this.stage(move);
      return true;
    }
    const op = this.base.operation;
    if (this.pendingResult?.kind !== 'tool_result' || op === null) return false;
    this.pendingResult = { kind: 'tool_result', envelope: keyInUseEnvelope(op.op_id, inUse) };
    await this.reload();
    return this.stageResult();
  }

  /**
   * Ends the run failed `invariant_violation:commit_refused` when what it staged can never be
   * stored (too large, or refused by DynamoDB's validation): the failure is committed from the
   * last stored record, so nothing staged is kept. Throws the original error when even that fails.
   */
  async refuse(cause: Error): Promise<void> {
    this.ctx.log({
      level: 'error',
      message: 'commit refused; failing the run',
      run_id: this.base.run_id,
      error: cause.message,
    });
    const failed = failRun(this.base, 'invariant_violation:commit_refused', this.ctx.clock.now());
    if (!failed.ok) throw cause;
    let stored: RunRecord;
    try {
      stored = await commitRun(this.ctx, {
        record: failed.record,
        expectedVersion: this.base.version,
        ...this.fenced(),
        events: failed.events,
      });
    } catch {
      throw cause;
    }
    this.committed(stored);
  }

  /** The commit's fence: none until the lease is written (the version read guards that commit). */
  fenced(): { fence?: Fence } {
    return this.leaseWritten ? { fence: this.fence } : {};
  }

  /** Takes `stored` as the base after a commit: nothing is staged any more. */
  committed(stored: RunRecord): void {
    this.ctx.records.remember(stored);
    this.earlyRounds = 0;
    this.base = stored;
    this.staged = stored;
    this.moves = [];
    this.events = [];
    this.stateWrite = undefined;
    this.pendingResult = undefined;
  }

  /** Re-reads the run after a stale commit; drops every uncommitted transition. */
  async reload(): Promise<void> {
    const fresh = await this.ctx.store.getRun(this.base.run_id);
    if (fresh === null || !leaseNamedBy(fresh, this.fence)) throw new LeaseLost('fenced out');
    // Everything past the last commit we know of was staged by this worker and never stored:
    // a concurrent commit (a control) may have taken those seqs for other events.
    this.cache.forgetPast(this.base);
    this.base = fresh;
    this.staged = fresh;
    this.moves = [];
    this.events = [];
    this.stateWrite = undefined;
  }

  /** Delivers the inbox head to the reducer and stages its validated answer. */
  async deliverHead(): Promise<void> {
    const outcome = await askReducer(
      this.ctx,
      this.staged,
      {
        event: (seq) => this.cache.eventAt(this.base, seq),
        state: (rev) => this.cache.stateAt(this.base, rev),
      },
      { faultPoint: true },
    );
    const at = this.ctx.clock.now();
    const first = applyReducerOutcome(this.staged, outcome, at);
    const staged = this.staged;
    if (
      !this.stage((r) => (r === staged ? first.transition : applyReducerOutcome(r, outcome, at).transition))
    )
      return;
    if (first.state !== undefined) {
      this.stateWrite = first.state;
      this.cache.states.set(first.state.rev, first.state.value);
    }
  }

  /** What an operation reads: the events and states this step caches. */
  reads(): OperationReads {
    return this.cache.operationReads(() => this);
  }

  /**
   * Runs the policy gate before a pending tool call: deny answers the call without running
   * it; require_approval opens an approval (the run then waits). Returns true when it staged
   * something. docs/contracts/tool-result.md, "Policy and authorization".
   */
  async gate(): Promise<boolean> {
    const { clock } = this.ctx;
    const r = this.staged;
    const op = r.operation;
    if (op === null || op.effect.kind !== 'call_tool') return false;
    // Core's own operations: their policy is the delegation budgets and the parent/child link.
    if (isDelegation(op) || isDelegateMessage(op)) return false;
    const decision = await this.ctx.tools.gate(toolRequestOf(r, op));
    if (decision.decision === 'allow') return false;
    if (decision.decision === 'require_approval') {
      if (op.approved_digest === decision.digest) return false;
      const subject = {
        digest: decision.digest,
        summary: decision.summary,
        tool: op.effect.tool,
        tool_version: decision.tool_version,
      };
      const at = clock.now();
      return this.stage((s) => gateOperation(s, subject, at));
    }
    // deny: the call is answered with a failed envelope, and no handler runs.
    const at = clock.now();
    if (!this.stage((s) => startOperation(s, at))) return false;
    if (this.staged.status !== 'running') return true;
    const result: OperationResult = {
      kind: 'tool_result',
      envelope: deniedEnvelope(op, decision.code, decision.safer),
    };
    return this.stage((s) => finishOperation(s, this.fence, result, at));
  }

  /** Executes the started operation with an AbortSignal and a lease heartbeat. */
  async dispatch(): Promise<OperationResult> {
    const op = this.staged.operation;
    if (op === null) throw new Error('no operation to dispatch');
    const abort = new AbortController();
    let lost = false;
    let cancelled = false;
    // A stop or a steer that interrupts: the operation is cancelled (acknowledged) either way.
    const cancel = (why: 'stop' | 'interrupt') => {
      cancelled = true;
      abort.abort(new Error(why === 'stop' ? 'run stopped' : 'interrupted by a steer'));
    };
    let beating = Promise.resolve();
    const timer = setInterval(() => {
      beating = beating.then(async () => {
        const outcome = await this.heartbeat(op.interruptible && !cancelled);
        if (outcome === 'lost') {
          lost = true;
          abort.abort(new LeaseLost('lease lost'));
        } else if (outcome === 'cancelled' || outcome === 'interrupted') {
          cancel(outcome === 'cancelled' ? 'stop' : 'interrupt');
        }
      });
    }, this.ctx.heartbeatMs);
    const unwatch = op.interruptible ? watchForStop(this.ctx, this.base.run_id, cancel) : async () => {};
    try {
      const hooks = providerCallHooks(this); // each provider request counted before it is made
      const result = await executeOperation(this.ctx, this.staged, op, abort.signal, this.reads(), hooks);
      clearInterval(timer);
      await unwatch();
      await beating;
      if (lost) throw new LeaseLost('the lease was lost while the operation ran');
      if (cancelled && abort.signal.aborted) {
        const usage = result.kind === 'model_turn_completed' ? result.usage : undefined;
        return { kind: 'operation_cancelled', acknowledged: true, ...(usage ? { usage } : {}) };
      }
      return result;
    } finally {
      clearInterval(timer);
      void unwatch();
    }
  }

  /**
   * One heartbeat while an operation runs: re-read the run; the lease gone → `lost`; a stop seen
   * (cancelling) while `interruptible` → `cancelled`; a steer that interrupts (interrupt_requested)
   * while `interruptible` → `interrupted`; else renew the lease. A renewal that loses to a
   * concurrent commit is retried at the next beat. docs/contracts/run-lifecycle.md ("the worker
   * re-reads the run record on every lease renewal and cancels its operation when it sees
   * cancelling").
   */
  async heartbeat(
    interruptible: boolean,
  ): Promise<'renewed' | 'lost' | 'cancelled' | 'interrupted' | 'skipped'> {
    try {
      await this.ctx.faults('during_heartbeat', this.base.run_id);
      const current = await this.ctx.store.getRun(this.base.run_id);
      if (current === null || !leaseNamedBy(current, this.fence)) return 'lost';
      const end = interruptible ? operationMustEnd(current) : null;
      const renewed = renewLease(current, this.fence, this.ctx.clock.now(), this.ctx.leaseTtlMs);
      if (renewed.ok) {
        this.base = await commitRun(this.ctx, {
          record: renewed.record,
          expectedVersion: current.version,
          fence: this.fence,
          events: [],
        });
        this.ctx.records.remember(this.base);
        this.staged = this.base;
      }
      if (end === 'stop') return 'cancelled';
      if (end === 'interrupt') return 'interrupted';
      return renewed.ok ? 'renewed' : 'skipped';
    } catch (err) {
      if (err instanceof CommitRejected && err.code === 'stale_version') return 'skipped'; // next beat retries
      if (err instanceof CommitRejected && err.code === 'fenced_out') return 'lost';
      if (err instanceof LeaseLost) return 'lost';
      // A read or write that failed (the store unreachable, throttled): not a lost lease. The
      // next beat retries; the lease's own expiry is what ends a worker that cannot reach it.
      this.ctx.log({
        level: 'warn',
        message: 'heartbeat failed; retrying at the next beat',
        run_id: this.base.run_id,
        error: String(err),
      });
      return 'skipped';
    }
  }
}
