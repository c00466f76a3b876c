/**
 * The use cases of client-driven runs: an external client takes the lease, begins the
 * operations it executes itself, reports their outcomes (a result, or an external-runtime turn
 * outcome), opens requests, takes steers, ends the run and lets the lease go. Each is one fenced
 * commit decided by core (lib/core/run-machine/client-driven.ts) in the engine's one
 * read-decide-commit loop; a concurrent control (a stop, a steer) makes the commit stale and the
 * decision is taken again on the fresh record. A lost lease is EngineError `fenced_out`, whose
 * details carry the turn outcome reason code `session-fence-mismatch`.
 * docs/contracts/run-lifecycle.md, "Server-driven and client-driven runs", "Leases, recovery and
 * the sweeper"; docs/contracts/turn-outcome.md.
 */
import {
  BeginOperationInput,
  CompleteRunInput,
  FailRunInput,
  FenceBody,
  type LeaseGrant,
  LeaseRequest,
  OpenRequestInput,
  type Operation,
  ReportOutcomeInput,
  type RunEvent,
  type RunRecord,
  TurnOutcome,
} from '../contracts/index.ts';
import type { Caller } from '../core/authority.ts';
import type { PriceTables } from '../core/prices.ts';
import {
  acquireClientLease,
  beginClientOperation,
  chain,
  type ClientOperationSpec,
  completeClientRun,
  expireClientLease,
  type Fence,
  failClientRun,
  finishClientOperation,
  isClientDriven,
  type OperationResult,
  openClientRequest,
  releaseClientLease,
  renewClientLease,
  type TransitionResult,
  takeClientSteers,
} from '../core/run-machine.ts';
import { turnOutcomeResult } from '../core/turn-outcome.ts';
import { type Decision, readDecideCommit } from './commit-loop.ts';
import { parse, resultOf } from './client-results.ts';
import { afterEnd, commitOf, type EngineContext } from './deps.ts';
import { KEY_IN_USE, resumeKeyClaims } from './early-results.ts';
import { EngineError } from './errors.ts';
import { CommitRejected } from './ports.ts';
import { readRun, runView } from './reads.ts';

/** What every client-driven write answers with: the run as it now stands (its effective view). */
export interface ClientWriteResult {
  run: RunRecord;
  /** The lease the client still holds after the write, or null (released, stopped, paused, ended). */
  lease: LeaseGrant | null;
}

/** The lease of a run as `GET /runs/{id}/lease` shows it. */
export interface LeaseView {
  run_id: string;
  client_driven: boolean;
  status: RunRecord['status'];
  epoch: number;
  lease: LeaseGrant | null;
  /** Milliseconds until the lease expires (negative once expired), or null without a lease. */
  expires_in_ms: number | null;
  operation: RunRecord['operation'];
  queued_steers: number;
  open_requests: number;
}

/** The fence in the record: the lease, if any, and its epoch. */
function leaseOf(record: RunRecord): LeaseGrant | null {
  return record.lease === null ? null : { ...record.lease, epoch: record.epoch };
}

/** The EngineError of a core refusal; `fenced_out` carries the turn outcome reason code. */
function refusal(record: RunRecord, code: string, message: string): EngineError {
  const where = { run_id: record.run_id, status: record.status, epoch: record.epoch };
  switch (code) {
    case 'fenced_out':
      return new EngineError('fenced_out', message, { ...where, reason_code: 'session-fence-mismatch' });
    case 'lease_held':
      return new EngineError('lease_held', message, {
        ...where,
        expires_at: record.lease?.expires_at ?? null,
      });
    case 'not_client_driven':
    case 'run_terminal':
      return new EngineError(code, message, where);
    case 'no_operation': {
      const op = record.operation?.started_at != null ? record.operation.op_id : null;
      const hint = op === null ? 'no operation is in flight' : `the operation in flight is ${op}`;
      const text = `${message} (${hint}; op ids read {run_id}/op/{n})`;
      return new EngineError('invalid_state', text, { ...where, reason: code });
    }
    default:
      return new EngineError('invalid_state', message, { ...where, reason: code });
  }
}

/** Rounds a fenced write takes over a held resume key: held, early taken, gone, held by the winner. */
const KEY_ROUNDS = 4;

/** What a fenced write decides on the record read: core's transition, and the control it acks. */
type Decided = { transition: TransitionResult; controlKey?: string; digest?: string };
type Decide = (record: RunRecord, now: number) => Decided;
type Answer<T> = (stored: RunRecord, transition: Extract<TransitionResult, { ok: true }>) => T;

/**
 * One fenced write: read the run (authorized), let `decide` pick core's transition, commit it
 * (with `fence` in the condition), run the owed duties of a run that ended, answer. A wait on a
 * resume key that holds an early result takes it in the same commit (as the step worker does).
 * Throws EngineError run_not_found / unauthorized, the refusal of core, fenced_out when the
 * commit lost the lease to a concurrent one, resume_key_in_use (another principal's key),
 * store_unavailable.
 */
async function fencedWrite<T>(
  ctx: EngineContext,
  runId: string,
  caller: Caller,
  fence: Fence | undefined,
  decide: Decide,
  answer: Answer<T>,
): Promise<T> {
  let early: ((record: RunRecord) => TransitionResult)[] = [];
  let opened: RunEvent[] = [];
  const withEarly: Decide = (record, now) => {
    const decided = decide(record, now);
    const transition = early.reduce(chain, decided.transition);
    if (transition.ok) opened = transition.events;
    return { ...decided, transition };
  };
  for (let round = 0; ; round += 1) {
    try {
      return await fencedCommit(ctx, runId, caller, fence, withEarly, answer);
    } catch (err) {
      // Another run took the early result first: recompute without it (then its key is theirs).
      if (err instanceof CommitRejected && err.code === 'early_result_gone' && round < KEY_ROUNDS) {
        early = [];
        continue;
      }
      if (!(err instanceof CommitRejected && err.code === 'resume_key_held') || round >= KEY_ROUNDS)
        throw err;
      const { moves, inUse } = await resumeKeyClaims(ctx, opened);
      if (inUse !== undefined)
        throw new EngineError('resume_key_in_use', `${KEY_IN_USE} ${JSON.stringify(inUse)}`, {
          run_id: runId,
          resume_key: inUse,
        });
      early = moves;
    }
  }
}

/** One round of fencedWrite: read, decide, commit. */
async function fencedCommit<T>(
  ctx: EngineContext,
  runId: string,
  caller: Caller,
  fence: Fence | undefined,
  decide: Decide,
  answer: Answer<T>,
): Promise<T> {
  try {
    return await readDecideCommit<RunRecord, T>(ctx, {
      read: () => readRun(ctx, runId, caller),
      decide(record): Decision<T> {
        const { transition, controlKey, digest } = decide(record, ctx.clock.now());
        if (!transition.ok) throw refusal(record, transition.code, transition.message);
        if (transition.events.length === 0 && transition.record === record)
          return { done: answer(record, transition) };
        const first = transition.events[0]?.seq ?? record.last_seq;
        return {
          commit: {
            ...commitOf(transition, record.version),
            ...(fence !== undefined ? { fence } : {}),
            ...(controlKey !== undefined
              ? {
                  controlAck: {
                    control_id: controlKey,
                    digest: digest ?? '',
                    ack: { ack: 'applied' as const, seq: Math.max(1, first) },
                    seq: Math.max(1, first),
                  },
                }
              : {}),
          },
          async after(stored) {
            await afterEnd(ctx, stored);
            return answer(stored, transition);
          },
        };
      },
      runId,
    });
  } catch (err) {
    if (err instanceof CommitRejected && err.code === 'control_ack_exists') {
      throw new EngineError('turn_outcome_refused', 'that outcome/ref was already reported', {
        run_id: runId,
        reason_code: 'event-duplicate',
        field: 'outcome/ref',
      });
    }
    if (err instanceof CommitRejected && err.code === 'fenced_out') {
      const current = err.current;
      throw new EngineError('fenced_out', 'the lease was lost while this write was being made', {
        run_id: runId,
        reason_code: 'session-fence-mismatch',
        ...(current !== null ? { status: current.status, epoch: current.epoch } : {}),
      });
    }
    throw err;
  }
}

/**
 * Takes the lease of a client-driven run for `owner`, or renews the fence `{owner, epoch}`. An
 * expired lease of another client is let go first (its operation abandoned as the sweeper
 * would). Returns the lease and the run (its status, queued steers, a stop seen as cancelling).
 * Throws validation_failed, not_client_driven, run_terminal, lease_held (details.expires_at),
 * fenced_out (renewing a lost fence), invalid_state (reason run_paused), run_not_found,
 * unauthorized. docs/contracts/run-lifecycle.md, "Leases".
 */
export async function takeLease(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<{ lease: LeaseGrant; run: RunRecord }> {
  const input = parse(LeaseRequest, raw, 'lease request');
  for (let pass = 0; pass < 3; pass += 1) {
    const expired = await fencedWrite(
      ctx,
      runId,
      caller,
      undefined,
      (record, now) => {
        if (
          input.epoch === undefined &&
          record.lease !== null &&
          record.lease.expires_at <= now &&
          isClientDriven(record)
        )
          return { transition: expireClientLease(record, now) };
        const transition =
          input.epoch === undefined
            ? acquireClientLease(record, input.owner, now, input.ttl_ms ?? ctx.leaseTtlMs)
            : renewClientLease(
                record,
                { owner: input.owner, epoch: input.epoch },
                now,
                input.ttl_ms ?? ctx.leaseTtlMs,
              );
        return { transition };
      },
      (stored) => stored,
    );
    const lease = leaseOf(expired);
    if (lease !== null && lease.owner === input.owner) return { lease, run: runView(expired, ctx.prices) };
    if (isTerminal(expired))
      throw refusal(expired, 'run_terminal', 'the run ended when its expired lease was let go');
  }
  throw new EngineError(
    'store_unavailable',
    'the lease kept changing hands; retry',
    { run_id: runId },
    { retryable: true },
  );
}

function isTerminal(record: RunRecord): boolean {
  return record.status === 'completed' || record.status === 'failed' || record.status === 'stopped';
}

/**
 * Lets the lease go between operations; the run waits for a client.
 * docs/contracts/run-lifecycle.md, "Leases".
 */
export async function releaseLease(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult> {
  const { fence } = parse(FenceBody, raw, 'release');
  return fencedStep(ctx, runId, caller, fence, (record, now) => releaseClientLease(record, fence, now));
}

function written(stored: RunRecord, prices: PriceTables): ClientWriteResult {
  return { run: runView(stored, prices), lease: leaseOf(stored) };
}

/** A fenced write whose answer is the run and its lease after `step` (see fencedWrite). */
function fencedStep(
  ctx: EngineContext,
  runId: string,
  caller: Caller,
  fence: Fence,
  step: (record: RunRecord, now: number) => TransitionResult,
): Promise<ClientWriteResult> {
  return fencedWrite(
    ctx,
    runId,
    caller,
    fence,
    (record, now) => ({ transition: step(record, now) }),
    (stored) => written(stored, ctx.prices),
  );
}

/** The core spec of a begin request. */
function specOf(input: BeginOperationInput): ClientOperationSpec {
  if (input.kind === 'custom') {
    return {
      kind: input.name,
      replay_safe: input.replay_safe,
      interruptible: input.interruptible,
      request: input.request,
    };
  }
  if (input.kind === 'model_turn') {
    const { tools_offered, instructions, context } = input.request;
    return {
      kind: 'model_turn',
      replay_safe: input.replay_safe,
      interruptible: input.interruptible,
      request: {
        tools_offered,
        ...(instructions !== undefined ? { instructions } : {}),
        ...(context !== undefined ? { context } : {}),
      },
    };
  }
  if (input.kind === 'tool_call') {
    const { tool, args, mutating, call_id } = input.request;
    return {
      kind: 'tool_call',
      replay_safe: input.replay_safe,
      interruptible: input.interruptible,
      request: { tool, args, mutating, ...(call_id !== undefined ? { call_id } : {}) },
    };
  }
  return {
    kind: 'compaction',
    replay_safe: input.replay_safe,
    interruptible: input.interruptible,
    request: input.request,
  };
}

/**
 * Begins an operation the client executes (budgets checked first). Returns the operation when it
 * started, or null when a budget stopped it (the run is then paused with the operation kept, or
 * failed; the lease is gone). A retried begin of the operation in flight answers with it.
 * Throws fenced_out, invalid_state (reason operation_in_flight, operation_pending,
 * requests_open, run_stopping). docs/contracts/run-lifecycle.md, "Operations", "Budgets".
 */
export async function beginOperation(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult & { operation: Operation | null }> {
  const input = parse(BeginOperationInput, raw, 'operation');
  const spec = specOf(input);
  return fencedWrite(
    ctx,
    runId,
    caller,
    input.fence,
    (record, now) => ({ transition: beginClientOperation(record, input.fence, spec, now) }),
    (stored) => ({
      ...written(stored, ctx.prices),
      operation: stored.operation !== null && stored.operation.started_at !== null ? stored.operation : null,
    }),
  );
}

/** Where a turn outcome's ref is remembered, so that a repeated one is recognized. */
const outcomeKey = (ref: string) => `turn-outcome/${ref}`;

/**
 * Reports how the operation `op_id` ended: a `result` (model turn, tool result, failure,
 * cancellation), or a `turn_outcome` document (agent.external-runtime.turn-outcome.v1, parsed
 * with its three rules; refusals name the field). Usage is charged in the same commit; a
 * cancelling run ends stopped. Returns the seq of the result event. Throws validation_failed
 * (details.reason_code `event-malformed` for a turn outcome the schema refuses), fenced_out
 * (`session-fence-mismatch`), turn_outcome_refused (details.reason_code `event-duplicate` for a
 * repeated outcome/ref, or what turnOutcomeResult detects), invalid_state (no_operation).
 * docs/contracts/run-lifecycle.md, "Operations"; docs/contracts/turn-outcome.md.
 */
export async function reportOutcome(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult & { seq: number }> {
  const input = parse(ReportOutcomeInput, raw, 'outcome');
  let outcome: TurnOutcome | undefined;
  if (input.turn_outcome !== undefined) {
    const parsed = TurnOutcome.safeParse(input.turn_outcome);
    if (!parsed.success) {
      throw new EngineError('validation_failed', 'invalid turn outcome', {
        reason_code: 'event-malformed',
        issues: parsed.error.issues.map((i) => ({ ...i, path: ['turn_outcome', ...i.path] })),
      });
    }
    outcome = parsed.data;
  }
  const direct = input.result !== undefined ? resultOf(input.result, input.op_id) : undefined;
  if (outcome !== undefined) {
    const previous = await ctx.store.getRunAndAck(runId, outcomeKey(outcome['outcome/ref']));
    if (previous.ack !== null)
      throw new EngineError(
        'turn_outcome_refused',
        `outcome ${outcome['outcome/ref']} was already reported`,
        {
          run_id: runId,
          reason_code: 'event-duplicate',
          field: 'outcome/ref',
          original_seq: previous.ack.seq,
        },
      );
  }
  return fencedWrite(
    ctx,
    runId,
    caller,
    input.fence,
    (record, now) => {
      if (outcome === undefined) {
        return {
          transition: finishClientOperation(record, input.fence, input.op_id, direct as OperationResult, now),
        };
      }
      const op = record.operation;
      // The fence first: a stale session is session-fence-mismatch, whatever the document says.
      const probe = finishClientOperation(
        record,
        input.fence,
        input.op_id,
        { kind: 'operation_cancelled', acknowledged: true },
        now,
      );
      if (!probe.ok || op === null) return { transition: probe };
      const decided = turnOutcomeResult(record, op, outcome);
      if (!decided.ok)
        throw new EngineError('turn_outcome_refused', decided.message, {
          run_id: runId,
          reason_code: decided.reason_code,
          field: decided.field,
        });
      const finished = finishClientOperation(record, input.fence, input.op_id, decided.result, now);
      return {
        transition: annotate(finished, outcome),
        controlKey: outcomeKey(outcome['outcome/ref']),
        digest: outcome['outcome/ref'],
      };
    },
    (stored, transition) => ({
      ...written(stored, ctx.prices),
      seq: transition.events[0]?.seq ?? stored.last_seq,
    }),
  );
}

/** The result event (the first) records the turn outcome it came from, fidelity included. */
function annotate(result: TransitionResult, outcome: TurnOutcome): TransitionResult {
  if (!result.ok) return result;
  const [first, ...rest] = result.events;
  if (first === undefined) return result;
  const { schema: _schema, ...fields } = outcome;
  return { ...result, events: [{ ...first, data: { ...first.data, turn_outcome: fields } }, ...rest] };
}

/**
 * Opens an approval or a question between operations. docs/contracts/run-lifecycle.md, "Controls"
 * (approve, provide_input).
 */
export async function openRequest(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult & { request_id: string }> {
  const input = parse(OpenRequestInput, raw, 'request');
  return fencedWrite(
    ctx,
    runId,
    caller,
    input.fence,
    (record, now) => ({ transition: openClientRequest(record, input.fence, input.request, now) }),
    (stored) => ({
      ...written(stored, ctx.prices),
      request_id: stored.open_requests.at(-1)?.request_id ?? '',
    }),
  );
}

/**
 * Takes every queued steer at a boundary. Returns them oldest first.
 * docs/contracts/run-lifecycle.md, "Controls" (steer).
 */
export async function takeSteers(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult & { steers: { steer_id: string; input: unknown; seq: number }[] }> {
  const { fence } = parse(FenceBody, raw, 'take steers');
  return fencedWrite(
    ctx,
    runId,
    caller,
    fence,
    (record, now) => ({ transition: takeClientSteers(record, fence, now) }),
    (stored, transition) => ({
      ...written(stored, ctx.prices),
      steers: transition.events.map((e) => ({
        steer_id: String(e.data.steer_id),
        input: e.data.input,
        seq: e.seq,
      })),
    }),
  );
}

/** Completes the run (run_completed). docs/contracts/run-lifecycle.md, "Lifecycle". */
export async function completeRun(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult> {
  const input = parse(CompleteRunInput, raw, 'complete');
  return fencedStep(ctx, runId, caller, input.fence, (record, now) =>
    completeClientRun(record, input.fence, input.outcome, input.summary, now),
  );
}

/**
 * Fails the run with the client's code (run_failed). docs/contracts/run-lifecycle.md, "Lifecycle".
 */
export async function failRun(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ClientWriteResult> {
  const input = parse(FailRunInput, raw, 'fail');
  return fencedStep(ctx, runId, caller, input.fence, (record, now) =>
    failClientRun(record, input.fence, input.code, now),
  );
}

/** The lease of a run (any run the caller may read): who holds it, until when, what is in flight. */
export async function inspectLease(ctx: EngineContext, runId: string, caller: Caller): Promise<LeaseView> {
  const record = await readRun(ctx, runId, caller);
  const lease = leaseOf(record);
  return {
    run_id: record.run_id,
    client_driven: isClientDriven(record),
    status: record.status,
    epoch: record.epoch,
    lease,
    expires_in_ms: lease === null ? null : lease.expires_at - ctx.clock.now(),
    operation: record.operation,
    queued_steers: record.queued_steers.length,
    open_requests: record.open_requests.length,
  };
}
