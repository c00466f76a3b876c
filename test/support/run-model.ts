/**
 * A model world for property tests of the run state machine (lib/core/run-machine.ts): random
 * actions (workers, reducer answers, operations, results, controls, clock, crashes, sweeper)
 * are interpreted against the current record the way the engine and the control API would call
 * the pure transitions, and every step is recorded in a trace for the properties to inspect.
 * Pure: no I/O, time is the world's own clock. docs/contracts/run-lifecycle.md, "Lifecycle",
 * "Operations", "Controls", "Budgets", "Leases, recovery and the sweeper".
 */
import fc from 'fast-check';
import {
  type Budgets,
  type Control,
  type Effect,
  isTerminalStatus,
  type OnExceeded,
  type Principal,
  type ReducerEvent,
  type RunEvent,
  type RunRecord,
  type ToolResultEnvelope,
} from '../../lib/contracts/index.ts';
import { accessOf, type Caller, capabilityHash } from '../../lib/core/authority.ts';
import { controlDigest } from '../../lib/core/controls.ts';
import { buildReducerRequest, toReducerEvent } from '../../lib/core/reducer-request.ts';
import { type ReducerValidationResult, validateReducerResponse } from '../../lib/core/reducer-validation.ts';
import {
  acquireLease,
  applyReducerAnswer,
  type ControlDecision,
  consumeSteer,
  createRun,
  decideControl,
  deliverResult,
  expireRequests,
  type Fence,
  failRun,
  finishOperation,
  gateOperation,
  hasWork,
  holdsLease,
  type OperationResult,
  releaseLease,
  renewLease,
  type StoredControlAck,
  startOperation,
  type TransitionResult,
  takeOver,
} from '../../lib/core/run-machine.ts';

// ---------------------------------------------------------------- actions

/** What the reducer answers to the inbox head, before it is fitted to the run's state. */
export interface ReduceSpec {
  op: 'none' | 'tool' | 'model' | 'ask' | 'approval';
  mutating: boolean;
  replaySafe: boolean;
  interruptible: boolean;
  /** Answer one of the model's unanswered tool calls (index), or none. */
  forCall: number | null;
  digest: number;
  expiresInMs: number | null;
  /** Withdraw one open request (index), or none. */
  withdraw: number | null;
  checkpoint: boolean;
  gap: boolean;
  end: 'none' | 'complete' | 'fail';
  outcome: 'succeeded' | 'partial' | 'blocked';
  /** Ask for an operation even while one is pending (the machine then fails the run). */
  clash: boolean;
}

/** How the started operation ends, fitted to its kind (model turn or tool call). */
export interface FinishSpec {
  kind: 'ok' | 'waiting' | 'tool_failed' | 'op_failed' | 'cancelled';
  toolStatus: 'failed' | 'retryable' | 'blocked';
  calls: number;
  inputTokens: number;
  outputTokens: number;
  key: number;
  withUsage: boolean;
  flag: boolean;
}

export type ControlSpec =
  | { command: 'stop'; reason: string | null }
  | { command: 'pause' }
  | { command: 'resume'; increase: Budgets | null }
  | { command: 'steer'; input: string }
  | { command: 'approve'; pick: number; stale: boolean; decision: 'approved' | 'rejected' }
  | { command: 'provide_input'; pick: number; value: string };

export type Action =
  | WorkAction
  | { t: 'acquire'; worker: number }
  | { t: 'reduce'; spec: ReduceSpec }
  | { t: 'gate'; digest: number; expiresInMs: number | null }
  | { t: 'start' }
  | { t: 'finish'; spec: FinishSpec }
  | { t: 'deliver'; pick: number; known: boolean; ok: boolean }
  | { t: 'consume_steer' }
  | { t: 'release'; wakeDelayMs: number }
  | { t: 'renew' }
  | { t: 'advance'; ms: number }
  | { t: 'crash'; extraMs: number }
  | { t: 'sweep' }
  | { t: 'expire' }
  | { t: 'zombie'; which: 'renew' | 'release' | 'finish'; pick: number }
  | { t: 'control'; controlId: number; caller: number; spec: ControlSpec };

/**
 * The engine's next move, resolved against the run when it is interpreted: take the lease (or
 * let the sweeper take an expired one), answer the inbox head, gate or start the pending
 * operation, finish the one in flight, consume a steer, or release.
 */
export type WorkAction = {
  t: 'work';
  worker: number;
  gate: boolean;
  digest: number;
  reduce: ReduceSpec;
  finish: FinishSpec;
  /** When no worker can move the run: the control id the owner answers, resumes or steers with. */
  controlId: number;
  stale: boolean;
};

/** The initial run: random small budgets and what to do when one is exceeded. */
export interface Start {
  budgets: Budgets;
  onExceeded: OnExceeded;
}

export const WORKERS = ['w1', 'w2', 'w3'] as const;
export const DIGESTS = ['d1', 'd2', 'd3'] as const;
export const CONTROL_IDS = 12;
export const CAPABILITY_SECRET = 'cap-secret';
export const OWNER: Principal = { kind: 'user', id: 'alice' };

/** Callers of the control API, and whether each may control the run. */
export const CALLERS: readonly { caller: Caller; authorized: boolean }[] = [
  { caller: { principal: OWNER }, authorized: true },
  { caller: { principal: { kind: 'system', id: 'sweeper' } }, authorized: true },
  { caller: { principal: { kind: 'user', id: 'mallory' } }, authorized: false },
  { caller: { principal: { kind: 'user', id: 'mallory' }, capability: CAPABILITY_SECRET }, authorized: true },
  { caller: { principal: { kind: 'user', id: 'mallory' }, capability: 'guessed' }, authorized: false },
  { caller: { principal: { kind: 'agent', id: 'alice' } }, authorized: false },
];

const optionalNat = (max: number) => fc.option(fc.nat(max), { nil: null });

const reduceSpec: fc.Arbitrary<ReduceSpec> = fc.record({
  op: fc.constantFrom('none', 'tool', 'tool', 'model', 'model', 'ask', 'approval'),
  mutating: fc.boolean(),
  replaySafe: fc.boolean(),
  interruptible: fc.boolean(),
  forCall: optionalNat(3),
  digest: fc.nat(DIGESTS.length - 1),
  expiresInMs: fc.option(fc.integer({ min: 1, max: 20_000 }), { nil: null }),
  withdraw: fc.option(fc.nat(3), { nil: null, freq: 3 }),
  checkpoint: fc.boolean(),
  gap: fc.boolean(),
  end: fc.nat(15).map((n) => (n === 0 ? 'complete' : n === 1 ? 'fail' : 'none')),
  outcome: fc.constantFrom('succeeded', 'partial', 'blocked'),
  clash: fc.constant(false),
});

const finishSpec: fc.Arbitrary<FinishSpec> = fc.record({
  kind: fc.constantFrom('ok', 'ok', 'ok', 'waiting', 'tool_failed', 'op_failed', 'cancelled'),
  toolStatus: fc.constantFrom('failed', 'retryable', 'blocked'),
  calls: fc.nat(2),
  inputTokens: fc.nat(40),
  outputTokens: fc.nat(20),
  key: fc.nat(2),
  withUsage: fc.boolean(),
  flag: fc.boolean(),
});

const budgetIncrease: fc.Arbitrary<Budgets> = fc.record(
  {
    max_operations: fc.integer({ min: 1, max: 3 }),
    max_model_calls: fc.integer({ min: 1, max: 3 }),
    max_turns: fc.integer({ min: 1, max: 3 }),
    max_total_tokens: fc.integer({ min: 1, max: 100 }),
  },
  { requiredKeys: [] },
);

const controlSpec: fc.Arbitrary<ControlSpec> = fc.oneof(
  {
    arbitrary: fc.record({
      command: fc.constant('stop' as const),
      reason: fc.option(fc.constantFrom('user', 'done')),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ command: fc.constant('pause' as const) }), weight: 4 },
  {
    arbitrary: fc.record({ command: fc.constant('resume' as const), increase: fc.option(budgetIncrease) }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      command: fc.constant('steer' as const),
      input: fc.constantFrom('faster', 'stop that', 'x'),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      command: fc.constant('approve' as const),
      pick: fc.nat(3),
      stale: fc.boolean(),
      decision: fc.constantFrom('approved' as const, 'approved' as const, 'rejected' as const),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      command: fc.constant('provide_input' as const),
      pick: fc.nat(3),
      value: fc.constantFrom('yes', 'no'),
    }),
    weight: 3,
  },
);

const reduceAction = fc
  .tuple(reduceSpec, fc.nat(19))
  .map(([spec, roll]): ReduceSpec => ({ ...spec, clash: roll === 0 }));

/** One random action; weights favour the ones that move a run forward. */
export const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    arbitrary: fc.record({
      t: fc.constant('work' as const),
      worker: fc.nat(WORKERS.length - 1),
      gate: fc.nat(3).map((n) => n === 0),
      digest: fc.nat(DIGESTS.length - 1),
      reduce: reduceAction,
      finish: finishSpec,
      controlId: fc.nat(CONTROL_IDS - 1),
      stale: fc.nat(4).map((n) => n === 0),
    }),
    weight: 24,
  },
  {
    arbitrary: fc.record({ t: fc.constant('acquire' as const), worker: fc.nat(WORKERS.length - 1) }),
    weight: 6,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('reduce' as const),
      spec: reduceAction,
    }),
    weight: 10,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('gate' as const),
      digest: fc.nat(DIGESTS.length - 1),
      expiresInMs: fc.option(fc.integer({ min: 1, max: 20_000 }), { nil: null }),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ t: fc.constant('start' as const) }), weight: 6 },
  { arbitrary: fc.record({ t: fc.constant('finish' as const), spec: finishSpec }), weight: 6 },
  {
    arbitrary: fc.record({
      t: fc.constant('deliver' as const),
      pick: fc.nat(3),
      known: fc.boolean(),
      ok: fc.boolean(),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ t: fc.constant('consume_steer' as const) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('release' as const), wakeDelayMs: fc.nat(1_000) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('renew' as const) }), weight: 1 },
  {
    arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 30_000 }) }),
    weight: 3,
  },
  { arbitrary: fc.record({ t: fc.constant('crash' as const), extraMs: fc.nat(5_000) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('sweep' as const) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('expire' as const) }), weight: 1 },
  {
    arbitrary: fc.record({
      t: fc.constant('zombie' as const),
      which: fc.constantFrom('renew' as const, 'release' as const, 'finish' as const),
      pick: fc.nat(5),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('control' as const),
      controlId: fc.nat(CONTROL_IDS - 1),
      caller: fc.constantFrom(0, 0, 0, 0, 1, 1, 3, 2, 4, 5),
      spec: controlSpec,
    }),
    weight: 8,
  },
);

export const startArb: fc.Arbitrary<Start> = fc.record({
  budgets: fc.record(
    {
      max_operations: fc.integer({ min: 1, max: 6 }),
      max_model_calls: fc.integer({ min: 1, max: 4 }),
      max_turns: fc.integer({ min: 1, max: 4 }),
      max_total_tokens: fc.integer({ min: 1, max: 150 }),
      max_consecutive_op_failures: fc.integer({ min: 1, max: 3 }),
      max_wall_ms: fc.integer({ min: 1_000, max: 400_000 }),
    },
    { requiredKeys: [] },
  ),
  onExceeded: fc.constantFrom('pause' as const, 'fail' as const),
});

// ---------------------------------------------------------------- the trace

/** The reducer answer the world built for the inbox head, and what the validator said of it. */
export interface ReducerCall {
  event: ReducerEvent | null;
  effects: Effect[];
  validation: ReducerValidationResult | null;
}

export interface ControlCall {
  control: Control;
  digest: string;
  previous: StoredControlAck | null;
  /** Whether the caller may act on the run (core/authority.ts); when not, nothing was decided or written. */
  authorized: boolean;
  decision: ControlDecision | null;
}

/** One interpreted action. `result` is null when its precondition did not hold (no call made). */
export interface Step {
  /** The action as interpreted (a `work` action is recorded as the move it resolved to). */
  action: ConcreteAction;
  /** The action as generated. */
  generated: Action;
  before: RunRecord;
  after: RunRecord;
  /** Clock when the machine was called. */
  now: number;
  /** The fence presented, for transitions that take one. */
  fence: Fence | null;
  result: TransitionResult | null;
  /** Machine function called (for messages). */
  fn: string | null;
  /** Events this step appended (a transition's or a control's). */
  events: RunEvent[];
  reducer?: ReducerCall;
  control?: ControlCall;
  /** Op id the policy gate held, for gate steps. */
  gatedOpId?: string;
}

export interface Trace {
  start: Start;
  initial: RunRecord;
  initialEvents: RunEvent[];
  steps: Step[];
  final: RunRecord;
  events: RunEvent[];
}

// ---------------------------------------------------------------- the world

const RUN_ID = 'run-p';
const T0 = 1_000_000;

function envelope(status: ToolResultEnvelope['status'], resumeKey?: string): ToolResultEnvelope {
  return {
    envelope: 'raisin.tool-result/1',
    status,
    ...(resumeKey !== undefined ? { resume_key: resumeKey } : {}),
    reads: [],
    writes: [],
    artifact_refs: [],
    evidence: [],
    diagnostics: [],
    suggested_next_actions: [],
  };
}

/** Runs `actions` from a fresh run and records every step. Deterministic in its inputs. */
export function runWorld(start: Start, actions: readonly Action[]): Trace {
  let now = T0;
  const created = createRun(
    {
      run_id: RUN_ID,
      principal: OWNER,
      subject: { workspace: 'ai', path: '/chats/p' },
      reducer: { function_path: '/lib/test/reducer' },
      input: 'hello',
      budgets: start.budgets,
      on_exceeded: start.onExceeded,
      capability_hash: capabilityHash(CAPABILITY_SECRET),
    },
    now,
  );
  let record = created.record;
  const events: RunEvent[] = [...created.events];
  const acks = new Map<string, StoredControlAck>();
  const fences: Fence[] = [];
  let fence: Fence | null = null;
  const steps: Step[] = [];

  for (const generated of actions) {
    const before = record;
    const action: ConcreteAction =
      generated.t === 'work' ? resolveWork(record, fence, now, generated) : generated;
    const step: Step = {
      action,
      generated,
      before,
      after: before,
      now,
      fence: null,
      result: null,
      fn: null,
      events: [],
    };
    const call = (fn: string, result: TransitionResult, usedFence: Fence | null = null) => {
      step.fn = fn;
      step.result = result;
      step.fence = usedFence;
      step.now = now;
      if (result.ok) {
        record = result.record;
        step.events = result.events;
      }
    };
    const holding = fence !== null && holdsLease(record, fence, now);

    switch (action.t) {
      case 'acquire': {
        const owner: string = WORKERS[action.worker] ?? 'w1';
        const result = acquireLease(record, owner, now);
        call('acquireLease', result);
        if (result.ok) {
          fence = { owner, epoch: result.record.epoch };
          fences.push(fence);
        }
        break;
      }
      case 'reduce': {
        const head = record.inbox[0];
        // The engine calls the reducer under the lease between operations; a terminal run's
        // remaining events are delivered by the sweeper's bookkeeping (checkpoints only).
        const between = holding && record.status === 'running' && record.operation?.started_at == null;
        if (head === undefined || !(between || isTerminalStatus(record.status))) break;
        const persisted = events[head - 1];
        const event = persisted === undefined ? null : toReducerEvent(persisted);
        const effects = event === null ? [] : buildEffects(record, event, action.spec);
        const stateRev = record.state_rev + 1;
        const validation =
          event === null
            ? null
            : validateReducerResponse(buildReducerRequest(record, { rev: record.state_rev }, event), {
                contract: 'raisin.agent-run.reducer/1',
                state: { rev: stateRev },
                state_rev: stateRev,
                effects,
              });
        step.reducer = { event, effects, validation };
        if (validation === null) break;
        if (!validation.ok) {
          call('failRun', failRun(record, `reducer_refused:${validation.code}`, now, head));
          break;
        }
        call(
          'applyReducerAnswer',
          applyReducerAnswer(
            record,
            { event_seq: head, state_rev: stateRev, effects, projection: undefined, diagnostics: [] },
            now,
          ),
        );
        break;
      }
      case 'gate': {
        const op = record.operation;
        const eligible =
          holding &&
          record.status === 'running' &&
          op !== null &&
          op.started_at === null &&
          op.kind === 'tool_call' &&
          op.approved_digest === undefined &&
          !record.open_requests.some((r) => r.kind === 'approval' && r.effect_id === op.effect_id);
        if (!eligible || op === null) break;
        step.gatedOpId = op.op_id;
        const subject = {
          digest: DIGESTS[action.digest] ?? 'd1',
          summary: 'change',
          tool: 'update',
          tool_version: '1.0.0',
        };
        call('gateOperation', gateOperation(record, subject, now, action.expiresInMs ?? undefined));
        break;
      }
      case 'start':
        if (holding) call('startOperation', startOperation(record, now));
        break;
      case 'finish': {
        const op = record.operation;
        if (fence === null || op === null || op.started_at === null) break;
        call(
          'finishOperation',
          finishOperation(record, fence, operationResult(record, action.spec), now),
          fence,
        );
        break;
      }
      case 'deliver': {
        const parked = record.open_requests.filter((r) => r.kind === 'result');
        const picked = parked[action.pick % Math.max(parked.length, 1)];
        const key = action.known && picked?.kind === 'result' ? picked.resume_key : `k${action.pick}`;
        call('deliverResult', deliverResult(record, key, envelope(action.ok ? 'succeeded' : 'failed'), now));
        break;
      }
      case 'consume_steer':
        if (holding && record.status === 'running') call('consumeSteer', consumeSteer(record, now));
        break;
      case 'release':
        if (fence !== null) call('releaseLease', releaseLease(record, fence, now, action.wakeDelayMs), fence);
        break;
      case 'renew':
        if (fence !== null) call('renewLease', renewLease(record, fence, now), fence);
        break;
      case 'advance':
        now += action.ms;
        break;
      case 'crash': {
        // The worker dies: its lease runs out, then the sweeper takes the run over.
        if (record.lease === null) break;
        now = Math.max(now, record.lease.expires_at) + 1 + action.extraMs;
        call('takeOver', takeOver(record, now));
        break;
      }
      case 'sweep':
        call('takeOver', takeOver(record, now));
        break;
      case 'expire':
        call('expireRequests', expireRequests(record, now));
        break;
      case 'zombie': {
        const stale = fences.filter((f) => !holdsLease(record, f, now));
        const zombie = stale[action.pick % Math.max(stale.length, 1)];
        if (zombie === undefined) break;
        const fn = `${action.which}${action.which === 'finish' ? 'Operation' : 'Lease'}`;
        const result =
          action.which === 'renew'
            ? renewLease(record, zombie, now)
            : action.which === 'release'
              ? releaseLease(record, zombie, now)
              : finishOperation(record, zombie, { kind: 'operation_cancelled', acknowledged: false }, now);
        call(fn, result, zombie);
        break;
      }
      case 'control': {
        const control = buildControl(record, action);
        const digest = controlDigest(control);
        const previous = acks.get(control.control_id) ?? null;
        const entry = CALLERS[action.caller] ?? CALLERS[0];
        const access = entry === undefined ? null : accessOf(record, entry.caller);
        const authorized = access?.ok === true;
        if (!authorized) {
          // The engine answers 404 (or 403 capability_invalid) before deciding: nothing is written.
          step.control = { control, digest, previous, authorized, decision: null };
          step.fn = 'accessOf';
          break;
        }
        const decision = decideControl(record, control, digest, previous, now);
        step.control = { control, digest, previous, authorized, decision };
        step.fn = 'decideControl';
        if (decision.kind !== 'duplicate') {
          record = decision.record;
          step.events = decision.events;
          // The store keeps the ack of an applied or rejected control, but never overwrites the
          // original ack of an id with the rejection of its reuse.
          if (decision.kind === 'applied' || decision.reason !== 'control_id_reused') {
            acks.set(control.control_id, { digest, seq: decision.seq });
          }
        }
        break;
      }
    }
    step.after = record;
    events.push(...step.events);
    steps.push(step);
  }
  return { start, initial: created.record, initialEvents: created.events, steps, final: record, events };
}

export type ConcreteAction = Exclude<Action, WorkAction>;

/**
 * The move a step worker would make next on `record` (docs/architecture.md, "The step", the step
 * loop).
 */
export function resolveWork(
  record: RunRecord,
  fence: Fence | null,
  now: number,
  w: WorkAction,
): ConcreteAction {
  const holding = fence !== null && holdsLease(record, fence, now);
  if (isTerminalStatus(record.status)) {
    return record.inbox.length > 0 ? { t: 'reduce', spec: w.reduce } : { t: 'advance', ms: 1 };
  }
  if (!holding) {
    if (record.lease !== null && record.lease.expires_at <= now) return { t: 'sweep' };
    if (record.lease === null && (record.status !== 'queued' || !hasWork(record)))
      return outsideWorld(record, w);
    return { t: 'acquire', worker: w.worker };
  }
  const op = record.operation;
  if (op !== null && op.started_at !== null) return { t: 'finish', spec: w.finish };
  if (record.inbox.length > 0) return { t: 'reduce', spec: w.reduce };
  if (op !== null) {
    const gated = record.open_requests.some((r) => r.kind === 'approval' && r.effect_id === op.effect_id);
    if (w.gate && op.kind === 'tool_call' && op.approved_digest === undefined && !gated) {
      return { t: 'gate', digest: w.digest, expiresInMs: null };
    }
    if (record.open_requests.length === 0) return { t: 'start' };
  }
  if (record.queued_steers.length > 0) return { t: 'consume_steer' };
  return { t: 'release', wakeDelayMs: 0 };
}

/** What the owner does for a run no worker can move: answer a request, resume, or steer. */
function outsideWorld(record: RunRecord, w: WorkAction): ConcreteAction {
  const control = (spec: ControlSpec): ConcreteAction => ({
    t: 'control',
    controlId: w.controlId,
    caller: 0,
    spec,
  });
  if (record.status === 'paused')
    return control({
      command: 'resume',
      increase: { max_operations: 2, max_model_calls: 2, max_turns: 2, max_total_tokens: 100 },
    });
  const request = record.open_requests[w.digest % Math.max(record.open_requests.length, 1)];
  if (request === undefined) return control({ command: 'steer', input: 'go on' });
  if (request.kind === 'result') return { t: 'deliver', pick: w.digest, known: true, ok: !w.stale };
  if (request.kind === 'input') return control({ command: 'provide_input', pick: w.digest, value: 'yes' });
  const approvals = record.open_requests.filter((r) => r.kind === 'approval');
  return control({
    command: 'approve',
    pick: approvals.indexOf(request),
    stale: w.stale,
    decision: w.gate ? 'rejected' : 'approved',
  });
}

/** Fits a reduce spec to the run so the answer passes the contract's validation rules. */
export function buildEffects(record: RunRecord, event: ReducerEvent, spec: ReduceSpec): Effect[] {
  const rev = record.state_rev + 1;
  const out: Record<string, unknown>[] = [];
  if (isTerminalStatus(record.status) || event.kind === 'stopped') {
    if (spec.checkpoint) out.push({ kind: 'checkpoint', reason: 'bookkeeping' });
    return out.map((e, i) => ({ ...e, effect_id: `${rev}:${i}` }) as Effect);
  }
  let op = spec.end !== 'none' ? 'none' : spec.op;
  const startsOperation = op === 'tool' || op === 'model';
  if (startsOperation && record.operation !== null && !spec.clash) op = 'none';
  const withdrawn = new Set<string>();
  const open = record.open_requests;
  if (spec.withdraw !== null && open.length > 0) {
    const r = open[spec.withdraw % open.length];
    if (r !== undefined) withdrawn.add(r.request_id);
  }
  if (op !== 'none' && event.kind === 'user_input') for (const r of open) withdrawn.add(r.request_id);
  for (const request_id of withdrawn) out.push({ kind: 'withdraw_request', request_id });
  if (spec.checkpoint) out.push({ kind: 'checkpoint', summary: `rev ${rev}` });
  const blocked = spec.end === 'complete' && spec.outcome === 'blocked';
  if (spec.gap && (op === 'ask' || blocked)) {
    out.push({
      kind: 'capability_gap',
      gap: {
        requested_outcome: 'x',
        missing: 'tool',
        inspected: [],
        why_insufficient: 'none fits',
        proposed: { layer: 'tool', description: 'add one' },
      },
    });
  }
  const calls = record.unanswered_calls;
  switch (op) {
    case 'tool': {
      const forCall =
        spec.forCall !== null && calls.length > 0 ? calls[spec.forCall % calls.length] : undefined;
      out.push({
        kind: 'call_tool',
        tool: spec.mutating ? 'update' : 'lookup',
        args: { rev },
        mutating: spec.mutating,
        replay_safe: spec.replaySafe,
        interruptible: spec.interruptible,
        ...(forCall !== undefined ? { for_call_id: forCall } : {}),
      });
      break;
    }
    case 'model':
      out.push({
        kind: 'request_model_turn',
        tools_offered: [],
        tool_results: calls.map((call_id) => ({ call_id })),
      });
      break;
    case 'ask':
      out.push({
        kind: 'ask_user',
        question: 'which one?',
        ...(spec.expiresInMs !== null ? { expires_in_ms: spec.expiresInMs } : {}),
      });
      break;
    case 'approval':
      out.push({
        kind: 'request_approval',
        subject: {
          kind: 'plan',
          digest: DIGESTS[spec.digest] ?? 'd1',
          digest_alg: 'sha256:rfc8785',
          summary: 'plan',
        },
        ...(spec.expiresInMs !== null ? { expires_in_ms: spec.expiresInMs } : {}),
      });
      break;
  }
  if (spec.end === 'complete') out.push({ kind: 'complete', outcome: spec.outcome, summary: 'done' });
  if (spec.end === 'fail') out.push({ kind: 'fail', code: 'domain_failed', message: 'gave up' });
  return out.map((e, i) => ({ ...e, effect_id: `${rev}:${i}` }) as Effect);
}

/** The executor's report for the started operation, consistent with its kind. */
function operationResult(record: RunRecord, spec: FinishSpec): OperationResult {
  const op = record.operation;
  const usage = { input_tokens: spec.inputTokens, output_tokens: spec.outputTokens };
  if (spec.kind === 'op_failed') {
    return {
      kind: 'operation_failed',
      error_class: 'transient',
      retryable: spec.flag,
      outcome_unknown: !spec.flag,
      message: 'boom',
      ...(spec.withUsage ? { usage } : {}),
    };
  }
  if (spec.kind === 'cancelled') {
    return { kind: 'operation_cancelled', acknowledged: spec.flag, ...(spec.withUsage ? { usage } : {}) };
  }
  if (op?.kind === 'model_turn') {
    const tool_calls = Array.from({ length: spec.calls }, (_, i) => ({
      call_id: `call-${record.turn + 1}-${i}`,
      name: 'lookup',
      args: { i },
    }));
    return {
      kind: 'model_turn_completed',
      message: { text: 'thinking' },
      tool_calls,
      finish_reason: tool_calls.length > 0 ? 'tool_calls' : 'stop',
      usage,
    };
  }
  if (spec.kind === 'waiting') return { kind: 'tool_result', envelope: envelope('waiting', `k${spec.key}`) };
  if (spec.kind === 'tool_failed') return { kind: 'tool_result', envelope: envelope(spec.toolStatus) };
  return { kind: 'tool_result', envelope: envelope('succeeded') };
}

/** The control an action sends, aimed at the run's open requests where it names one. */
function buildControl(record: RunRecord, action: Extract<ConcreteAction, { t: 'control' }>): Control {
  const control_id = `c${action.controlId}`;
  const spec = action.spec;
  switch (spec.command) {
    case 'stop':
      return { control_id, command: 'stop', ...(spec.reason !== null ? { reason: spec.reason } : {}) };
    case 'pause':
      return { control_id, command: 'pause' };
    case 'resume':
      return {
        control_id,
        command: 'resume',
        ...(spec.increase !== null ? { budget_increase: spec.increase } : {}),
      };
    case 'steer':
      return { control_id, command: 'steer', input: spec.input };
    case 'approve': {
      const approvals = record.open_requests.filter((r) => r.kind === 'approval');
      const request = approvals[spec.pick % Math.max(approvals.length, 1)];
      const current = request?.kind === 'approval' ? request.subject.digest : 'd1';
      const subject_digest = spec.stale ? `${current}-stale` : current;
      return {
        control_id,
        command: 'approve',
        request_id: request?.request_id ?? `${RUN_ID}/req/${spec.pick + 1}`,
        subject_digest,
        decision: spec.decision,
      };
    }
    case 'provide_input': {
      const inputs = record.open_requests.filter((r) => r.kind === 'input');
      const request = inputs[spec.pick % Math.max(inputs.length, 1)];
      return {
        control_id,
        command: 'provide_input',
        request_id: request?.request_id ?? `${RUN_ID}/req/${spec.pick + 1}`,
        value: spec.value,
      };
    }
  }
}
