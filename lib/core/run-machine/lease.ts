/**
 * Leases and takeover: acquire, renew, release, and the sweeper's takeover of an expired lease.
 * Every transition that clears a lease bumps the epoch. docs/contracts/run-lifecycle.md, "Leases,
 * recovery and the sweeper"; docs/architecture.md, "The step".
 */
import type { NewRunEvent, Operation, RunRecord, Usage } from '../../contracts/index.ts';
import {
  append,
  type Draft,
  discardedSteers,
  ev,
  finish,
  hasWork,
  LEASE_TTL_MS,
  nextRequestExpiry,
  prepend,
  reject,
  restingStatus,
  type TransitionResult,
  terminalFields,
  withProviderCalls,
} from './draft.ts';
import { pauseRun } from './lifecycle.ts';

/** The fence a lease holder presents on every commit. */
export interface Fence {
  owner: string;
  epoch: number;
}

/** Whether `record`'s lease is the one `fence` names (owner and epoch; expiry not judged). */
export function leaseNamedBy(record: RunRecord, fence: Fence): boolean {
  return record.lease !== null && record.lease.owner === fence.owner && record.epoch === fence.epoch;
}

/** Whether `fence` names `record`'s lease and that lease is unexpired at `now`. */
export function holdsLease(record: RunRecord, fence: Fence, now: number): boolean {
  return leaseNamedBy(record, fence) && record.lease !== null && record.lease.expires_at > now;
}

/**
 * A worker takes the lease of a queued run (epoch + 1, expiry now + ttl) and the run becomes
 * running. Rejected with `nothing_to_do` when the run is not queued or has no work,
 * `lease_held` when someone holds an unexpired lease. docs/contracts/run-lifecycle.md, "Leases".
 */
export function acquireLease(
  record: RunRecord,
  owner: string,
  now: number,
  ttlMs = LEASE_TTL_MS,
): TransitionResult {
  if (record.lease !== null && record.lease.expires_at > now)
    return reject('lease_held', 'another worker holds the lease');
  // A client-driven run is never stepped by the server (docs/contracts/run-lifecycle.md,
  // "Server-driven and client-driven runs").
  if (record.reducer === null) return reject('nothing_to_do', 'the run is client-driven');
  if (record.status !== 'queued') return reject('nothing_to_do', `run is ${record.status}`);
  if (!hasWork(record)) return reject('nothing_to_do', 'run has no work');
  return leased(record, owner, now, ttlMs);
}

/**
 * The run under a new lease: running, held by `owner` until now + ttl, the next epoch (which
 * fences out every earlier holder), no wake-up pending. Both a worker's and a client's take.
 */
export function leased(record: RunRecord, owner: string, now: number, ttlMs: number): TransitionResult {
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
 * A terminal or paused run already has no lease. docs/contracts/run-lifecycle.md, "Leases";
 * docs/architecture.md, "The step".
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

/**
 * The sweeper takes over a run whose lease expired (epoch + 1). A started replay-safe operation
 * is kept for dispatch again under the same op_id (attempt + 1); a started non-replay-safe one is
 * abandoned and reaches the reducer as operation_failed with outcome_unknown: true. A cancelling
 * run ends stopped. The run rests queued for a fresh worker, which the sweeper wakes after
 * `wakeDelayMs` if the step message is lost. docs/contracts/run-lifecycle.md, "Leases, recovery and
 * the sweeper".
 */
export function takeOver(record: RunRecord, now: number, wakeDelayMs = 0): TransitionResult {
  if (record.lease === null) return reject('no_lease', 'run holds no lease');
  if (record.lease.expires_at > now) return reject('lease_held', 'lease has not expired');
  return takenOver(record, now, wakeDelayMs);
}

/**
 * A worker process of a slot, as it names itself in the leases it takes: `slot` is held by at
 * most one live process at a time (a supervised worker restarted in place), `startedAt` is when
 * this process started (ms, by the slot's clock). Lease owners read `<slot>@<startedAt>/<suffix>`.
 */
export interface WorkerIncarnation {
  slot: string;
  startedAt: number;
}

/** The lease owner a step of `incarnation` writes: `<slot>@<startedAt>/<suffix>`. */
export function leaseOwnerOf(incarnation: WorkerIncarnation, suffix: string): string {
  return `${incarnation.slot}@${incarnation.startedAt}/${suffix}`;
}

/**
 * Whether `record`'s lease (expired or not) was taken by an EARLIER process of `self`'s slot:
 * the owner names the same slot and a start before `self.startedAt`. Since a slot has at most
 * one live process, that holder is dead and its lease need not be waited out. A lease of any
 * other owner (another slot, an unslotted worker, a client, a later process of the same slot)
 * is not. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper".
 */
export function heldByDeadPredecessor(record: RunRecord, self: WorkerIncarnation): boolean {
  if (record.lease === null) return false;
  const prefix = `${self.slot}@`;
  const owner = record.lease.owner;
  if (!owner.startsWith(prefix)) return false;
  const match = /^(\d{1,16})\//.exec(owner.slice(prefix.length));
  return match?.[1] !== undefined && Number(match[1]) < self.startedAt;
}

/**
 * A restarted worker takes over at once, lease unexpired, the run its dead predecessor of the
 * same slot held: the same transition as the sweeper's takeOver (epoch + 1, which fences the
 * predecessor out should it be alive after all; a started non-replay-safe operation ends
 * outcome_unknown), without the lease wait or the clock-skew allowance, which protect only a
 * live holder. Rejected `lease_held` for any lease that is not a dead predecessor's.
 */
export function takeOverPredecessor(
  record: RunRecord,
  self: WorkerIncarnation,
  now: number,
  wakeDelayMs = 0,
): TransitionResult {
  if (record.lease === null) return reject('no_lease', 'run holds no lease');
  if (!heldByDeadPredecessor(record, self))
    return reject('lease_held', 'the lease is not held by an earlier process of this slot');
  return takenOver(record, now, wakeDelayMs);
}

/** The takeover transition itself, once the caller has judged the lease abandoned. */
function takenOver(record: RunRecord, now: number, wakeDelayMs: number): TransitionResult {
  if (record.lease === null) return reject('no_lease', 'run holds no lease');
  const previous = { owner: record.lease.owner, epoch: record.epoch };
  let draft = { ...record, lease: null, epoch: record.epoch + 1, updated_at: now } as Draft;
  const op = record.operation;
  // A started model turn that is dispatched again: its lost dispatch's first provider request is
  // counted now, in usage and the turn's provider_calls, and in the log (so a fold of the log,
  // engine/upgrade/run-at-delivery.ts, counts it too).
  const lostCall =
    record.status !== 'cancelling' && op?.started_at != null && op.replay_safe && op.kind === 'model_turn'
      ? (op.provider_calls ?? 0) + 1
      : undefined;
  const newEvents: NewRunEvent[] = [
    ev('lease_taken_over', now, {
      previous_owner: previous.owner,
      previous_epoch: previous.epoch,
      ...(lostCall !== undefined ? { provider_calls: lostCall } : {}),
    }),
  ];
  if (record.status === 'cancelling' && op !== null) {
    if (op.started_at !== null) {
      newEvents.push(
        ev(
          'operation_cancelled',
          now,
          { acknowledged: false, ...(op.call_id !== undefined ? { call_id: op.call_id } : {}) },
          { operation_id: op.op_id, effect_id: op.effect_id },
        ),
      );
    }
    newEvents.push(ev('stopped', now, { reason: record.stop_reason }));
    newEvents.push(...discardedSteers(record, now));
    const usage = op.started_at !== null ? usageOfEnded(draft.usage, op) : draft.usage;
    const appended = append(
      { ...draft, usage, status: 'stopped', ...terminalFields(record, now, 'stopped') } as Draft,
      newEvents,
      now,
    );
    return finish(appended.draft, appended.events);
  }
  if (op !== null && op.started_at !== null) {
    if (lostCall !== undefined) {
      const usage = withProviderCalls(draft.usage, op.provider_calls ?? 0, 1);
      const again = { ...op, attempt: op.attempt + 1, started_at: null, provider_calls: lostCall };
      draft = { ...draft, usage, operation: again } as Draft;
    } else if (op.replay_safe) {
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
            message: 'the worker or client running this operation was lost; its outcome is unknown',
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
  const settled = { ...appended.draft, status: 'queued', wake_at: now + wakeDelayMs } as Draft;
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
 * unknown. A model turn counts its lost dispatch's first provider request (its retries were
 * counted as they were made, provider-calls.ts). docs/contracts/run-lifecycle.md, "Budgets"
 * (usage updated in the same commit as each finished operation).
 */
function usageOfEnded(usage: Usage, op: Operation): Usage {
  const model = op.kind === 'model_turn' ? 1 : 0;
  const counted = model === 1 ? withProviderCalls(usage, op.provider_calls ?? 0, 1) : usage;
  return {
    ...counted,
    operations: usage.operations + 1,
    turns: usage.turns + model,
    tool_calls: usage.tool_calls + (op.kind === 'tool_call' ? 1 : 0),
  };
}

/**
 * The sweeper is about to wake a queued run nobody drives: its wake deadline moves `delayMs`
 * out first, so that a second sweeper does not wake it too. Rejected `nothing_to_do` unless the
 * run is queued, holds no lease and its deadline has passed. docs/contracts/run-lifecycle.md,
 * sweeper ("wakes queued runs that nobody is driving").
 */
export function postponeWake(record: RunRecord, now: number, delayMs: number): TransitionResult {
  if (record.status !== 'queued' || record.lease !== null || record.wake_at === null || record.wake_at > now)
    return reject('nothing_to_do', 'the run is not due for a wake-up');
  return finish({ ...record, wake_at: now + delayMs } as Draft, []);
}
