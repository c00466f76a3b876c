/**
 * Properties of the run state machine over random action sequences: workers taking, renewing,
 * releasing and losing leases; reducer answers with every effect kind; operations that start,
 * finish in every way, park or get gated by approvals; delivered results; controls from
 * authorized and unauthorized callers with reused ids and stale digests; clock jumps, crashes
 * and the sweeper. Every step is checked against the invariants of the seed (agent-runs,
 * "Lifecycle", "Operations", "Controls", "Budgets", "Leases, recovery and the sweeper").
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUDGET_LIMITS,
  type Control,
  isTerminalStatus,
  RUN_STATUSES,
  RunEvent,
  type RunEventKind,
  RunRecord,
  safeParseRunRecord,
  type Usage,
} from '../../lib/contracts/index.ts';
import { canonicalJson } from '../../lib/core/canonical.ts';
import { holdsLease, operationGated, REDUCER_VISIBLE_KINDS } from '../../lib/core/run-machine.ts';
import {
  type Action,
  actionArb,
  CALLERS,
  runWorld,
  type Step,
  startArb,
  type Trace,
} from '../support/run-model.ts';

const RUNS = 300;
const scenario = fc.record({
  start: startArb,
  actions: fc.array(actionArb, { minLength: 1, maxLength: 60, size: 'max' }),
});

const USAGE_FIELDS: (keyof Omit<Usage, 'cost'>)[] = [
  'turns',
  'operations',
  'model_calls',
  'tool_calls',
  'input_tokens',
  'output_tokens',
];
const COUNTERS = ['next_op', 'next_req', 'next_steer', 'checkpoints'] as const;
/** What may still be appended to an ended run: rejected controls and the reducer's bookkeeping. */
const AFTER_TERMINAL: ReadonlySet<RunEventKind> = new Set<RunEventKind>([
  'control_rejected',
  'reducer_answered',
  'checkpoint_written',
]);

function where(i: number, step: Step): string {
  return `step ${i} ${JSON.stringify(step.action)} (${step.fn ?? 'no call'}, ${step.before.status} -> ${step.after.status})`;
}

function check(condition: boolean, message: () => string): void {
  if (!condition) throw new Error(message());
}

/** The log: seq contiguous from 1 across all steps, every event well formed, last_seq in step. */
function checkLog(trace: Trace): void {
  trace.events.forEach((e, k) => {
    check(e.seq === k + 1, () => `event ${k} has seq ${e.seq}, expected ${k + 1}`);
    check(RunEvent.safeParse(e).success, () => `event ${e.seq} (${e.kind}) does not parse`);
  });
  check(
    trace.final.last_seq === trace.events.length,
    () => `last_seq ${trace.final.last_seq} != ${trace.events.length}`,
  );
  trace.steps.forEach((step, i) => {
    step.events.forEach((e, k) => {
      check(
        e.seq === step.before.last_seq + k + 1,
        () => `${where(i, step)}: event ${e.kind} seq ${e.seq} not contiguous`,
      );
    });
    check(
      step.after.last_seq === step.before.last_seq + step.events.length,
      () =>
        `${where(i, step)}: last_seq ${step.after.last_seq} after ${step.events.length} events from ${step.before.last_seq}`,
    );
  });
}

/** The inbox names undelivered reducer-visible events, oldest first, each deliverable. */
function checkInbox(record: RunRecord, trace: Trace, i: number, step: Step): void {
  let last = record.reduced_seq;
  for (const seq of record.inbox) {
    check(
      seq > last && seq <= record.last_seq,
      () => `${where(i, step)}: inbox ${JSON.stringify(record.inbox)} out of order`,
    );
    const e = trace.events[seq - 1];
    check(
      e !== undefined && REDUCER_VISIBLE_KINDS.has(e.kind),
      () => `${where(i, step)}: inbox seq ${seq} is ${e?.kind}`,
    );
    last = seq;
  }
}

/** Whether a worker holding the lease can do anything: hasWork must not send one to spin. */
function progressPossible(record: RunRecord): boolean {
  const op = record.operation;
  if (record.inbox.length > 0) return true;
  if (record.queued_steers.length > 0 && (op === null || op.started_at === null)) return true;
  return (
    op !== null && op.started_at === null && !operationGated(record) && record.open_requests.length === 0
  );
}

/** How an ended run ended: reason, time and outcome (empty for a live run). */
function ending(record: RunRecord): string {
  if (!('terminal_reason' in record)) return '';
  const outcome = 'outcome' in record ? record.outcome : null;
  return canonicalJson([record.terminal_reason, record.finished_at, outcome]);
}

/** Per-step invariants of the record. */
function checkRecord(trace: Trace, i: number, step: Step): void {
  const { before, after } = step;
  const at = () => where(i, step);
  if (after !== before) check(RunRecord.safeParse(after).success, () => `${at()}: record does not parse`);
  checkInbox(after, trace, i, step);

  // Terminal statuses are final, and an ended run holds no lease and no operation.
  if (isTerminalStatus(before.status)) {
    check(after.status === before.status, () => `${at()}: terminal ${before.status} became ${after.status}`);
    check(ending(after) === ending(before), () => `${at()}: terminal reason, time or outcome changed`);
    for (const e of step.events)
      check(AFTER_TERMINAL.has(e.kind), () => `${at()}: ${e.kind} appended to an ended run`);
  }
  if (isTerminalStatus(after.status)) {
    check(
      after.lease === null && after.operation === null,
      () => `${at()}: ended run has a lease or an operation`,
    );
    check(
      after.open_requests.length === 0 && after.queued_steers.length === 0,
      () => `${at()}: ended run keeps requests`,
    );
  }

  // One operation; in flight means running or cancelling with no request open beside it.
  const op = after.operation;
  if (op !== null && op.started_at !== null) {
    check(after.open_requests.length === 0, () => `${at()}: operation in flight with open requests`);
    check(
      after.status === 'running' || after.status === 'cancelling',
      () => `${at()}: in flight while ${after.status}`,
    );
  }
  // A resting run has a wake deadline: now for queued, the first request expiry for waiting.
  if (after.status === 'waiting') {
    check(after.open_requests.length > 0, () => `${at()}: waiting with no open request`);
    const expiries = after.open_requests.flatMap((r) => (r.expires_at === null ? [] : [r.expires_at]));
    const due = expiries.length > 0 ? Math.min(...expiries) : null;
    check(after.wake_at === due, () => `${at()}: waiting wakes at ${after.wake_at}, first expiry at ${due}`);
  }
  if (after.status === 'queued') check(after.wake_at !== null, () => `${at()}: queued with no wake deadline`);
  if (after.status === 'running' || after.status === 'cancelling')
    check(after.lease !== null, () => `${at()}: no lease`);
  if (after.pause_requested !== undefined) {
    check(
      op !== null && op.started_at !== null,
      () => `${at()}: pause_requested kept with no operation in flight`,
    );
  }

  // Usage, counters and budgets never go down; budgets are positive.
  for (const f of USAGE_FIELDS)
    check(after.usage[f] >= before.usage[f], () => `${at()}: usage.${f} decreased`);
  for (const c of COUNTERS)
    check(after.counters[c] >= before.counters[c], () => `${at()}: counters.${c} decreased`);
  check(after.reduced_seq >= before.reduced_seq, () => `${at()}: reduced_seq decreased`);
  check(after.state_rev >= before.state_rev, () => `${at()}: state_rev decreased`);
  for (const b of BUDGET_LIMITS) {
    const limit = after.budgets[b];
    if (limit === undefined) continue;
    check(limit > 0, () => `${at()}: budget ${b} is ${limit}`);
    check(limit >= (before.budgets[b] ?? 0), () => `${at()}: budget ${b} decreased`);
  }

  // Fencing: the epoch never decreases, and moves whenever a lease is taken or cleared.
  check(after.epoch >= before.epoch, () => `${at()}: epoch decreased`);
  if ((before.lease === null) !== (after.lease === null)) {
    check(
      after.epoch > before.epoch,
      () => `${at()}: lease ${before.lease ? 'cleared' : 'taken'} without an epoch bump`,
    );
  }
  if (before.lease !== null && after.lease !== null) {
    check(
      after.lease.owner === before.lease.owner && after.epoch === before.epoch,
      () => `${at()}: lease changed hands`,
    );
  }
}

/** Per-step properties of what the step did. */
function checkStep(trace: Trace, i: number, step: Step, gated: Map<string, string>): void {
  const { action, before, after, result } = step;
  const at = () => where(i, step);

  // Workers: a stale or expired fence never commits; an ended run is never leased.
  if (step.fence !== null && result !== null && !holdsLease(before, step.fence, step.now)) {
    check(!result.ok && result.code === 'lease_lost', () => `${at()}: a lost fence committed`);
  }
  if (action.t === 'zombie' && result !== null) check(!result.ok, () => `${at()}: a zombie worker committed`);
  // A holder cannot release while its operation is in flight: it finishes the operation first.
  const inFlight = before.operation !== null && before.operation.started_at !== null;
  if (action.t === 'release' && result !== null && inFlight && step.fence !== null) {
    if (holdsLease(before, step.fence, step.now)) {
      check(
        !result.ok && result.code === 'invalid_state',
        () => `${at()}: released with an operation in flight`,
      );
    }
  }
  if (action.t === 'acquire' && result?.ok === true) {
    check(!isTerminalStatus(before.status), () => `${at()}: ended run leased`);
    check(progressPossible(after), () => `${at()}: leased a run with nothing a worker can do`);
  }

  // The reducer sees every inbox event, and the world's answers are valid by construction.
  if (step.reducer !== undefined) {
    check(step.reducer.event !== null, () => `${at()}: inbox head has no reducer event form`);
    const v = step.reducer.validation;
    check(v?.ok === true, () => `${at()}: generated answer refused: ${v?.ok === false ? v.code : 'none'}`);
  }

  // Gates: a gated operation only starts with the approval of the gate's digest.
  if (action.t === 'gate' && result?.ok === true && step.gatedOpId !== undefined) {
    const request = after.open_requests.at(-1);
    if (request?.kind === 'approval') gated.set(step.gatedOpId, request.subject.digest);
  }
  for (const e of step.events) {
    if (e.kind !== 'operation_started' || e.operation_id === undefined) continue;
    const digest = gated.get(e.operation_id);
    if (digest !== undefined) {
      check(
        after.operation?.approved_digest === digest,
        () => `${at()}: gated ${e.operation_id} started without approval`,
      );
    }
    // Budgets are checked when an operation begins.
    const { budgets: b, usage: u } = before;
    const model = after.operation?.kind === 'model_turn';
    const within =
      (b.max_operations === undefined || u.operations < b.max_operations) &&
      (b.max_total_tokens === undefined || u.input_tokens + u.output_tokens < b.max_total_tokens) &&
      (!model || b.max_turns === undefined || u.turns < b.max_turns) &&
      (!model || b.max_model_calls === undefined || u.model_calls < b.max_model_calls) &&
      (b.max_wall_ms === undefined || step.now - before.created_at < b.max_wall_ms) &&
      (b.max_consecutive_op_failures === undefined ||
        before.counters.consecutive_op_failures < b.max_consecutive_op_failures);
    check(within, () => `${at()}: ${e.operation_id} started over budget`);
  }
  if (step.events.some((e) => e.kind === 'budget_exceeded')) {
    const expected = trace.start.onExceeded === 'pause' ? 'paused' : 'failed';
    check(after.status === expected, () => `${at()}: budget exceeded left the run ${after.status}`);
    if (expected === 'paused')
      check(after.operation?.op_id === before.operation?.op_id, () => `${at()}: op not kept`);
  }
  if (step.control !== undefined) checkControl(step, at);
}

/** Acks: duplicates are free, rejections only log, approvals need the current digest. */
function checkControl(step: Step, at: () => string): void {
  const c = step.control;
  if (c === undefined) return;
  const { before, after } = step;
  const { control, decision, previous, authorized, digest } = c;
  const expectedAuth = CALLERS[(step.action as Extract<Action, { t: 'control' }>).caller]?.authorized;
  check(authorized === expectedAuth, () => `${at()}: authorized ${authorized}, expected ${expectedAuth}`);
  if (!authorized || decision === null) {
    // Refused before any decision (404, or 403 capability_invalid): no event, no change at all.
    check(
      decision === null && step.events.length === 0 && after === before,
      () => `${at()}: a caller without authority changed the run`,
    );
    return;
  }

  if (previous !== null && previous.digest === digest) {
    check(
      decision.kind === 'duplicate' && decision.original_seq === previous.seq,
      () => `${at()}: not a duplicate`,
    );
    check(step.events.length === 0 && after === before, () => `${at()}: a duplicate changed the run`);
    return;
  }
  const ended = isTerminalStatus(before.status);
  const expectedReason = previous !== null ? 'control_id_reused' : ended ? 'run_terminal' : null;
  if (expectedReason !== null) {
    check(
      decision.kind === 'rejected' && decision.reason === expectedReason,
      () => `${at()}: expected ${expectedReason}`,
    );
  }
  if (decision.kind === 'duplicate')
    throw new Error(`${at()}: duplicate without a stored ack of the same digest`);
  if (ended) {
    // An ended run's log is final: the rejection writes nothing, its seq is the last event.
    check(
      step.events.length === 0 && after === before && decision.seq === before.last_seq,
      () => `${at()}: a control changed an ended run`,
    );
    return;
  }
  check(decision.seq === step.events[0]?.seq, () => `${at()}: ack seq is not the first event's`);
  if (decision.kind === 'rejected') {
    check(
      step.events.length === 1 &&
        step.events[0]?.kind === 'control_rejected' &&
        step.events[0]?.data.reason === decision.reason,
      () => `${at()}: a rejection logs one control_rejected event`,
    );
    const strip = (r: RunRecord) => canonicalJson({ ...r, last_seq: 0, updated_at: 0 });
    check(strip(after) === strip(before), () => `${at()}: a rejected control changed more than the log`);
  }
  if (control.command === 'approve') {
    const request = before.open_requests.find((r) => r.request_id === control.request_id);
    const current = request?.kind === 'approval' ? request.subject.digest : undefined;
    if (decision.kind === 'applied') {
      check(
        current === control.subject_digest,
        () => `${at()}: approval applied with digest ${control.subject_digest}`,
      );
      check(
        !after.open_requests.some((r) => r.request_id === control.request_id),
        () => `${at()}: request still open`,
      );
    } else if (expectedReason === null && current !== undefined && current !== control.subject_digest) {
      check(
        decision.reason === 'digest_mismatch',
        () => `${at()}: stale digest rejected with ${decision.reason}`,
      );
    }
  }
  if (control.command === 'stop' && decision.kind === 'applied') {
    const inFlight = before.operation !== null && before.operation.started_at !== null;
    check(
      after.status === (inFlight ? 'cancelling' : 'stopped'),
      () => `${at()}: stop left the run ${after.status}`,
    );
  }
  if (control.command === 'steer' && decision.kind === 'applied') {
    check(after.queued_steers.length === before.queued_steers.length + 1, () => `${at()}: steer not queued`);
  }
  if (decision.kind === 'applied') {
    const first = step.events[0]?.kind;
    check(
      first !== undefined && ACK_EVENT[control.command].includes(first),
      () => `${at()}: ${control.command} acked with the seq of ${first}`,
    );
  }
}

/** The event an applied control's ack seq names, per command. */
const ACK_EVENT: Record<Control['command'], RunEventKind[]> = {
  stop: ['stopped', 'stop_requested'],
  pause: ['paused', 'pause_requested'],
  resume: ['resumed'],
  steer: ['steer_queued'],
  approve: ['request_resolved'],
  provide_input: ['request_resolved'],
};

/**
 * Steers are consumed in the order they were queued, and every queued steer is consumed,
 * discarded (counted by steers_discarded) or still queued.
 */
function checkSteers(trace: Trace): void {
  const queued: string[] = [];
  const consumed: string[] = [];
  let discarded = 0;
  trace.steps.forEach((step, i) => {
    for (const e of step.events) {
      if (e.kind === 'steer_queued') queued.push(String(e.data.steer_id));
      if (e.kind === 'steer_consumed') consumed.push(String(e.data.steer_id));
      if (e.kind === 'steers_discarded') discarded += Number(e.data.count);
    }
    const waiting = step.after.queued_steers.map((q) => q.steer_id);
    const accounted = [
      ...consumed,
      ...queued.slice(consumed.length, consumed.length + discarded),
      ...waiting,
    ];
    check(
      canonicalJson(accounted) === canonicalJson(queued),
      () =>
        `${where(i, step)}: steers queued ${queued.length}, consumed ${consumed.length}, discarded ${discarded}, waiting ${waiting.length}`,
    );
  });
}

/**
 * Crash safety of operations: a non-replay-safe operation is dispatched at most once, a replay
 * dispatches the same op_id with a higher attempt, and an operation's outcome is recorded once
 * and never dispatched again after that.
 */
function checkOperations(trace: Trace): void {
  const attempts = new Map<string, number>();
  const finished = new Set<string>();
  trace.steps.forEach((step, i) => {
    const at = () => where(i, step);
    for (const e of step.events) {
      const id = e.operation_id;
      if (id === undefined) continue;
      if (e.kind === 'operation_started') {
        const attempt = Number(e.data.attempt);
        const previous = attempts.get(id);
        check(!finished.has(id), () => `${at()}: ${id} dispatched again after its outcome was recorded`);
        check(
          previous === undefined || attempt > previous,
          () => `${at()}: ${id} attempt ${attempt} after ${previous}`,
        );
        check(
          previous === undefined || step.after.operation?.replay_safe === true,
          () => `${at()}: non-replay-safe ${id} dispatched twice`,
        );
        attempts.set(id, attempt);
      }
      if (OUTCOME_KINDS.has(e.kind) && (step.fn === 'finishOperation' || step.fn === 'takeOver')) {
        check(!finished.has(id), () => `${at()}: second outcome ${e.kind} for ${id}`);
        finished.add(id);
      }
    }
  });
}

/** Events that record how a dispatched operation ended (request_opened: parked for a result). */
const OUTCOME_KINDS: ReadonlySet<RunEventKind> = new Set<RunEventKind>([
  'model_turn_completed',
  'tool_result',
  'operation_failed',
  'operation_cancelled',
  'request_opened',
]);

function checkTrace(trace: Trace): void {
  checkLog(trace);
  checkSteers(trace);
  checkOperations(trace);
  const gated = new Map<string, string>();
  trace.steps.forEach((step, i) => {
    checkRecord(trace, i, step);
    checkStep(trace, i, step, gated);
  });
}

describe('run state machine under random action sequences', () => {
  it('keeps the log, lifecycle, fencing, usage, budget and control invariants at every step', () => {
    fc.assert(
      fc.property(scenario, ({ start, actions }) => {
        checkTrace(runWorld(start, actions));
      }),
      { numRuns: RUNS },
    );
  });

  it('parses every record, and every record given another status, as the union does', () => {
    // safeParseRunRecord goes to the shapes of the record's status first (the commit path's
    // seal); its answer, success or refusal with its issues, must be the union's.
    const statuses = RUN_STATUSES;
    let refused = 0;
    fc.assert(
      fc.property(scenario, fc.nat(7), ({ start, actions }, shift) => {
        for (const step of runWorld(start, actions).steps) {
          const other = statuses[(statuses.indexOf(step.after.status) + 1 + shift) % statuses.length];
          for (const value of [step.after, { ...step.after, status: other }, { ...step.after, lease: 7 }]) {
            const union = RunRecord.safeParse(value);
            const dispatched = safeParseRunRecord(value);
            expect(dispatched.success).toBe(union.success);
            if (!union.success) refused += 1;
            expect(canonicalJson(dispatched.success ? dispatched.data : dispatched.error.issues)).toBe(
              canonicalJson(union.success ? union.data : union.error.issues),
            );
          }
        }
      }),
      { numRuns: RUNS / 10 },
    );
    expect(refused).toBeGreaterThan(0);
  });

  it('gives byte-identical records and event lists when the same actions are applied twice', () => {
    fc.assert(
      fc.property(scenario, ({ start, actions }) => {
        const first = runWorld(start, actions);
        const second = runWorld(start, actions);
        expect(canonicalJson(second.final)).toBe(canonicalJson(first.final));
        expect(canonicalJson(second.events)).toBe(canonicalJson(first.events));
      }),
      { numRuns: RUNS / 3 },
    );
  });
});
