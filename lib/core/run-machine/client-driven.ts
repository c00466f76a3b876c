/**
 * Client-driven runs: a run created without a reducer, whose next step an external client
 * decides while it holds the run's lease. The client takes (or renews) the lease, begins an
 * operation it executes itself, reports how it ended, opens approvals and questions, takes the
 * queued steers at a boundary, completes or fails the run, and lets the lease go. Every write
 * presents the fence `{owner, epoch}`; a lost lease is refused `fenced_out`. The bookkeeping is
 * the step worker's own (startOperation, finishOperation, releaseLease, takeOver, failRun): only
 * what a client does differently lives here. A client-driven run is never stepped by the server
 * and never woken: when its lease expires the sweeper lets it go (epoch + 1; a non-replay-safe
 * operation in flight is abandoned with outcome_unknown: true) and the run waits for a client.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases, recovery and
 * the sweeper", "Operations", "Controls".
 */
import {
  type ApprovalSubject,
  type Effect,
  isTerminalStatus,
  type JsonObject,
  type NewRunEvent,
  type OpenRequest,
  type Operation,
  type RunRecord,
  type ToolOffered,
} from '../../contracts/index.ts';
import { canonicalJson } from '../canonical.ts';
import {
  append,
  closeAllRequests,
  type Draft,
  discardedSteers,
  ev,
  finish,
  LEASE_TTL_MS,
  nextRequestExpiry,
  reject,
  restingStatus,
  seal,
  type TransitionResult,
  terminalFields,
} from './draft.ts';
import { type Fence, holdsLease, leased, releaseLease, renewLease, takeOver } from './lease.ts';
import { failRun } from './lifecycle.ts';
import { finishOperation, type OperationResult, startOperation } from './operations.ts';
import { consumeSteer, openRequestAs } from './requests.ts';

/** Whether the run is client-driven: created without a reducer. */
export function isClientDriven(record: RunRecord): boolean {
  return record.reducer === null;
}

/** What a client asks to run: the operation's kind, its two flags and its request. */
export type ClientOperationSpec =
  | {
      kind: 'tool_call';
      replay_safe: boolean;
      interruptible: boolean;
      request: { tool: string; args: JsonObject; mutating: boolean; call_id?: string };
    }
  | {
      kind: 'model_turn';
      replay_safe: boolean;
      interruptible: boolean;
      request: { tools_offered: ToolOffered[]; instructions?: string; context?: unknown };
    }
  | {
      /** compaction, or a custom kind: its request is kept as the operation's args. */
      kind: string;
      replay_safe: boolean;
      interruptible: boolean;
      request: JsonObject;
    };

/** A request a client opens between operations: an approval or a question. */
export type ClientRequestSpec =
  | { kind: 'approval'; subject: ApprovalSubject; expires_in_ms?: number }
  | {
      kind: 'input';
      question: string;
      choices?: string[];
      schema?: JsonObject;
      expires_in_ms?: number;
    };

/** The transition for a client whose fence does not hold: refused, the run unchanged. */
function fencedOut(record: RunRecord): TransitionResult {
  return reject(
    'fenced_out',
    record.lease === null
      ? `the lease was lost: the run is ${record.status} at epoch ${record.epoch}`
      : `the lease is held at epoch ${record.epoch}, not by this fence`,
  );
}

/** A client's fence holds (owner, epoch, not expired) on a client-driven run. */
function check(record: RunRecord, fence: Fence, now: number): TransitionResult | null {
  if (!isClientDriven(record))
    return reject('not_client_driven', 'the run has a reducer: the server drives it');
  if (!holdsLease(record, fence, now)) return fencedOut(record);
  return null;
}

/**
 * A client takes the lease of a client-driven run (epoch + 1, expiry now + ttl) and the run
 * becomes running; the holder asking again renews it (same epoch). Rejected `not_client_driven`,
 * `run_terminal`, `run_paused` (resume it first), `lease_held` (someone holds an unexpired lease)
 * or `lease_expired` (an expired lease must be let go first: {@link expireClientLease}).
 * docs/contracts/run-lifecycle.md, "Leases".
 */
export function acquireClientLease(
  record: RunRecord,
  owner: string,
  now: number,
  ttlMs = LEASE_TTL_MS,
): TransitionResult {
  if (!isClientDriven(record))
    return reject('not_client_driven', 'the run has a reducer: the server drives it');
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  if (record.lease !== null) {
    if (record.lease.expires_at <= now) return reject('lease_expired', 'the previous lease expired');
    if (record.lease.owner === owner) return renewLease(record, { owner, epoch: record.epoch }, now, ttlMs);
    return reject('lease_held', 'another client holds the lease');
  }
  if (record.status === 'paused') return reject('run_paused', 'the run is paused: resume it first');
  return leased(record, owner, now, ttlMs);
}

/**
 * The holder renews its lease. Rejected `fenced_out` once it was lost.
 * docs/contracts/run-lifecycle.md, "Leases".
 */
export function renewClientLease(
  record: RunRecord,
  fence: Fence,
  now: number,
  ttlMs = LEASE_TTL_MS,
): TransitionResult {
  return check(record, fence, now) ?? renewLease(record, fence, now, ttlMs);
}

/** Where a client-driven run rests without a lease: waiting behind a request, else queued; never woken. */
function rest(record: RunRecord): RunRecord {
  if (record.status !== 'queued' && record.status !== 'waiting') return record;
  const status = restingStatus({ ...record, status: 'queued' } as RunRecord);
  return seal({ ...record, status, wake_at: status === 'waiting' ? nextRequestExpiry(record) : null });
}

/**
 * The holder lets go between operations (epoch + 1); the run waits for a client (waiting behind
 * open requests, else queued), with no wake deadline: the server never steps it. Rejected
 * `fenced_out`, or `invalid_state` while an operation is in flight or the run is cancelling.
 */
export function releaseClientLease(record: RunRecord, fence: Fence, now: number): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  const released = releaseLease(record, fence, now);
  return released.ok ? { ...released, record: rest(released.record) } : released;
}

/**
 * The sweeper (or the next client) lets an expired client lease go: epoch + 1 and event
 * lease_taken_over; a replay-safe operation in flight is kept pending for the next client to
 * begin again under the same op_id (attempt + 1); a non-replay-safe one is recorded abandoned,
 * operation_failed with outcome_unknown: true; a cancelling run ends stopped; a pause asked for
 * meanwhile applies. The run is never woken. Rejected `no_lease`, `lease_held` (not expired),
 * `not_client_driven`. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
export function expireClientLease(record: RunRecord, now: number): TransitionResult {
  if (!isClientDriven(record)) return reject('not_client_driven', 'the run has a reducer: takeOver applies');
  const taken = takeOver(record, now, 0);
  return taken.ok ? { ...taken, record: rest(taken.record) } : taken;
}

/** The reducer-contract effect a client's operation is recorded as (its effect id `client:{n}`). */
function effectOf(spec: ClientOperationSpec, n: number): Effect {
  const effect_id = `client:${n}`;
  if (spec.kind === 'model_turn') {
    const request = spec.request as Extract<ClientOperationSpec, { kind: 'model_turn' }>['request'];
    return {
      effect_id,
      kind: 'request_model_turn',
      tools_offered: request.tools_offered,
      ...(request.instructions !== undefined ? { instructions: request.instructions } : {}),
      ...(request.context !== undefined ? { context: request.context } : {}),
    };
  }
  if (spec.kind === 'tool_call') {
    const request = spec.request as Extract<ClientOperationSpec, { kind: 'tool_call' }>['request'];
    return {
      effect_id,
      kind: 'call_tool',
      tool: request.tool,
      args: request.args,
      mutating: request.mutating,
      replay_safe: spec.replay_safe,
      interruptible: spec.interruptible,
      ...(request.call_id !== undefined ? { for_call_id: request.call_id } : {}),
    };
  }
  return {
    effect_id,
    kind: 'call_tool',
    tool: spec.kind,
    args: spec.request as JsonObject,
    mutating: !spec.replay_safe,
    replay_safe: spec.replay_safe,
    interruptible: spec.interruptible,
  };
}

/** What identifies a client's operation across retries: everything but its ids and attempt. */
function specKey(op: Pick<Operation, 'kind' | 'effect' | 'replay_safe' | 'interruptible'>): string {
  const { effect_id: _id, ...effect } = op.effect;
  return canonicalJson({
    kind: op.kind,
    effect,
    replay_safe: op.replay_safe,
    interruptible: op.interruptible,
  });
}

/**
 * The holder begins an operation it executes itself: budgets are checked first (startOperation:
 * exceeded → paused with the operation kept, or failed `budget_exceeded:<which>`; the lease is
 * then gone), then event operation_started. The same request again while it is in flight answers
 * with it unchanged (a retried begin); a pending operation (kept by a takeover or a budget pause)
 * must be begun again as it was. Rejected `fenced_out`, `run_stopping` (cancelling),
 * `operation_in_flight`, `operation_pending`, `requests_open`. docs/contracts/run-lifecycle.md,
 * "Operations", "Budgets".
 */
export function beginClientOperation(
  record: RunRecord,
  fence: Fence,
  spec: ClientOperationSpec,
  now: number,
): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  if (record.status === 'cancelling') return reject('run_stopping', 'the run is stopping');
  const n = record.counters.next_op + 1;
  const wanted = {
    kind: spec.kind,
    effect: effectOf(spec, n),
    replay_safe: spec.replay_safe,
    interruptible: spec.interruptible,
  };
  const op = record.operation;
  if (op !== null) {
    const same = specKey(op) === specKey(wanted);
    if (op.started_at !== null) {
      // A retried begin: nothing changes (the same record, no event).
      return same
        ? { ok: true, record, events: [] }
        : reject('operation_in_flight', `${op.op_id} is in flight`);
    }
    if (!same) return reject('operation_pending', `${op.op_id} is pending: begin it again as it was`);
    return withCallId(startOperation(record, now), op);
  }
  if (record.open_requests.length > 0) return reject('requests_open', 'requests are open');
  const call = spec.kind === 'tool_call' ? (spec.request as { call_id?: string }).call_id : undefined;
  const operation: Operation = {
    op_id: `${record.run_id}/op/${n}`,
    ...wanted,
    effect_id: wanted.effect.effect_id,
    attempt: 1,
    started_at: null,
    ...(call !== undefined ? { call_id: call } : {}),
  };
  const pending = seal({ ...record, operation, counters: { ...record.counters, next_op: n } });
  return withCallId(startOperation(pending, now), operation);
}

/**
 * A client's tool call names the model's call id on its operation_started event (`data.call_id`),
 * so that a restarted client can match a replayed call to its operation by id, not only by
 * position. The step worker's operation_started is left as it is.
 */
function withCallId(result: TransitionResult, op: Operation): TransitionResult {
  if (!result.ok || op.call_id === undefined) return result;
  const callId = op.call_id;
  return {
    ...result,
    events: result.events.map((e) =>
      e.kind === 'operation_started' && e.operation_id === op.op_id
        ? { ...e, data: { ...e.data, call_id: callId } }
        : e,
    ),
  };
}

/**
 * The holder reports how its operation `opId` ended: the result event, usage charged in the same
 * commit; a cancelling run ends stopped, a pause asked for meanwhile applies (both clear the
 * lease). Rejected `fenced_out`, `no_operation` (nothing in flight, or another op_id).
 * docs/contracts/run-lifecycle.md, "Operations" (six outcomes), "Controls" (stop), "Budgets"
 * (usage).
 */
export function finishClientOperation(
  record: RunRecord,
  fence: Fence,
  opId: string,
  result: OperationResult,
  now: number,
): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  const op = record.operation;
  if (op === null || op.started_at === null || op.op_id !== opId)
    return reject('no_operation', `${opId} is not the operation in flight`);
  return finishOperation(record, fence, result, now);
}

/**
 * The holder opens an approval or a question between operations (request id
 * `{run_id}/req/{n}`, effect id `client:req:{n}`), event request_opened. It may keep the lease
 * and wait, or release it: the run then rests waiting and costs nothing until the answer.
 * Rejected `fenced_out`, `operation_in_flight`. docs/contracts/run-lifecycle.md, "Controls"
 * (approve, provide_input).
 */
export function openClientRequest(
  record: RunRecord,
  fence: Fence,
  spec: ClientRequestSpec,
  now: number,
): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  if (record.operation !== null && record.operation.started_at !== null)
    return reject('operation_in_flight', 'requests are opened between operations');
  const n = record.counters.next_req + 1;
  const base = {
    request_id: `${record.run_id}/req/${n}`,
    effect_id: `client:req:${n}`,
    opened_at: now,
    expires_at: spec.expires_in_ms !== undefined ? now + spec.expires_in_ms : null,
  };
  const request: OpenRequest =
    spec.kind === 'approval'
      ? { kind: 'approval', ...base, subject: spec.subject }
      : {
          kind: 'input',
          ...base,
          question: spec.question,
          ...(spec.choices !== undefined ? { choices: spec.choices } : {}),
          ...(spec.schema !== undefined ? { schema: spec.schema } : {}),
        };
  return openRequestAs(record, request, n, now, { ...request }, { effect_id: base.effect_id });
}

/**
 * The holder takes every queued steer at a boundary (events steer_consumed, oldest first); the
 * steers themselves are in the events. Rejected `fenced_out`, `operation_in_flight`,
 * `no_steer`. docs/contracts/run-lifecycle.md, "Controls" (steer: consumed at the next safe
 * boundary).
 */
export function takeClientSteers(record: RunRecord, fence: Fence, now: number): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  if (record.operation !== null && record.operation.started_at !== null)
    return reject('operation_in_flight', 'steers are taken between operations');
  if (record.queued_steers.length === 0) return reject('no_steer', 'no queued steer');
  let current: TransitionResult = { ok: true, record, events: [] };
  while (current.ok && current.record.queued_steers.length > 0) {
    const next = consumeSteer(current.record, now);
    if (!next.ok) return next;
    current = { ok: true, record: next.record, events: [...current.events, ...next.events] };
  }
  return current;
}

/**
 * The holder completes the run (event run_completed; open requests closed, queued steers
 * discarded, lease cleared with epoch + 1). Rejected `fenced_out`, `operation_in_flight`.
 * docs/contracts/run-lifecycle.md, "Lifecycle".
 */
export function completeClientRun(
  record: RunRecord,
  fence: Fence,
  outcome: 'succeeded' | 'partial' | 'blocked',
  summary: string | undefined,
  now: number,
): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  if (record.operation !== null && record.operation.started_at !== null)
    return reject('operation_in_flight', 'report the operation before completing');
  const draft = { ...record } as Draft;
  const closing = closeAllRequests(draft, now, 'run_ended');
  const events: NewRunEvent[] = [...closing.events, ...discardedSteers(draft, now)];
  events.push(ev('run_completed', now, { outcome, summary: summary ?? null }));
  const ended = {
    ...draft,
    status: 'completed',
    outcome,
    ...(summary !== undefined ? { summary } : {}),
    ...terminalFields(record, now, `completed:${outcome}`),
    epoch: record.epoch + 1,
  } as Draft;
  const appended = append(ended, events, now);
  return finish(appended.draft, appended.events);
}

/**
 * The holder fails the run with its own `code` (event run_failed). Rejected `fenced_out`,
 * `operation_in_flight`. docs/contracts/run-lifecycle.md, "Lifecycle".
 */
export function failClientRun(record: RunRecord, fence: Fence, code: string, now: number): TransitionResult {
  const refused = check(record, fence, now);
  if (refused !== null) return refused;
  if (record.operation !== null && record.operation.started_at !== null)
    return reject('operation_in_flight', 'report the operation before failing the run');
  return failRun(record, code, now);
}
