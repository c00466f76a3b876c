/**
 * Operations: starting the pending one (budgets checked first) and recording how it ended.
 * Seed: agent-runs, "Operations", "Budgets"; agent-run-contracts, "The tool-result envelope".
 */
import {
  childOfResumeKey,
  type NewRunEvent,
  type OpenRequest,
  type RunRecord,
  type ToolCall,
  type ToolResultEnvelope,
  type Usage,
} from '../../contracts/index.ts';
import { checkBudgets } from '../budgets.ts';
import { isDelegation } from './delegation.ts';
import {
  append,
  closeAllRequests,
  type Draft,
  ev,
  finish,
  operationGated,
  prepend,
  reject,
  seal,
  type TransitionResult,
  terminalFields,
} from './draft.ts';
import { type Fence, holdsLease } from './lease.ts';
import { failRun, pauseRun } from './lifecycle.ts';

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
