/**
 * Creating, failing and pausing a run. docs/contracts/run-lifecycle.md, "Lifecycle", "Subject,
 * principal and admission"; docs/contracts/reducer.md, "Validation" (reducer_unavailable,
 * reducer_changed pauses).
 */
import {
  type Budgets,
  EMPTY_USAGE,
  isTerminalStatus,
  NO_COUNTERS,
  type OnExceeded,
  type OnProviderOutage,
  type Principal,
  type ReducerBinding,
  type RiskTier,
  type RunPins,
  type RunRecord,
  type Subject,
} from '../../contracts/index.ts';
import {
  append,
  clearedEpoch,
  closeAllRequests,
  type Draft,
  discardedSteers,
  ev,
  finish,
  type Ok,
  reject,
  restingStatus,
  type TransitionResult,
  terminalFields,
} from './draft.ts';

export interface CreateRunParams {
  run_id: string;
  principal: Principal;
  subject: Subject;
  reducer: ReducerBinding | null;
  input: unknown;
  objective?: string;
  context?: unknown;
  budgets: Budgets;
  on_exceeded: OnExceeded;
  /** Default pause. */
  on_provider_outage?: OnProviderOutage;
  executor_config?: Record<string, unknown>;
  capability_hash?: string;
  /** The registry versions admission chose (recorded on the run and in run_started). */
  pinned?: RunPins;
  parent_run_id?: string;
  parent_op_id?: string;
  depth?: number;
  /**
   * How long after `now` the sweeper wakes the new run if its first step message is lost (ms;
   * default 0). docs/architecture.md, "The step".
   */
  wake_delay_ms?: number;
  /** The risk tier admission decided (default standard). */
  risk_tier?: RiskTier;
  /** The live-run quota slot the run takes, when live runs are limited. */
  quota_slot?: number;
  /** A child run: what it holds reserved of its parent's tree limits, and what it must hand back. */
  reserved?: RunRecord['reserved'];
  returns?: RunRecord['returns'];
  /** A narrowed child run: what it may call and write (lib/core/scope.ts). */
  scope?: RunRecord['scope'];
}

/**
 * A new run: status queued, event run_started (seq 1). docs/contracts/run-lifecycle.md, "Subject,
 * principal and admission".
 */
export function createRun(p: CreateRunParams, now: number): Ok {
  const base = {
    run_id: p.run_id,
    version: 0,
    created_at: now,
    updated_at: now,
    principal: p.principal,
    subject: p.subject,
    reducer: p.reducer,
    executor_config: p.executor_config ?? {},
    objective: p.objective,
    budgets: p.budgets,
    on_exceeded: p.on_exceeded,
    on_provider_outage: p.on_provider_outage ?? 'pause',
    usage: { ...EMPTY_USAGE },
    counters: { ...NO_COUNTERS },
    epoch: 0,
    last_seq: 0,
    reduced_seq: 0,
    inbox: [],
    turn: 0,
    state_rev: 0,
    projection: null,
    unanswered_calls: [],
    queued_steers: [],
    parent_run_id: p.parent_run_id,
    parent_op_id: p.parent_op_id,
    depth: p.depth ?? 0,
    live_children: [],
    capability_hash: p.capability_hash,
    risk_tier: p.risk_tier ?? 'standard',
    ...(p.quota_slot !== undefined ? { quota_slot: p.quota_slot } : {}),
    ...(p.reserved !== undefined ? { reserved: p.reserved } : {}),
    ...(p.returns !== undefined ? { returns: p.returns } : {}),
    ...(p.scope !== undefined ? { scope: p.scope } : {}),
    pinned: p.pinned,
    wake_at: now + (p.wake_delay_ms ?? 0),
    status: 'queued',
    lease: null,
    operation: null,
    open_requests: [],
  } as unknown as Draft;
  const data: Record<string, unknown> = { input: p.input };
  if (p.objective !== undefined) data.objective = p.objective;
  if (p.context !== undefined) data.context = p.context;
  if (p.pinned !== undefined) data.pinned = p.pinned;
  const { draft, events } = append(base, [ev('run_started', now, data)], now);
  return finish(draft, events);
}

/**
 * Ends the run failed with `code` (e.g. `reducer_refused:<code>`, `budget_exceeded:<which>`).
 * Undelivered events are dropped from the inbox: a failed run's reducer is not called again.
 */
export function failRun(
  record: RunRecord,
  code: string,
  now: number,
  deliveredSeq?: number,
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  const draft = {
    ...record,
    ...(deliveredSeq !== undefined ? { reduced_seq: deliveredSeq } : {}),
  } as Draft;
  const closing = closeAllRequests(draft, now, 'run_ended');
  const newEvents = [...closing.events];
  newEvents.push(...discardedSteers(draft, now));
  newEvents.push(ev('run_failed', now, { code }));
  const ended = {
    ...draft,
    status: 'failed',
    ...terminalFields(record, now, code),
    epoch: clearedEpoch(record),
  } as Draft;
  const appended = append(ended, newEvents, now);
  return finish({ ...appended.draft, inbox: [] } as Draft, appended.events);
}

/**
 * Pauses the run because of its reducer (`reducer_unavailable`, `reducer_changed`) or a budget:
 * lease cleared (epoch + 1), a checkpoint written, the pending operation kept for resume.
 */
export function pauseRun(record: RunRecord, reason: string, now: number): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  if (record.status === 'paused') return reject('invalid_state', 'run is already paused');
  if (record.status === 'cancelling')
    return reject('invalid_state', 'a cancelling run stops, it does not pause');
  if (record.operation !== null && record.operation.started_at !== null) {
    return reject('invalid_state', 'an operation is in flight; pause at the next boundary');
  }
  const pausedFrom = record.status === 'running' ? restingStatus(record) : record.status;
  const n = record.counters.checkpoints + 1;
  const draft = {
    ...record,
    status: 'paused',
    paused_from: pausedFrom === 'queued' || pausedFrom === 'waiting' ? pausedFrom : 'queued',
    pause_reason: reason,
    pause_requested: undefined,
    lease: null,
    epoch: record.lease !== null ? record.epoch + 1 : record.epoch,
    wake_at: null,
    counters: { ...record.counters, checkpoints: n },
  } as Draft;
  const appended = append(
    draft,
    [
      ev('paused', now, { reason }),
      ev('checkpoint_written', now, { checkpoint_no: n, reason: 'paused', state_rev: record.state_rev }),
    ],
    now,
  );
  return finish(appended.draft, appended.events);
}
