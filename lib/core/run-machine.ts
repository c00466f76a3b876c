/**
 * The run state machine: pure transitions over the closed run record. Each transition returns
 * the next record plus the events it appends (seq assigned from `record.last_seq`), or a typed
 * rejection with the seed's code. No I/O and no clock: `now` (ms since the epoch) is a parameter.
 * The store bumps `version` once per commit; transitions never touch it.
 * Seed: agent-runs, "Lifecycle", "Operations", "Controls", "Budgets", "Leases, recovery and the sweeper".
 */
import {
  type Budgets,
  type Control,
  childOfResumeKey,
  childResumeKey,
  DELEGATE_TOOL,
  type Effect,
  EMPTY_USAGE,
  isTerminalStatus,
  type Lease,
  type NewRunEvent,
  type OnExceeded,
  type OpenRequest,
  type Operation,
  type OwedDuty,
  type Principal,
  type Projection,
  REDUCER_VISIBLE_EVENT_KINDS,
  type ReducerBinding,
  type RunEvent,
  type RunEventKind,
  RunRecord,
  type RunStatus,
  type Subject,
  type ToolCall,
  type ToolResultEnvelope,
  type Usage,
} from '../contracts/index.ts';
import { checkBudgets } from './budgets.ts';

/** Default lease length: 90 s. Seed: "Leases, recovery and the sweeper". */
export const LEASE_TTL_MS = 90_000;

export type Ok = { ok: true; record: RunRecord; events: RunEvent[] };
export type Rejected = { ok: false; code: string; message: string };
export type TransitionResult = Ok | Rejected;

/** Thrown when a transition would produce a record the closed schema refuses: a bug, never input. */
export class InvariantViolation extends Error {
  override name = 'InvariantViolation';
  readonly code = 'invariant_violation';
  readonly issues: unknown;
  constructor(message: string, issues: unknown) {
    super(message);
    this.issues = issues;
  }
}

/** Persisted kinds delivered to the reducer (steer_consumed arrives as user_input). */
export const REDUCER_VISIBLE_KINDS: ReadonlySet<RunEventKind> = new Set<RunEventKind>(
  REDUCER_VISIBLE_EVENT_KINDS,
);

// ---------------------------------------------------------------- helpers

/** A record under construction: any status with any fields, sealed by the closed schema at the end. */
type Draft = Omit<
  Extract<RunRecord, { status: 'queued' }>,
  'status' | 'lease' | 'operation' | 'open_requests'
> & {
  status: RunStatus;
  lease: Lease | null;
  operation: Operation | null;
  open_requests: OpenRequest[];
  [key: string]: unknown;
};

/** Parses a draft with the closed schema; an illegal combination is an InvariantViolation. */
export function seal(draft: unknown): RunRecord {
  const parsed = RunRecord.safeParse(draft);
  if (!parsed.success) {
    throw new InvariantViolation(
      `illegal run record: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      parsed.error.issues,
    );
  }
  return parsed.data;
}

function reject(code: string, message: string): Rejected {
  return { ok: false, code, message };
}

/** Appends events: assigns seq from last_seq, queues reducer-visible ones in the inbox. */
function append(draft: Draft, newEvents: NewRunEvent[], now: number): { draft: Draft; events: RunEvent[] } {
  let seq = draft.last_seq;
  const inbox = [...draft.inbox];
  const events: RunEvent[] = [];
  for (const e of newEvents) {
    seq += 1;
    events.push({ ...e, seq });
    if (draft.reducer !== null && REDUCER_VISIBLE_KINDS.has(e.kind)) inbox.push(seq);
  }
  return { draft: { ...draft, last_seq: seq, inbox, updated_at: now } as Draft, events };
}

function ev(
  kind: RunEventKind,
  now: number,
  data: Record<string, unknown>,
  extra?: Partial<NewRunEvent>,
): NewRunEvent {
  return { kind, at: now, data, ...extra };
}

function finish(draft: Draft, events: RunEvent[]): Ok {
  return { ok: true, record: seal(draft), events };
}

/** Chains transitions: applies `next` to the record of `first`, concatenating events. */
export function chain(
  first: TransitionResult,
  next: (record: RunRecord) => TransitionResult,
): TransitionResult {
  if (!first.ok) return first;
  const second = next(first.record);
  if (!second.ok) return second;
  return { ok: true, record: second.record, events: [...first.events, ...second.events] };
}

/**
 * The fields every ending sets. A child run owes its parent the hand-back; a run that ever
 * delegated owes the stop of its children still live (found by their links, so that a child
 * created by a worker that lost its lease is stopped too).
 */
function terminalFields(record: RunRecord, now: number, reason: string) {
  const owed: OwedDuty[] = [];
  if (record.parent_run_id !== undefined) owed.push('handback');
  if (record.counters.children > 0) owed.push('stop_children');
  return {
    lease: null,
    operation: null,
    open_requests: [],
    queued_steers: [],
    terminal_reason: reason,
    finished_at: now,
    owed,
    wake_at: null,
    pause_requested: undefined,
  };
}

/** Every transition that clears a lease bumps the epoch (seed: "Leases"). */
function clearedEpoch(record: RunRecord): number {
  return record.lease !== null ? record.epoch + 1 : record.epoch;
}

/** Whether the operation is held by an open approval the policy gate opened for it. */
export function operationGated(record: RunRecord): boolean {
  const op = record.operation;
  if (op === null) return false;
  return record.open_requests.some((r) => r.kind === 'approval' && r.effect_id === op.effect_id);
}

/**
 * Whether the run has work a step worker can do now: an undelivered event, a dispatchable
 * operation, or a steer to consume between operations (also while a pending operation waits
 * for its approval: the steer may make the reducer withdraw it).
 */
export function hasWork(record: RunRecord): boolean {
  if (record.status === 'paused') return false;
  if (record.inbox.length > 0) return true;
  if (isTerminalStatus(record.status)) return false;
  // A pending operation starts only when no request is open (startOperation's rule).
  if (record.operation !== null && record.open_requests.length === 0) return true;
  return record.queued_steers.length > 0;
}

/** The status a run settles in when nobody holds its lease. */
function restingStatus(record: RunRecord): 'queued' | 'waiting' {
  return record.open_requests.length > 0 && !hasWork(record) ? 'waiting' : 'queued';
}

// ---------------------------------------------------------------- create

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
  executor_config?: Record<string, unknown>;
  capability_hash?: string;
  parent_run_id?: string;
  parent_op_id?: string;
  depth?: number;
}

/** A new run: status queued, event run_started (seq 1). Seed: "Subject, principal and admission". */
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
    usage: { ...EMPTY_USAGE },
    counters: {
      next_op: 0,
      next_req: 0,
      next_steer: 0,
      checkpoints: 0,
      consecutive_op_failures: 0,
      children: 0,
    },
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
    wake_at: now,
    status: 'queued',
    lease: null,
    operation: null,
    open_requests: [],
  } as unknown as Draft;
  const data: Record<string, unknown> = { input: p.input };
  if (p.objective !== undefined) data.objective = p.objective;
  if (p.context !== undefined) data.context = p.context;
  const { draft, events } = append(base, [ev('run_started', now, data)], now);
  return finish(draft, events);
}

// ---------------------------------------------------------------- leases

/** The fence a lease holder presents on every commit. */
export interface Fence {
  owner: string;
  epoch: number;
}

export function holdsLease(record: RunRecord, fence: Fence, now: number): boolean {
  return (
    record.lease !== null &&
    record.lease.owner === fence.owner &&
    record.epoch === fence.epoch &&
    record.lease.expires_at > now
  );
}

/**
 * A worker takes the lease of a queued run (epoch + 1, expiry now + ttl) and the run becomes
 * running. Rejected with `nothing_to_do` when the run is not queued or has no work,
 * `lease_held` when someone holds an unexpired lease. Seed: "Leases".
 */
export function acquireLease(
  record: RunRecord,
  owner: string,
  now: number,
  ttlMs = LEASE_TTL_MS,
): TransitionResult {
  if (record.lease !== null && record.lease.expires_at > now)
    return reject('lease_held', 'another worker holds the lease');
  if (record.status !== 'queued') return reject('nothing_to_do', `run is ${record.status}`);
  if (!hasWork(record)) return reject('nothing_to_do', 'run has no work');
  const draft = {
    ...record,
    status: 'running',
    lease: { owner, expires_at: now + ttlMs },
    epoch: record.epoch + 1,
    wake_at: null,
    updated_at: now,
  } as Draft;
  return finish(draft, []);
}

/** Extends the holder's lease. Rejected `lease_lost` when the fence no longer matches. */
export function renewLease(
  record: RunRecord,
  fence: Fence,
  now: number,
  ttlMs = LEASE_TTL_MS,
): TransitionResult {
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  const lease = record.lease;
  if (lease === null) return reject('lease_lost', 'no lease');
  return finish({ ...record, lease: { ...lease, expires_at: now + ttlMs }, updated_at: now } as Draft, []);
}

/**
 * The holder lets go: epoch + 1; the run rests as waiting (open requests and nothing to do) or
 * queued with a wake deadline the sweeper honours if the next step message is lost.
 * A terminal or paused run already has no lease. Seed: "Leases"; DESIGN section 6, step 4.
 */
export function releaseLease(
  record: RunRecord,
  fence: Fence,
  now: number,
  wakeDelayMs = 0,
): TransitionResult {
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  if (record.operation !== null && record.operation.started_at !== null) {
    return reject('invalid_state', 'an operation is in flight: finish it before releasing');
  }
  if (record.status === 'cancelling')
    return reject('invalid_state', 'a cancelling run releases when its operation returns');
  const status = restingStatus(record);
  const draft = {
    ...record,
    status,
    lease: null,
    epoch: record.epoch + 1,
    wake_at: status === 'queued' ? now + wakeDelayMs : nextRequestExpiry(record),
    updated_at: now,
  } as Draft;
  return finish(draft, []);
}

function nextRequestExpiry(record: RunRecord): number | null {
  let next: number | null = null;
  for (const r of record.open_requests) {
    if (r.expires_at !== null && (next === null || r.expires_at < next)) next = r.expires_at;
  }
  return next;
}

/**
 * The sweeper takes over a run whose lease expired (epoch + 1). A started replay-safe operation
 * is kept for dispatch again under the same op_id (attempt + 1); a started non-replay-safe one is
 * abandoned and reaches the reducer as operation_failed with outcome_unknown: true. A cancelling
 * run ends stopped. The run rests queued for a fresh worker. Seed: "Leases, recovery and the sweeper".
 */
export function takeOver(record: RunRecord, now: number): TransitionResult {
  if (record.lease === null) return reject('no_lease', 'run holds no lease');
  if (record.lease.expires_at > now) return reject('lease_held', 'lease has not expired');
  const previous = { owner: record.lease.owner, epoch: record.epoch };
  let draft = { ...record, lease: null, epoch: record.epoch + 1, updated_at: now } as Draft;
  const newEvents: NewRunEvent[] = [
    ev('lease_taken_over', now, { previous_owner: previous.owner, previous_epoch: previous.epoch }),
  ];
  const op = record.operation;
  if (record.status === 'cancelling' && op !== null) {
    if (op.started_at !== null) {
      newEvents.push(
        ev(
          'operation_cancelled',
          now,
          { acknowledged: false },
          { operation_id: op.op_id, effect_id: op.effect_id },
        ),
      );
    }
    newEvents.push(ev('stopped', now, { reason: record.stop_reason }));
    if (record.queued_steers.length > 0) {
      newEvents.push(ev('steers_discarded', now, { count: record.queued_steers.length }));
    }
    const usage = op.started_at !== null ? usageOfEnded(draft.usage, op) : draft.usage;
    const appended = append(
      { ...draft, usage, status: 'stopped', ...terminalFields(record, now, 'stopped') } as Draft,
      newEvents,
      now,
    );
    return finish(appended.draft, appended.events);
  }
  if (op !== null && op.started_at !== null) {
    if (op.replay_safe) {
      draft = { ...draft, operation: { ...op, attempt: op.attempt + 1, started_at: null } } as Draft;
    } else {
      newEvents.push(
        ev(
          'operation_failed',
          now,
          {
            error_class: 'lease_expired',
            retryable: false,
            outcome_unknown: true,
            message: 'the worker running this operation was lost; its outcome is unknown',
            ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
          },
          { operation_id: op.op_id, effect_id: op.effect_id },
        ),
      );
      draft = {
        ...draft,
        operation: null,
        usage: usageOfEnded(draft.usage, op),
        counters: { ...draft.counters, consecutive_op_failures: draft.counters.consecutive_op_failures + 1 },
      } as Draft;
    }
  }
  const appended = append(draft, newEvents, now);
  const settled = { ...appended.draft, status: 'queued', wake_at: now } as Draft;
  const taken = finish(settled, appended.events);
  // A pause asked for during the lost operation applies now, at this boundary.
  if (record.pause_requested !== undefined) {
    return prepend(taken.events, pauseRun(taken.record, record.pause_requested, now));
  }
  return taken;
}

/**
 * Usage after a started operation that ends on takeover (abandoned, or cancelled unacknowledged):
 * it counts as an operation (and a tool or model call) like any finished one; its tokens are
 * unknown. Seed: "Budgets" (usage updated in the same commit as each finished operation).
 */
function usageOfEnded(usage: Usage, op: Operation): Usage {
  const model = op.kind === 'model_turn' ? 1 : 0;
  return {
    ...usage,
    operations: usage.operations + 1,
    turns: usage.turns + model,
    model_calls: usage.model_calls + model,
    tool_calls: usage.tool_calls + (op.kind === 'tool_call' ? 1 : 0),
  };
}

// ---------------------------------------------------------------- reducer answers

export interface ReducerAnswer {
  /** Seq of the event the reducer answered (inbox head). */
  event_seq: number;
  state_rev: number;
  effects: Effect[];
  projection: Projection | null | undefined;
  diagnostics: unknown[];
}

/**
 * Applies a validated reducer answer to the event at the inbox head: advances reduced_seq and
 * state_rev, records the projection, and applies each effect (operation, requests, checkpoint,
 * terminal). An operation effect while another operation is pending fails the run
 * (reducer_refused:multiple_operations). Seed: agent-run-contracts, "Response", effect table.
 */
export function applyReducerAnswer(record: RunRecord, answer: ReducerAnswer, now: number): TransitionResult {
  if (record.inbox[0] !== answer.event_seq) {
    return reject('not_inbox_head', `event ${answer.event_seq} is not the next undelivered event`);
  }
  let draft = {
    ...record,
    inbox: record.inbox.slice(1),
    reduced_seq: answer.event_seq,
    state_rev: answer.state_rev,
    projection: answer.projection === undefined ? record.projection : answer.projection,
    updated_at: now,
  } as Draft;
  const newEvents: NewRunEvent[] = [
    ev('reducer_answered', now, {
      event_seq: answer.event_seq,
      state_rev: answer.state_rev,
      effects: answer.effects.map((e) => ({ effect_id: e.effect_id, kind: e.kind })),
      ...(answer.diagnostics.length > 0 ? { diagnostics: answer.diagnostics } : {}),
    }),
  ];
  const terminal = isTerminalStatus(record.status);
  for (const effect of answer.effects) {
    if (terminal && effect.kind !== 'checkpoint') continue; // validation refuses these; defensive
    switch (effect.kind) {
      case 'call_tool':
      case 'request_model_turn': {
        if (draft.operation !== null) {
          return failRun(record, 'reducer_refused:multiple_operations', now, answer.event_seq);
        }
        const n = draft.counters.next_op + 1;
        const op: Operation = {
          op_id: `${record.run_id}/op/${n}`,
          kind: effect.kind === 'call_tool' ? 'tool_call' : 'model_turn',
          effect_id: effect.effect_id,
          effect,
          replay_safe: effect.kind === 'call_tool' ? effect.replay_safe : true,
          interruptible: effect.kind === 'call_tool' ? effect.interruptible : true,
          attempt: 1,
          started_at: null,
          ...(effect.kind === 'call_tool' && effect.for_call_id !== undefined
            ? { call_id: effect.for_call_id }
            : {}),
        };
        draft = { ...draft, operation: op, counters: { ...draft.counters, next_op: n } } as Draft;
        if (effect.kind === 'request_model_turn') draft = { ...draft, unanswered_calls: [] } as Draft;
        break;
      }
      case 'request_approval':
      case 'ask_user': {
        const n = draft.counters.next_req + 1;
        const request_id = `${record.run_id}/req/${n}`;
        const expires_at = effect.expires_in_ms !== undefined ? now + effect.expires_in_ms : null;
        const request: OpenRequest =
          effect.kind === 'request_approval'
            ? {
                kind: 'approval',
                request_id,
                effect_id: effect.effect_id,
                subject: effect.subject,
                opened_at: now,
                expires_at,
              }
            : {
                kind: 'input',
                request_id,
                effect_id: effect.effect_id,
                question: effect.question,
                ...(effect.choices !== undefined ? { choices: effect.choices } : {}),
                ...(effect.schema !== undefined ? { schema: effect.schema } : {}),
                opened_at: now,
                expires_at,
              };
        draft = {
          ...draft,
          open_requests: [...draft.open_requests, request],
          counters: { ...draft.counters, next_req: n },
        } as Draft;
        newEvents.push(ev('request_opened', now, { ...request }, { effect_id: effect.effect_id }));
        break;
      }
      case 'withdraw_request': {
        const found = draft.open_requests.find((r) => r.request_id === effect.request_id);
        if (found === undefined) break; // already closed: nothing to withdraw
        // Withdrawing the approval the policy gate opened withdraws the operation it held back.
        draft = dropGatedOperation(
          { ...draft, open_requests: draft.open_requests.filter((r) => r !== found) } as Draft,
          found,
        );
        newEvents.push(
          ev(
            'request_closed',
            now,
            { request_id: found.request_id, reason: 'withdrawn' },
            { effect_id: found.effect_id },
          ),
        );
        break;
      }
      case 'checkpoint': {
        const n = draft.counters.checkpoints + 1;
        draft = { ...draft, counters: { ...draft.counters, checkpoints: n } } as Draft;
        newEvents.push(
          ev('checkpoint_written', now, {
            checkpoint_no: n,
            reason: effect.reason ?? 'reducer',
            ...(effect.summary !== undefined ? { summary: effect.summary } : {}),
            state_rev: answer.state_rev,
          }),
        );
        break;
      }
      case 'capability_gap':
        newEvents.push(ev('capability_gap', now, { gap: effect.gap }, { effect_id: effect.effect_id }));
        break;
      case 'complete':
      case 'fail':
        break; // applied after the loop so that earlier effects (a gap) are recorded first
    }
  }
  const terminalEffect = answer.effects.find((e) => e.kind === 'complete' || e.kind === 'fail');
  if (terminalEffect !== undefined && !terminal) {
    const closing = closeAllRequests(draft, now, 'run_ended');
    newEvents.push(...closing.events);
    if (closing.discarded > 0) newEvents.push(ev('steers_discarded', now, { count: closing.discarded }));
    if (terminalEffect.kind === 'complete') {
      newEvents.push(
        ev('run_completed', now, {
          outcome: terminalEffect.outcome,
          summary: terminalEffect.summary ?? null,
        }),
      );
      draft = {
        ...draft,
        status: 'completed',
        outcome: terminalEffect.outcome,
        ...(terminalEffect.summary !== undefined ? { summary: terminalEffect.summary } : {}),
        ...terminalFields(record, now, `completed:${terminalEffect.outcome}`),
        epoch: clearedEpoch(record),
      } as Draft;
    } else if (terminalEffect.kind === 'fail') {
      newEvents.push(ev('run_failed', now, { code: terminalEffect.code, message: terminalEffect.message }));
      draft = {
        ...draft,
        status: 'failed',
        ...terminalFields(record, now, terminalEffect.code),
        epoch: clearedEpoch(record),
      } as Draft;
    }
    const appended = append(draft, newEvents, now);
    return finish({ ...appended.draft, inbox: [] } as Draft, appended.events);
  }
  const appended = append(draft, newEvents, now);
  return finish(appended.draft, appended.events);
}

/** Closes every open request (events request_closed) and counts queued steers to discard. */
function closeAllRequests(
  draft: Draft,
  now: number,
  reason: string,
): { events: NewRunEvent[]; discarded: number } {
  const events = draft.open_requests.map((r) =>
    ev('request_closed', now, { request_id: r.request_id, reason }, { effect_id: r.effect_id }),
  );
  return { events, discarded: draft.queued_steers.length };
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
  if (closing.discarded > 0) newEvents.push(ev('steers_discarded', now, { count: closing.discarded }));
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

// ---------------------------------------------------------------- operations

/**
 * Starts the pending operation if budgets allow (checked in the fixed order of `checkBudgets`).
 * Exceeded with on_exceeded pause → paused with the operation kept; fail → failed
 * `budget_exceeded:<which>`. A gated operation (open approval) cannot start.
 * Seed: "Budgets"; "Operations".
 */
export function startOperation(record: RunRecord, now: number): TransitionResult {
  const op = record.operation;
  if (op === null) return reject('no_operation', 'no pending operation');
  if (op.started_at !== null) return reject('invalid_state', 'operation already started');
  if (record.status !== 'running') return reject('invalid_state', `run is ${record.status}`);
  if (operationGated(record)) return reject('approval_pending', 'the operation waits for an approval');
  if (record.open_requests.length > 0) return reject('invalid_state', 'requests are open');
  const exceeded = checkBudgets(record, op, now);
  if (exceeded !== null) {
    const data = { which: exceeded.which, limit: exceeded.limit, used: exceeded.used };
    const appended = append({ ...record } as Draft, [ev('budget_exceeded', now, data)], now);
    const reason = `budget_exceeded:${exceeded.which}`;
    const next =
      record.on_exceeded === 'fail'
        ? failRun(seal(appended.draft), reason, now)
        : pauseRun(seal(appended.draft), reason, now);
    return prepend(appended.events, next);
  }
  const counters =
    isDelegation(op) && op.attempt === 1
      ? { ...record.counters, children: record.counters.children + 1 }
      : record.counters;
  const draft = { ...record, counters, operation: { ...op, started_at: now } } as Draft;
  const appended = append(
    draft,
    [
      ev(
        'operation_started',
        now,
        {
          kind: op.kind,
          attempt: op.attempt,
          ...(op.effect.kind === 'call_tool' ? { tool: op.effect.tool } : {}),
        },
        { operation_id: op.op_id, effect_id: op.effect_id },
      ),
    ],
    now,
  );
  return finish(appended.draft, appended.events);
}

function prepend(events: RunEvent[], result: TransitionResult): TransitionResult {
  if (!result.ok) return result;
  return { ok: true, record: result.record, events: [...events, ...result.events] };
}

/** How an operation ended, as the executor reports it. */
export type OperationResult =
  | {
      kind: 'model_turn_completed';
      message: { text?: string | null };
      tool_calls: ToolCall[];
      finish_reason: string;
      usage: { input_tokens: number; output_tokens: number };
    }
  | { kind: 'tool_result'; envelope: ToolResultEnvelope }
  | {
      kind: 'operation_failed';
      error_class: string;
      retryable: boolean;
      outcome_unknown: boolean;
      message: string;
      usage?: { input_tokens: number; output_tokens: number };
      /** Structured detail of the failure (e.g. a replay divergence), kept in the event. */
      detail?: Record<string, unknown>;
    }
  | {
      kind: 'operation_cancelled';
      acknowledged: boolean;
      usage?: { input_tokens: number; output_tokens: number };
    };

/**
 * Records the outcome of the started operation: the result event, usage updated in the same
 * commit, the operation cleared. A tool answering `waiting` with a resume_key parks the run
 * behind a result request. A cancelling run ends stopped once the operation returns (its usage
 * still counted); a pause asked for during the operation is applied now.
 * Seed: "Operations" (six outcomes), "Controls" (stop), "Budgets" (usage).
 */
export function finishOperation(
  record: RunRecord,
  fence: Fence,
  result: OperationResult,
  now: number,
): TransitionResult {
  const op = record.operation;
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  if (op === null || op.started_at === null) return reject('no_operation', 'no operation in flight');
  const usage: Usage = { ...record.usage, operations: record.usage.operations + 1 };
  const counters = { ...record.counters };
  const idFields = { operation_id: op.op_id, effect_id: op.effect_id };
  const newEvents: NewRunEvent[] = [];
  let draft = { ...record, operation: null } as Draft;
  const tokens = 'usage' in result && result.usage !== undefined ? result.usage : null;
  if (op.kind === 'model_turn') {
    usage.model_calls += 1;
    usage.turns += 1;
  } else if (op.kind === 'tool_call') {
    usage.tool_calls += 1;
  }
  if (tokens !== null) {
    usage.input_tokens += tokens.input_tokens;
    usage.output_tokens += tokens.output_tokens;
  }
  switch (result.kind) {
    case 'model_turn_completed': {
      counters.consecutive_op_failures = 0;
      newEvents.push(
        ev(
          'model_turn_completed',
          now,
          {
            message: result.message,
            tool_calls: result.tool_calls,
            finish_reason: result.finish_reason,
            usage: result.usage,
          },
          idFields,
        ),
      );
      draft = {
        ...draft,
        turn: record.turn + 1,
        unanswered_calls: result.tool_calls.map((c) => c.call_id),
      } as Draft;
      break;
    }
    case 'tool_result': {
      const env = result.envelope;
      const failed = env.status === 'failed' || env.status === 'retryable' || env.status === 'blocked';
      counters.consecutive_op_failures = failed ? counters.consecutive_op_failures + 1 : 0;
      const tool = op.effect.kind === 'call_tool' ? op.effect.tool : op.kind;
      if (env.status === 'waiting' && env.resume_key !== undefined && record.status !== 'cancelling') {
        const n = counters.next_req + 1;
        counters.next_req = n;
        const request: OpenRequest = {
          kind: 'result',
          request_id: `${record.run_id}/req/${n}`,
          effect_id: op.effect_id,
          resume_key: env.resume_key,
          op_id: op.op_id,
          tool,
          ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
          opened_at: now,
          expires_at: null,
        };
        const child = isDelegation(op) ? childOfResumeKey(env.resume_key) : null;
        draft = {
          ...draft,
          open_requests: [...draft.open_requests, request],
          ...(child !== null && !draft.live_children.includes(child)
            ? { live_children: [...draft.live_children, child] }
            : {}),
        } as Draft;
        newEvents.push(ev('request_opened', now, { ...request }, idFields));
      } else {
        newEvents.push(
          ev(
            'tool_result',
            now,
            { ...(op.call_id !== undefined ? { call_id: op.call_id } : {}), tool, envelope: env },
            idFields,
          ),
        );
      }
      break;
    }
    case 'operation_failed': {
      counters.consecutive_op_failures += 1;
      newEvents.push(
        ev(
          'operation_failed',
          now,
          {
            error_class: result.error_class,
            retryable: result.retryable,
            outcome_unknown: result.outcome_unknown,
            message: result.message,
            ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
            ...(result.detail !== undefined ? { detail: result.detail } : {}),
          },
          idFields,
        ),
      );
      break;
    }
    case 'operation_cancelled':
      newEvents.push(ev('operation_cancelled', now, { acknowledged: result.acknowledged }, idFields));
      break;
  }
  draft = { ...draft, usage, counters } as Draft;
  if (record.status === 'cancelling') {
    newEvents.push(ev('stopped', now, { reason: record.stop_reason }));
    const closing = closeAllRequests(draft, now, 'stopped');
    newEvents.push(...closing.events);
    if (closing.discarded > 0) newEvents.push(ev('steers_discarded', now, { count: closing.discarded }));
    const stopped = {
      ...draft,
      status: 'stopped',
      epoch: record.epoch + 1,
      ...terminalFields(record, now, 'stopped'),
    } as Draft;
    const appended = append(stopped, newEvents, now);
    return finish(appended.draft, appended.events);
  }
  const appended = append(draft, newEvents, now);
  if (record.pause_requested !== undefined) {
    return prepend(appended.events, pauseRun(seal(appended.draft), record.pause_requested, now));
  }
  return finish(appended.draft, appended.events);
}

// ---------------------------------------------------------------- steers and requests

/** Consumes the oldest queued steer between operations (event steer_consumed → user_input). */
export function consumeSteer(record: RunRecord, now: number): TransitionResult {
  const steer = record.queued_steers[0];
  if (steer === undefined) return reject('no_steer', 'no queued steer');
  if (record.operation !== null && record.operation.started_at !== null) {
    return reject('invalid_state', 'steers are consumed only between operations');
  }
  const draft = { ...record, queued_steers: record.queued_steers.slice(1) } as Draft;
  const appended = append(
    draft,
    [ev('steer_consumed', now, { steer_id: steer.steer_id, input: steer.input })],
    now,
  );
  return finish(appended.draft, appended.events);
}

/** Opens the approval the policy gate requires before a pending tool operation runs. */
export function gateOperation(
  record: RunRecord,
  subject: { digest: string; summary: string; tool: string; tool_version: string },
  now: number,
  expiresInMs?: number,
): TransitionResult {
  const op = record.operation;
  if (op === null || op.started_at !== null) return reject('no_operation', 'no pending operation');
  const n = record.counters.next_req + 1;
  const request: OpenRequest = {
    kind: 'approval',
    request_id: `${record.run_id}/req/${n}`,
    effect_id: op.effect_id,
    subject: {
      kind: 'tool_call',
      digest: subject.digest,
      digest_alg: 'sha256:rfc8785',
      summary: subject.summary,
      changes: {
        tool: subject.tool,
        version: subject.tool_version,
        args: op.effect.kind === 'call_tool' ? op.effect.args : {},
      },
    },
    opened_at: now,
    expires_at: expiresInMs !== undefined ? now + expiresInMs : null,
  };
  const draft = {
    ...record,
    open_requests: [...record.open_requests, request],
    counters: { ...record.counters, next_req: n },
  } as Draft;
  const appended = append(
    draft,
    [
      ev(
        'request_opened',
        now,
        { ...request, gate: true },
        { operation_id: op.op_id, effect_id: op.effect_id },
      ),
    ],
    now,
  );
  return finish(appended.draft, appended.events);
}

/** Drops a pending operation whose gating approval was rejected, expired or withdrawn. */
function dropGatedOperation(draft: Draft, request: OpenRequest): Draft {
  const op = draft.operation;
  if (
    op !== null &&
    op.started_at === null &&
    op.effect_id === request.effect_id &&
    request.kind === 'approval'
  ) {
    return { ...draft, operation: null } as Draft;
  }
  return draft;
}

/** A run that rests (no lease) settles as waiting or queued after a request changed. */
function settleIdle(draft: Draft, now: number): Draft {
  if (draft.status !== 'waiting' && draft.status !== 'queued') return draft;
  const probe = seal({ ...draft, status: 'queued' });
  const status = restingStatus(probe);
  return { ...draft, status, wake_at: status === 'queued' ? now : nextRequestExpiry(probe) } as Draft;
}

/**
 * Closes open requests past their expiry (request_closed reason expired); a gated operation whose
 * approval expired is dropped. Seed: sweeper duty "closes requests past their expiry".
 */
export function expireRequests(record: RunRecord, now: number): TransitionResult {
  const expired = record.open_requests.filter((r) => r.expires_at !== null && r.expires_at <= now);
  if (expired.length === 0) return reject('nothing_to_do', 'no expired request');
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  let draft = { ...record, open_requests: record.open_requests.filter((r) => !expired.includes(r)) } as Draft;
  for (const r of expired) draft = dropGatedOperation(draft, r);
  const appended = append(
    draft,
    expired.map((r) =>
      ev('request_closed', now, { request_id: r.request_id, reason: 'expired' }, { effect_id: r.effect_id }),
    ),
    now,
  );
  return finish(settleIdle(appended.draft, now), appended.events);
}

/**
 * Delivers an external result for a parked tool call by its resume_key: the result request
 * closes and the tool_result reaches the reducer. Rejected `request_not_found` when no open
 * result request has that key. Seed: "Operations" (waiting with a resume_key).
 */
export function deliverResult(
  record: RunRecord,
  resumeKey: string,
  envelope: ToolResultEnvelope,
  now: number,
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  const request = record.open_requests.find((r) => r.kind === 'result' && r.resume_key === resumeKey);
  if (request === undefined || request.kind !== 'result')
    return reject('request_not_found', 'no open result request for that resume_key');
  const draft = { ...record, open_requests: record.open_requests.filter((r) => r !== request) } as Draft;
  const appended = append(
    draft,
    [
      ev('result_delivered', now, { request_id: request.request_id, resume_key: resumeKey }),
      ev(
        'tool_result',
        now,
        {
          ...(request.call_id !== undefined ? { call_id: request.call_id } : {}),
          tool: request.tool,
          envelope,
        },
        { operation_id: request.op_id, effect_id: request.effect_id },
      ),
    ],
    now,
  );
  return finish(settleIdle(appended.draft, now), appended.events);
}

// ---------------------------------------------------------------- delegation

/** Whether `op` is a delegation: a call of the reserved delegate tool, which core executes. */
export function isDelegation(op: Operation): boolean {
  return op.effect.kind === 'call_tool' && op.effect.tool === DELEGATE_TOOL;
}

/**
 * The hand-back of a child run that ended: the child leaves `live_children`, and when the parent
 * still waits on `child:{child_run_id}` the child's outcome (`envelope`) is delivered as that
 * call's tool_result (like {@link deliverResult}). Rejected `run_terminal` for an ended parent
 * and `nothing_to_do` when the hand-back was already taken (so a repeated delivery adds nothing).
 * Seed: agent-runs, sweeper ("delivers owed child hand-backs").
 */
export function childEnded(
  record: RunRecord,
  childRunId: string,
  envelope: ToolResultEnvelope,
  now: number,
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  const key = childResumeKey(childRunId);
  const waiting = record.open_requests.some((r) => r.kind === 'result' && r.resume_key === key);
  const live = record.live_children.includes(childRunId);
  if (!waiting && !live) return reject('nothing_to_do', 'the hand-back was already taken');
  const next = live
    ? seal({
        ...record,
        live_children: record.live_children.filter((c) => c !== childRunId),
        updated_at: now,
      })
    : record;
  if (!waiting) return { ok: true, record: next, events: [] };
  const request = record.open_requests.find((r) => r.kind === 'result' && r.resume_key === key);
  const opId = request?.kind === 'result' ? request.op_id : undefined;
  return deliverResult(next, key, opId !== undefined ? { ...envelope, operation_id: opId } : envelope, now);
}

/**
 * An ended run with one owed duty done: `handback` delivered, or `stop_children` done (its
 * live_children then cleared). Rejected `nothing_to_do` when that duty is not owed.
 */
export function settleOwed(record: RunRecord, duty: OwedDuty, now: number): TransitionResult {
  if (!isTerminalStatus(record.status) || !('owed' in record) || !record.owed.includes(duty))
    return reject('nothing_to_do', `${duty} is not owed`);
  return finish(
    {
      ...record,
      owed: record.owed.filter((d) => d !== duty),
      ...(duty === 'stop_children' ? { live_children: [] } : {}),
      updated_at: now,
    } as Draft,
    [],
  );
}

// ---------------------------------------------------------------- controls

/** What the store holds for a control id already seen (`K#{control_id}`). */
export interface StoredControlAck {
  digest: string;
  seq: number;
}

export type ControlDecision =
  | { kind: 'applied'; record: RunRecord; events: RunEvent[]; seq: number }
  | { kind: 'duplicate'; original_seq: number }
  | { kind: 'rejected'; reason: string; record: RunRecord; events: RunEvent[]; seq: number };

/**
 * Decides one control in one step: duplicate (same id and command digest), rejected (logged as a
 * control_rejected event, whose seq the ack carries) or applied (its events, the first of which
 * the ack's seq names). Never throws for a rejected control.
 * `digest` is the canonical digest of the command without its control_id.
 * Seed: agent-runs, "Controls".
 */
export function decideControl(
  record: RunRecord,
  control: Control,
  digest: string,
  previous: StoredControlAck | null,
  authorized: boolean,
  now: number,
): ControlDecision {
  if (previous !== null) {
    if (previous.digest === digest) return { kind: 'duplicate', original_seq: previous.seq };
    return rejectControl(record, control, 'control_id_reused', now);
  }
  if (!authorized) return rejectControl(record, control, 'unauthorized', now);
  if (isTerminalStatus(record.status)) return rejectControl(record, control, 'run_terminal', now);
  const result = applyControl(record, control, now);
  if (!result.ok) return rejectControl(record, control, result.code, now);
  const first = result.events[0];
  if (first === undefined) throw new InvariantViolation('an applied control appends at least one event', []);
  return { kind: 'applied', record: result.record, events: result.events, seq: first.seq };
}

function rejectControl(record: RunRecord, control: Control, reason: string, now: number): ControlDecision {
  const appended = append(
    { ...record } as Draft,
    [ev('control_rejected', now, { control_id: control.control_id, command: control.command, reason })],
    now,
  );
  const recordOut = seal(appended.draft);
  const first = appended.events[0] as RunEvent;
  return { kind: 'rejected', reason, record: recordOut, events: appended.events, seq: first.seq };
}

function applyControl(record: RunRecord, control: Control, now: number): TransitionResult {
  switch (control.command) {
    case 'stop':
      return stopRun(record, control.reason ?? 'stopped by control', now, control.control_id);
    case 'pause':
      return pauseControl(record, control.reason ?? 'paused by control', now);
    case 'resume':
      return resumeRun(record, control, now);
    case 'steer': {
      const n = record.counters.next_steer + 1;
      const steer_id = `${record.run_id}/steer/${n}`;
      let draft = { ...record, counters: { ...record.counters, next_steer: n } } as Draft;
      const appended = append(
        draft,
        [ev('steer_queued', now, { steer_id, control_id: control.control_id, input: control.input })],
        now,
      );
      const seq = appended.events[0]?.seq ?? 0;
      draft = {
        ...appended.draft,
        queued_steers: [
          ...record.queued_steers,
          { steer_id, control_id: control.control_id, input: control.input, seq },
        ],
      } as Draft;
      if (draft.status === 'waiting') draft = { ...draft, status: 'queued', wake_at: now } as Draft;
      return finish(draft, appended.events);
    }
    case 'approve': {
      const request = record.open_requests.find((r) => r.request_id === control.request_id);
      if (request === undefined) return reject('request_not_found', 'no open request with that id');
      if (request.kind !== 'approval')
        return reject('request_kind_mismatch', 'the request is not an approval');
      if (request.subject.digest !== control.subject_digest)
        return reject('digest_mismatch', 'the approval quotes a stale digest');
      let draft = { ...record, open_requests: record.open_requests.filter((r) => r !== request) } as Draft;
      const op = draft.operation;
      if (control.decision === 'approved' && op !== null && op.effect_id === request.effect_id) {
        draft = { ...draft, operation: { ...op, approved_digest: request.subject.digest } } as Draft;
      } else if (control.decision === 'rejected') {
        draft = dropGatedOperation(draft, request);
      }
      const appended = append(
        draft,
        [
          ev(
            'request_resolved',
            now,
            {
              request_id: request.request_id,
              kind: 'approval',
              decision: control.decision,
              subject_digest: control.subject_digest,
              ...(control.reason !== undefined ? { reason: control.reason } : {}),
            },
            { effect_id: request.effect_id },
          ),
        ],
        now,
      );
      return finish(settleIdle(appended.draft, now), appended.events);
    }
    case 'provide_input': {
      const request = record.open_requests.find((r) => r.request_id === control.request_id);
      if (request === undefined) return reject('request_not_found', 'no open request with that id');
      if (request.kind !== 'input') return reject('request_kind_mismatch', 'the request is not a question');
      const draft = { ...record, open_requests: record.open_requests.filter((r) => r !== request) } as Draft;
      const appended = append(
        draft,
        [
          ev(
            'request_resolved',
            now,
            { request_id: request.request_id, kind: 'input', value: control.value },
            { effect_id: request.effect_id },
          ),
        ],
        now,
      );
      return finish(settleIdle(appended.draft, now), appended.events);
    }
  }
}

/**
 * Stop: immediate between operations (open requests closed, steers discarded, lease cleared with
 * epoch + 1, a pending operation dropped); during a started operation the run enters cancelling
 * and becomes stopped when the operation returns. Seed: "Controls" (stop).
 */
export function stopRun(
  record: RunRecord,
  reason: string,
  now: number,
  controlId?: string,
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  if (record.status === 'cancelling') return reject('already_stopping', 'run is already stopping');
  const op = record.operation;
  if (op !== null && op.started_at !== null && record.lease !== null) {
    const draft = {
      ...record,
      status: 'cancelling',
      stop_reason: reason,
      pause_requested: undefined,
    } as Draft;
    const appended = append(
      draft,
      [ev('stop_requested', now, { reason, ...(controlId ? { control_id: controlId } : {}) })],
      now,
    );
    return finish(appended.draft, appended.events);
  }
  const draft = { ...record } as Draft;
  const closing = closeAllRequests(draft, now, 'stopped');
  const newEvents: NewRunEvent[] = [
    ev('stopped', now, { reason, ...(controlId ? { control_id: controlId } : {}) }),
    ...closing.events,
  ];
  if (closing.discarded > 0) newEvents.push(ev('steers_discarded', now, { count: closing.discarded }));
  const stopped = {
    ...draft,
    status: 'stopped',
    epoch: record.lease !== null ? record.epoch + 1 : record.epoch,
    ...terminalFields(record, now, 'stopped'),
  } as Draft;
  const appended = append(stopped, newEvents, now);
  return finish(appended.draft, appended.events);
}

function pauseControl(record: RunRecord, reason: string, now: number): TransitionResult {
  if (record.status === 'paused') return reject('already_paused', 'run is already paused');
  if (record.status === 'cancelling') return reject('already_stopping', 'run is stopping; it cannot pause');
  const op = record.operation;
  if (op !== null && op.started_at !== null) {
    const draft = { ...record, pause_requested: reason } as Draft;
    const appended = append(draft, [ev('pause_requested', now, { reason })], now);
    return finish(appended.draft, appended.events);
  }
  return pauseRun(record, reason, now);
}

/**
 * Resume a paused run: budget_increase adds to the limits; a `reducer_changed` pause needs
 * accept_reducer_change (the artifact pin is then cleared and re-taken at the next call).
 * Event resumed {from_checkpoint_no} reaches the reducer. Seed: "Controls" (resume), "Budgets".
 */
function resumeRun(
  record: RunRecord,
  control: Extract<Control, { command: 'resume' }>,
  now: number,
): TransitionResult {
  if (record.status !== 'paused') return reject('not_paused', 'only a paused run can be resumed');
  if (record.pause_reason === 'reducer_changed' && control.accept_reducer_change !== true) {
    return reject(
      'reducer_change_not_accepted',
      'the reducer artifact changed: resume with accept_reducer_change: true',
    );
  }
  if (record.parent_run_id !== undefined && control.budget_increase?.max_depth !== undefined) {
    return reject(
      'max_depth_inherited',
      "a child run's max_depth is its parent's ceiling; it cannot be raised on the child",
    );
  }
  const budgets: Budgets = { ...record.budgets };
  for (const [key, inc] of Object.entries(control.budget_increase ?? {})) {
    const k = key as keyof Budgets;
    if (typeof inc === 'number') budgets[k] = (budgets[k] ?? 0) + inc;
  }
  let reducer = record.reducer;
  if (control.accept_reducer_change === true && reducer !== null) {
    const { artifact_hash: _dropped, ...rest } = reducer;
    reducer = rest;
  }
  const { pause_reason: _r, paused_from: _p, ...rest } = record;
  const draft = {
    ...rest,
    status: 'queued',
    budgets,
    reducer,
    counters: { ...record.counters, consecutive_op_failures: 0 },
  } as Draft;
  const appended = append(
    draft,
    [ev('resumed', now, { from_checkpoint_no: record.counters.checkpoints })],
    now,
  );
  return finish(settleIdle(appended.draft, now), appended.events);
}

/** The ids of model tool calls the run still owes the model an answer for. */
export function unansweredCalls(record: RunRecord): string[] {
  return record.unanswered_calls;
}
