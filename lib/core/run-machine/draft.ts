/**
 * The run machine's shared parts: transition results, the draft record that every transition
 * builds and `seal`s with the closed schema, event appending (seq from last_seq, reducer-visible
 * kinds queued in the inbox), and the small rules several transitions share (what an ending sets,
 * when a run has work, where a run rests). Internal to lib/core/run-machine: the index exports
 * only the public ones.
 */
import {
  isTerminalStatus,
  type Lease,
  type NewRunEvent,
  type OpenRequest,
  type Operation,
  type OwedDuty,
  REDUCER_VISIBLE_EVENT_KINDS,
  type RunEvent,
  type RunEventKind,
  type RunRecord,
  type RunStatus,
  safeParseRunRecord,
  type Usage,
} from '../../contracts/index.ts';
import { noteLargeResults } from '../compaction.ts';

/**
 * Default lease length: 90 s (lib/contracts/timings.ts). docs/contracts/run-lifecycle.md, "Leases,
 * recovery and the sweeper".
 */
export { LEASE_TTL_MS } from '../../contracts/timings.ts';

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

/** A record under construction: any status with any fields, sealed by the closed schema at the end. */
export type Draft = Omit<
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
  const parsed = safeParseRunRecord(draft);
  if (!parsed.success) {
    throw new InvariantViolation(
      `illegal run record: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      parsed.error.issues,
    );
  }
  return parsed.data;
}

export function reject(code: string, message: string): Rejected {
  return { ok: false, code, message };
}

/**
 * Appends events: assigns seq from last_seq, queues reducer-visible ones in the inbox, and
 * notes the large tool results among them in the record's window of references.
 */
export function append(
  draft: Draft,
  newEvents: NewRunEvent[],
  now: number,
): { draft: Draft; events: RunEvent[] } {
  let seq = draft.last_seq;
  const inbox = [...draft.inbox];
  const events: RunEvent[] = [];
  for (const e of newEvents) {
    seq += 1;
    events.push({ ...e, seq });
    if (draft.reducer !== null && REDUCER_VISIBLE_KINDS.has(e.kind)) inbox.push(seq);
  }
  const large_results = noteLargeResults(draft.large_results, events);
  return {
    draft: { ...draft, last_seq: seq, inbox, updated_at: now, large_results } as Draft,
    events,
  };
}

export function ev(
  kind: RunEventKind,
  now: number,
  data: Record<string, unknown>,
  extra?: Partial<NewRunEvent>,
): NewRunEvent {
  return { kind, at: now, data, ...extra };
}

export function finish(draft: Draft, events: RunEvent[]): Ok {
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

export function prepend(events: RunEvent[], result: TransitionResult): TransitionResult {
  if (!result.ok) return result;
  return { ok: true, record: result.record, events: [...events, ...result.events] };
}

/**
 * The fields every ending sets. A child run owes its parent the hand-back; a run that ever
 * delegated owes the stop of its children still live (found by their links, so that a child
 * created by a worker that lost its lease is stopped too).
 */
export function terminalFields(record: RunRecord, now: number, reason: string) {
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

/**
 * Every transition that clears a lease bumps the epoch (docs/contracts/run-lifecycle.md, "Leases").
 */
export function clearedEpoch(record: RunRecord): number {
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
export function restingStatus(record: RunRecord): 'queued' | 'waiting' {
  return record.open_requests.length > 0 && !hasWork(record) ? 'waiting' : 'queued';
}

export function nextRequestExpiry(record: RunRecord): number | null {
  let next: number | null = null;
  for (const r of record.open_requests) {
    if (r.expires_at !== null && (next === null || r.expires_at < next)) next = r.expires_at;
  }
  return next;
}

/** Closes every open request (events request_closed); queued steers are `discardedSteers`. */
export function closeAllRequests(draft: Draft, now: number, reason: string): { events: NewRunEvent[] } {
  const events = draft.open_requests.map((r) =>
    ev('request_closed', now, { request_id: r.request_id, reason }, { effect_id: r.effect_id }),
  );
  return { events };
}

/**
 * The steers_discarded event of a run that ends with steers still queued: `{count, control_ids}`
 * (the control_ids of the steer controls, oldest first), or none. docs/contracts/run-lifecycle.md,
 * "Controls" (stop: "queued steers discarded").
 */
export function discardedSteers(record: Pick<RunRecord, 'queued_steers'>, now: number): NewRunEvent[] {
  const steers = record.queued_steers;
  if (steers.length === 0) return [];
  return [
    ev('steers_discarded', now, { count: steers.length, control_ids: steers.map((s) => s.control_id) }),
  ];
}

/** Drops a pending operation whose gating approval was rejected, expired or withdrawn. */
export function dropGatedOperation(draft: Draft, request: OpenRequest): Draft {
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
export function settleIdle(draft: Draft, now: number): Draft {
  if (draft.status !== 'waiting' && draft.status !== 'queued') return draft;
  const probe = seal({ ...draft, status: 'queued' });
  const status = restingStatus(probe);
  return { ...draft, status, wake_at: status === 'queued' ? now : nextRequestExpiry(probe) } as Draft;
}

/**
 * Usage after `added` more provider requests of a turn that had made `before` (its retries are
 * the requests beyond its first).
 */
export function withProviderCalls(usage: Usage, before: number, added: number): Usage {
  const retries = Math.max(0, before + added - 1) - Math.max(0, before - 1);
  return { ...usage, model_calls: usage.model_calls + added, model_retries: usage.model_retries + retries };
}
