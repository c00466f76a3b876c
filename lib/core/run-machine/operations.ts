/**
 * Operations: starting the pending one (budgets checked first) and recording how it ended.
 * docs/contracts/run-lifecycle.md, "Operations", "Budgets"; docs/contracts/tool-result.md, "The
 * tool-result envelope".
 */
import {
  childOfResumeKey,
  type NewRunEvent,
  type OpenRequest,
  type Operation,
  type RunRecord,
  type StoredContextManifest,
  saturatingAdd,
  type ToolCall,
  type ToolResultEnvelope,
  TREE_LIMITS,
  type Usage,
} from '../../contracts/index.ts';
import { checkBudgets } from '../budgets.ts';
import { keptForRetry, outagePauseReason, pausesForOutage } from '../provider-outage.ts';
import { type CompactionResult, finishCompaction } from './compaction.ts';
import { isDelegation, noteDelegationResult } from './delegation.ts';
import {
  append,
  closeAllRequests,
  type Draft,
  discardedSteers,
  ev,
  finish,
  operationGated,
  prepend,
  reject,
  seal,
  type TransitionResult,
  terminalFields,
  withProviderCalls,
} from './draft.ts';
import { type Fence, holdsLease } from './lease.ts';
import { failRun, pauseRun } from './lifecycle.ts';

/**
 * Starts the pending operation if budgets allow (checked in the fixed order of `checkBudgets`).
 * Exceeded with on_exceeded pause → paused with the operation kept; fail → failed
 * `budget_exceeded:<which>` (`child_budget_exceeded:<which>` for a child run's tree limit, which
 * its parent reserved for it). A gated operation (open approval) cannot start, nor one of a
 * server-driven run with steers queued (`steers_queued`: they are consumed first).
 * docs/contracts/run-lifecycle.md, "Budgets"; "Operations"; "Controls" (steer: consumed at the next
 * safe boundary).
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
    // A child's tree limits are its reservation of its parent's budget.
    const ofTree =
      record.parent_run_id !== undefined && (TREE_LIMITS as readonly string[]).includes(exceeded.which);
    const reason = `${ofTree ? 'child_budget_exceeded' : 'budget_exceeded'}:${exceeded.which}`;
    const next =
      record.on_exceeded === 'fail'
        ? failRun(seal(appended.draft), reason, now)
        : pauseRun(seal(appended.draft), reason, now);
    return prepend(appended.events, next);
  }
  // Every boundary consumes the queued steers before the next operation starts (the reducer sees
  // them first). A worker whose staged start is replayed on a record a steer reached meanwhile
  // is refused here, and recomputes. A client-driven run's client takes its steers itself.
  if (record.reducer !== null && record.queued_steers.length > 0)
    return reject('steers_queued', 'queued steers are consumed before the next operation starts');
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

/** How an operation ended, as the executor reports it. */
export type OperationResult =
  | {
      kind: 'model_turn_completed';
      message: { text?: string | null };
      tool_calls: ToolCall[];
      finish_reason: string;
      usage: { input_tokens: number; output_tokens: number };
      /** Provider calls the turn made, retries included (default 1). */
      calls?: number;
      /** Of `calls`, those already counted in usage as they were made (noteProviderCall; default 0). */
      counted?: number;
      /**
       * What the context compiler put in the turn's transcript and what it cut, and why: stored on
       * the model_turn_completed event (`data.manifest`, not shown to the reducer).
       */
      manifest?: StoredContextManifest;
    }
  | {
      kind: 'tool_result';
      envelope: ToolResultEnvelope;
      /**
       * For a `waiting` envelope: how long (ms) its result request stays open before it closes
       * `expired` (the tool's `result_expires_in_ms`, else the deployment's default). Absent: it
       * never expires (a child run's hand-back, bounded by the child's own budgets).
       */
      result_expires_in_ms?: number;
    }
  | {
      kind: 'operation_failed';
      error_class: string;
      retryable: boolean;
      outcome_unknown: boolean;
      message: string;
      usage?: { input_tokens: number; output_tokens: number };
      /** Provider calls a failed model turn made, retries included (default 1). */
      calls?: number;
      /** Of `calls`, those already counted in usage as they were made (noteProviderCall; default 0). */
      counted?: number;
      /** Structured detail of the failure (e.g. a replay divergence), kept in the event. */
      detail?: Record<string, unknown>;
    }
  | {
      kind: 'operation_cancelled';
      acknowledged: boolean;
      usage?: { input_tokens: number; output_tokens: number };
      /** Cancelled after its start commit but before it was dispatched: it never ran. */
      before_dispatch?: true;
    }
  | CompactionResult;

/**
 * Usage after the started operation `op` ended with `result`: counted in the same commit. A
 * model turn kept for a retry (a provider outage) counts its calls, not a turn; the calls it
 * counted as they were made (`counted`, already in `usage`) are not counted again.
 */
function usageAfter(usage: Usage, op: Operation, result: OperationResult, kept = false): Usage {
  let next: Usage = { ...usage, operations: usage.operations + 1 };
  if (op.kind === 'model_turn') {
    const calls = 'calls' in result && result.calls !== undefined ? result.calls : 1;
    const counted = 'counted' in result && result.counted !== undefined ? result.counted : 0;
    next = withProviderCalls(next, op.provider_calls ?? 0, Math.max(0, calls - counted));
    if (!kept) next.turns += 1;
  } else if (op.kind === 'tool_call' && !(result.kind === 'operation_cancelled' && result.before_dispatch)) {
    next.tool_calls += 1; // a call cancelled before its dispatch was never made
  }
  const tokens = 'usage' in result && result.usage !== undefined ? result.usage : null;
  if (tokens !== null) {
    next.input_tokens = saturatingAdd(next.input_tokens, tokens.input_tokens);
    next.output_tokens = saturatingAdd(next.output_tokens, tokens.output_tokens);
  }
  return next;
}

/**
 * The provider calls a model turn made in all: those counted as made across its dispatches
 * (`op.provider_calls`, a takeover's included) and those its last answer reported beyond them.
 */
function turnCalls(op: Operation, result: { calls?: number; counted?: number }): number {
  return (op.provider_calls ?? 0) + Math.max(0, (result.calls ?? 1) - (result.counted ?? 0));
}

/**
 * A tool's `waiting` answer: the run parks behind a result request for its resume_key, open
 * for `expiresInMs` (then the sweeper closes it `expired`; the reducer sees request_closed).
 */
function parkOn(
  draft: Draft,
  record: RunRecord,
  op: Operation,
  resumeKey: string,
  tool: string,
  now: number,
  expiresInMs: number | undefined,
): Draft {
  const n = draft.counters.next_req + 1;
  const request: OpenRequest = {
    kind: 'result',
    request_id: `${record.run_id}/req/${n}`,
    effect_id: op.effect_id,
    resume_key: resumeKey,
    op_id: op.op_id,
    tool,
    ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
    opened_at: now,
    expires_at: expiresInMs !== undefined ? now + expiresInMs : null,
  };
  const child = isDelegation(op) ? childOfResumeKey(resumeKey) : null;
  return {
    ...draft,
    open_requests: [...draft.open_requests, request],
    counters: { ...draft.counters, next_req: n },
    ...(child !== null && !draft.live_children.includes(child)
      ? { live_children: [...draft.live_children, child] }
      : {}),
    ...(child !== null && draft.child_terms[child] === undefined
      ? { child_terms: { ...draft.child_terms, [child]: { reserved: {}, wait: true } } }
      : {}),
  } as Draft;
}

/** The result event of `op` (or the parked request), and the draft with the turn and failure counters. */
function recordResult(draft: Draft, record: RunRecord, op: Operation, result: OperationResult, now: number) {
  const idFields = { operation_id: op.op_id, effect_id: op.effect_id };
  const failures = draft.counters.consecutive_op_failures;
  const withFailures = (n: number) => ({ ...draft.counters, consecutive_op_failures: n });
  switch (result.kind) {
    case 'model_turn_completed': {
      const data = {
        message: result.message,
        tool_calls: result.tool_calls,
        finish_reason: result.finish_reason,
        usage: result.usage,
        ...(result.manifest !== undefined ? { manifest: result.manifest } : {}),
      };
      const next = {
        ...draft,
        counters: withFailures(0),
        turn: record.turn + 1,
        unanswered_calls: result.tool_calls.map((c) => c.call_id),
      } as Draft;
      return { draft: next, events: [ev('model_turn_completed', now, data, idFields)] };
    }
    case 'tool_result': {
      const env = result.envelope;
      const failed = env.status === 'failed' || env.status === 'retryable' || env.status === 'blocked';
      const base = isDelegation(op) ? noteDelegationResult(draft, env) : draft;
      const counted = {
        ...base,
        counters: { ...base.counters, consecutive_op_failures: failed ? failures + 1 : 0 },
      } as Draft;
      const tool = op.effect.kind === 'call_tool' ? op.effect.tool : op.kind;
      if (env.status === 'waiting' && env.resume_key !== undefined && record.status !== 'cancelling') {
        const parked = parkOn(counted, record, op, env.resume_key, tool, now, result.result_expires_in_ms);
        const request = parked.open_requests.at(-1);
        return { draft: parked, events: [ev('request_opened', now, { ...request }, idFields)] };
      }
      const data = { ...(op.call_id !== undefined ? { call_id: op.call_id } : {}), tool, envelope: env };
      return { draft: counted, events: [ev('tool_result', now, data, idFields)] };
    }
    case 'operation_failed': {
      const data = {
        error_class: result.error_class,
        retryable: result.retryable,
        outcome_unknown: result.outcome_unknown,
        message: result.message,
        ...(op.kind === 'model_turn' ? { attempts: turnCalls(op, result) } : {}),
        ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
        ...(result.detail !== undefined ? { detail: result.detail } : {}),
      };
      const next = { ...draft, counters: withFailures(failures + 1) } as Draft;
      return { draft: next, events: [ev('operation_failed', now, data, idFields)] };
    }
    case 'operation_cancelled': {
      const data = {
        acknowledged: result.acknowledged,
        ...(result.before_dispatch === true ? { before_dispatch: true } : {}),
        ...(op.call_id !== undefined ? { call_id: op.call_id } : {}),
      };
      return { draft, events: [ev('operation_cancelled', now, data, idFields)] };
    }
    case 'compaction_completed':
      return { draft, events: [] }; // a stop during a compaction: nothing for the reducer
  }
}

/**
 * Records the outcome of the started operation: the result event, usage updated in the same
 * commit, the operation cleared. A tool answering `waiting` with a resume_key parks the run
 * behind a result request. A cancelling run ends stopped once the operation returns (its usage
 * still counted); a pause asked for during the operation is applied now.
 * docs/contracts/run-lifecycle.md, "Operations" (six outcomes), "Controls" (stop), "Budgets"
 * (usage).
 */
export function finishOperation(
  record: RunRecord,
  fence: Fence,
  result: OperationResult,
  now: number,
): TransitionResult {
  if (result.kind === 'compaction_completed' && record.status !== 'cancelling')
    return finishCompaction(record, fence, result, now);
  const op = record.operation;
  if (!holdsLease(record, fence, now)) return reject('lease_lost', 'the lease is no longer ours');
  if (op === null || op.started_at === null) return reject('no_operation', 'no operation in flight');
  if (result.kind === 'operation_failed' && pausesForOutage(record, op, result)) {
    const usage = usageAfter(record.usage, op, result, true);
    return pauseForOutage({ ...record, operation: null, usage } as Draft, op, result, now);
  }
  const cleared = { ...record, operation: null, usage: usageAfter(record.usage, op, result) } as Draft;
  const recorded = recordResult(cleared, record, op, result, now);
  const draft = recorded.draft;
  const newEvents: NewRunEvent[] = [...recorded.events];
  if (record.status === 'cancelling') {
    newEvents.push(ev('stopped', now, { reason: record.stop_reason }));
    const closing = closeAllRequests(draft, now, 'stopped');
    newEvents.push(...closing.events);
    newEvents.push(...discardedSteers(draft, now));
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

/**
 * A model turn's provider stayed unavailable: `provider_outage` (what failed, after how many
 * calls) is logged, the turn is kept for resume (attempt + 1) and the run pauses; the reducer
 * sees nothing of it. Usage counts the calls made.
 */
function pauseForOutage(
  cleared: Draft,
  op: Operation,
  result: Extract<OperationResult, { kind: 'operation_failed' }>,
  now: number,
): TransitionResult {
  const data = {
    error_class: result.error_class,
    message: result.message,
    attempts: turnCalls(op, result),
    ...(result.detail !== undefined ? { detail: result.detail } : {}),
  };
  const idFields = { operation_id: op.op_id, effect_id: op.effect_id };
  const failures = cleared.counters.consecutive_op_failures + 1;
  const kept = {
    ...cleared,
    operation: keptForRetry(op),
    counters: { ...cleared.counters, consecutive_op_failures: failures },
  } as Draft;
  const appended = append(kept, [ev('provider_outage', now, data, idFields)], now);
  return prepend(appended.events, pauseRun(seal(appended.draft), outagePauseReason(result.error_class), now));
}
