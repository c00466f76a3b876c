/**
 * Pure rules of delegation: the child run a delegate call asks for, and the envelopes the parent
 * receives (the `waiting` answer that parks it, the hand-back when the child ends).
 * Seed: agent-runs ("child runs with a durable mailbox", "Budgets", the sweeper's hand-back and
 * stop-children duties); agent-run-contracts (the tool-result envelope, `child:{run_id}` resume keys).
 */
import {
  type Budgets,
  childResumeKey,
  type DelegateArgs,
  type HandBackPayload,
  type OnExceeded,
  type ReducerBinding,
  type RunRecord,
  type Subject,
  type ToolResultEnvelope,
} from '../contracts/index.ts';
import { envelopeOf } from './tool-result-validation.ts';

/** What a delegate call creates: the child's subject, reducer, budgets and lineage. */
export interface ChildRunPlan {
  subject: Subject;
  /** null when neither the args nor the parent name a reducer (the call then fails). */
  reducer: Pick<ReducerBinding, 'function_path' | 'handler'> | null;
  input: unknown;
  objective?: string;
  context?: unknown;
  budgets: Budgets;
  on_exceeded: OnExceeded;
  executor_config: Record<string, unknown>;
  parent_run_id: string;
  depth: number;
  /** The create key (scoped to the parent's principal) that makes a re-dispatch find the same child. */
  create_key: string;
}

/**
 * Plans the child of `parent` for its delegate operation `opId`. Defaults: the parent's reducer,
 * executor_config and on_exceeded; subject `{parent workspace, parent path/children/{n}}`, n the
 * parent's `counters.children` (its delegations begun so far, this one included: 1 for the first);
 * max_depth inherited as a ceiling (the smaller of the parent's and the args').
 */
export function planChildRun(parent: RunRecord, opId: string, args: DelegateArgs): ChildRunPlan {
  // The begin commit of this delegate operation counted it, so the first child is number 1.
  const n = Math.max(1, parent.counters.children);
  const budgets: Budgets = { ...(args.budgets ?? {}) };
  const ceiling = parent.budgets.max_depth;
  if (ceiling !== undefined) budgets.max_depth = Math.min(ceiling, budgets.max_depth ?? ceiling);
  const reducer =
    args.reducer ??
    (parent.reducer !== null
      ? {
          function_path: parent.reducer.function_path,
          ...(parent.reducer.handler !== undefined ? { handler: parent.reducer.handler } : {}),
        }
      : null);
  return {
    subject: args.subject ?? {
      workspace: parent.subject.workspace,
      path: `${parent.subject.path}/children/${n}`,
    },
    reducer,
    input: args.input ?? null,
    ...(args.objective !== undefined ? { objective: args.objective } : {}),
    ...(args.context !== undefined ? { context: args.context } : {}),
    budgets,
    on_exceeded: args.on_exceeded ?? parent.on_exceeded,
    executor_config: args.executor_config ?? parent.executor_config,
    parent_run_id: parent.run_id,
    depth: parent.depth + 1,
    create_key: `delegate:${opId}`,
  };
}

function envelope(
  opId: string | undefined,
  status: ToolResultEnvelope['status'],
  extra: Partial<ToolResultEnvelope>,
): ToolResultEnvelope {
  return envelopeOf(status, undefined, { ...(opId !== undefined ? { operation_id: opId } : {}), ...extra });
}

/** The delegate call's answer once the child exists: `waiting` on `child:{child_run_id}`. */
export function childStartedEnvelope(opId: string, childRunId: string): ToolResultEnvelope {
  return envelope(opId, 'waiting', {
    resume_key: childResumeKey(childRunId),
    payload: { child_run_id: childRunId },
  });
}

/** The delegate call's answer when no child could be created (bad args, unknown reducer, …). */
export function delegationFailedEnvelope(
  opId: string,
  errorClass: NonNullable<ToolResultEnvelope['error_class']>,
  code: string,
  message: string,
): ToolResultEnvelope {
  return envelope(opId, 'failed', {
    error_class: errorClass,
    diagnostics: [{ code, severity: 'error', message }],
    retry_policy: { retryable: false },
  });
}

/**
 * The hand-back of an ended child (null while it is live): completed succeeded / partial →
 * `succeeded`, completed blocked → `blocked`, failed → `failed` (diagnostic `child_failed`),
 * stopped → `failed` (diagnostic `child_stopped`). The payload ({@link HandBackPayload}) names
 * the child, its end and its usage. `operation_id` is the parent's delegate operation, set when
 * the hand-back is delivered.
 */
/** The child's usage counters (a view's computed cost left out). */
function usageCounts(child: RunRecord): Record<string, number> {
  const { cost: _cost, ...counts } = child.usage;
  return counts;
}

export function handBackEnvelope(child: RunRecord): ToolResultEnvelope | null {
  if (child.status !== 'completed' && child.status !== 'failed' && child.status !== 'stopped') return null;
  const payload: HandBackPayload = {
    child_run_id: child.run_id,
    status: child.status,
    ...(child.status === 'completed' ? { outcome: child.outcome } : {}),
    ...(child.status === 'completed' && child.summary !== undefined ? { summary: child.summary } : {}),
    terminal_reason: child.terminal_reason,
    usage: usageCounts(child),
  };
  if (child.status === 'completed') {
    return envelope(undefined, child.outcome === 'blocked' ? 'blocked' : 'succeeded', { payload });
  }
  const code = child.status === 'failed' ? 'child_failed' : 'child_stopped';
  return envelope(undefined, 'failed', {
    payload,
    error_class: 'tool_error',
    diagnostics: [
      {
        code,
        severity: 'error',
        message: `child run ${child.run_id} ${child.status}: ${child.terminal_reason}`,
      },
    ],
    retry_policy: { retryable: false },
  });
}
