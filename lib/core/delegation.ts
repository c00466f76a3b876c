/**
 * Pure rules of delegation: the child run a delegate call asks for, and the envelopes the parent
 * receives (the `waiting` answer that parks it, the hand-back when the child ends).
 * docs/contracts/run-lifecycle.md ("child runs with a durable mailbox", "Budgets", the sweeper's
 * hand-back and stop-children duties); docs/contracts/tool-result.md (the tool-result envelope,
 * `child:{run_id}` resume keys).
 */
import type { z } from 'zod';
import {
  type Budgets,
  type ControlAck,
  childResumeKey,
  type DelegateArgs,
  type Evidence as EvidenceSchema,
  type HandBackPayload,
  MAX_SUBJECT_PATH_CHARS,
  type OnExceeded,
  type ReducerBinding,
  type RunEvent,
  type RunRecord,
  type RunScope,
  type Subject,
  type ToolResultEnvelope,
  type TreeAmounts,
} from '../contracts/index.ts';
import { reserveChildBudgets, treeTotals } from './budgets.ts';
import { narrowScope } from './scope.ts';

type Evidence = z.infer<typeof EvidenceSchema>;

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
  /** What the child's budgets hold of the parent's tree limits (returned at the hand-back). */
  reserved: TreeAmounts;
  /** Whether the parent's call waits for the hand-back (false: a background child). */
  wait: boolean;
  returns?: RunRecord['returns'];
  /** What the child may call and write: the delegation's `scope` within the parent's (scope.ts). */
  scope?: RunScope;
  on_exceeded: OnExceeded;
  executor_config: Record<string, unknown>;
  parent_run_id: string;
  depth: number;
  /** The create key (scoped to the parent's principal) that makes a re-dispatch find the same child. */
  create_key: string;
}

/**
 * A delegation the parent's remaining tree budget cannot cover (`child_budget_exceeded:<which>`),
 * or whose scope the parent's does not cover (`scope_widened`), or whose default subject path
 * would be too long (`delegate_subject_too_long`).
 */
export interface ChildBudgetRefusal {
  refused: `child_budget_exceeded:${string}` | 'scope_widened' | 'delegate_subject_too_long';
  message: string;
}

/**
 * The run context a child inherits from its parent's `run_started` context: the same tools and
 * instructions, as a task (`mode: "task"`), so that it ends and hands back on its own. The
 * default agent reducer's checks that would wait for a person are downgraded for the child:
 * `plan: "approve"` becomes `"track"` and `verify_completion: "ask_user"` becomes `"partial"`
 * (an unverified child completes partial, and its parent decides). A context that is not an
 * object is inherited as it is. docs/contracts/run-lifecycle.md, "Child runs".
 */
export function childContextOf(inherited: unknown): unknown {
  if (inherited === null || typeof inherited !== 'object' || Array.isArray(inherited)) return inherited;
  const context: Record<string, unknown> = { ...inherited, mode: 'task' };
  if (context.plan === 'approve') context.plan = 'track';
  if (context.verify_completion === 'ask_user') context.verify_completion = 'partial';
  return context;
}

/**
 * Plans the child of `parent` for its delegate operation `opId` at `now`. Defaults: the parent's
 * reducer, executor_config and on_exceeded; subject `{parent workspace, parent path/children/{n}}`,
 * n the parent's `counters.children` (its delegations begun so far, this one included: 1 for the
 * first); max_depth inherited as a ceiling (the smaller of the parent's and the args'); the tree
 * limits reserved from the parent ({@link reserveChildBudgets}: the args' budgets, or half of
 * what is left); the scope narrowed from the parent's ({@link narrowScope}). Returns a refusal when
 * the parent's remaining tree budget cannot cover the child, `scope_widened` when the args ask
 * for a tool or subject the parent's scope does not hold, or `delegate_subject_too_long` when
 * the default subject path would pass MAX_SUBJECT_PATH_CHARS (1 024; a given subject was checked
 * with the args).
 */
export function planChildRun(
  parent: RunRecord,
  opId: string,
  args: DelegateArgs,
  now: number,
): ChildRunPlan | ChildBudgetRefusal {
  // The begin commit of this delegate operation counted it, so the first child is number 1.
  const n = Math.max(1, parent.counters.children);
  const narrowed = narrowScope(parent.scope, args.scope);
  if (!narrowed.ok) return { refused: narrowed.code, message: narrowed.message };
  const reservation = reserveChildBudgets(parent, args.budgets ?? {}, now);
  if (!reservation.ok) {
    const { which, requested, remaining } = reservation;
    return {
      refused: `child_budget_exceeded:${which}`,
      message: `the child would hold ${requested} of ${which}; the parent has ${remaining} left`,
    };
  }
  const budgets: Budgets = reservation.budgets;
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
  const subject = args.subject ?? {
    workspace: parent.subject.workspace,
    path: `${parent.subject.path}/children/${n}`,
  };
  if (subject.path.length > MAX_SUBJECT_PATH_CHARS) {
    return {
      refused: 'delegate_subject_too_long',
      message: `the child's default subject path would be ${subject.path.length} characters (at most ${MAX_SUBJECT_PATH_CHARS}): give args.subject`,
    };
  }
  return {
    subject,
    reducer,
    input: args.input ?? null,
    ...(args.objective !== undefined ? { objective: args.objective } : {}),
    ...(args.context !== undefined ? { context: args.context } : {}),
    budgets,
    reserved: reservation.reserved,
    wait: args.wait ?? true,
    ...(args.returns !== undefined ? { returns: args.returns } : {}),
    ...(narrowed.scope !== undefined ? { scope: narrowed.scope } : {}),
    on_exceeded: args.on_exceeded ?? parent.on_exceeded,
    executor_config: args.executor_config ?? parent.executor_config,
    parent_run_id: parent.run_id,
    depth: parent.depth + 1,
    create_key: `delegate:${opId}`,
  };
}

/** Default bound on the children one run may start (AdmissionConfig.max_children_per_run). */
export const DEFAULT_MAX_CHILDREN_PER_RUN = 16;
/** Default bound on a tree's depth, the root being 0 (AdmissionConfig.max_tree_depth). */
export const DEFAULT_MAX_TREE_DEPTH = 4;

/** The deployment's tree bounds (absent: the defaults above). */
export interface TreeBounds {
  max_children_per_run?: number;
  max_tree_depth?: number;
}

/** A delegation past a deployment tree bound. */
export interface TreeBoundRefusal {
  code: 'child_limit_reached' | 'tree_depth_exceeded';
  message: string;
  /** The bound that refused it. */
  max: number;
}

/**
 * Whether `parent` may start the child of the delegate operation now in flight, under the
 * deployment's `bounds` (which apply whatever the run's budgets say; a budget can only be
 * tighter, and is checked before the operation starts): refused `child_limit_reached` when the
 * parent already started `max_children_per_run` children (`counters.children` counts the one in
 * flight too, and no refused delegation), `tree_depth_exceeded` when the child's depth
 * (`parent.depth + 1`) would pass `max_tree_depth`. Null when both allow it. Pure.
 */
export function treeBoundOf(parent: RunRecord, bounds: TreeBounds): TreeBoundRefusal | null {
  const maxDepth = bounds.max_tree_depth ?? DEFAULT_MAX_TREE_DEPTH;
  if (parent.depth + 1 > maxDepth) {
    return {
      code: 'tree_depth_exceeded',
      message: `a child of this run would be at depth ${parent.depth + 1}; the deployment allows ${maxDepth}`,
      max: maxDepth,
    };
  }
  const maxChildren = bounds.max_children_per_run ?? DEFAULT_MAX_CHILDREN_PER_RUN;
  const before = Math.max(0, parent.counters.children - 1);
  if (before >= maxChildren) {
    return {
      code: 'child_limit_reached',
      message: `this run already started ${before} children; the deployment allows ${maxChildren} per run`,
      max: maxChildren,
    };
  }
  return null;
}

function envelope(
  opId: string | undefined,
  status: ToolResultEnvelope['status'],
  extra: Partial<ToolResultEnvelope>,
): ToolResultEnvelope {
  return envelopeOf(status, undefined, { ...(opId !== undefined ? { operation_id: opId } : {}), ...extra });
}

/**
 * The delegate call's answer once the child exists: `waiting` on `child:{child_run_id}`, or for a
 * background child (`wait: false`) `succeeded`; the payload names the child and its reservation
 * of the parent's tree limits (`reserved`, recorded on the parent with this result).
 */
export function childStartedEnvelope(
  opId: string,
  childRunId: string,
  terms: { reserved: TreeAmounts; wait: boolean } = { reserved: {}, wait: true },
): ToolResultEnvelope {
  const payload = { child_run_id: childRunId, reserved: terms.reserved, wait: terms.wait };
  if (!terms.wait) return envelope(opId, 'succeeded', { payload });
  return envelope(opId, 'waiting', { resume_key: childResumeKey(childRunId), payload });
}

/** The terms a child was created with, read back from its record (a re-dispatch adopting it). */
export function childTermsOf(child: RunRecord, wait: boolean): { reserved: TreeAmounts; wait: boolean } {
  return { reserved: child.reserved ?? {}, wait };
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
    tree_usage: treeTotals(child),
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

/** A delegate message's answer once the receiver queued it: `succeeded` with `{to, ack}`. */
export function messageSentEnvelope(opId: string, to: string, ack: ControlAck): ToolResultEnvelope {
  return envelope(opId, 'succeeded', { payload: { to, ack } });
}

/** What a completed child returned: the result its `returns.schema` checks. */
export interface ChildResult {
  outcome: 'succeeded' | 'partial' | 'blocked';
  summary?: string;
  artifacts?: unknown[];
}

/**
 * The facts a checked hand-back rests on, read from the child's log: its result (the complete
 * effect's outcome, summary and artifacts) and the evidence kinds some tool envelope of it
 * reported with `ok: true` (a legacy envelope's evidence is untrusted and does not count).
 */
export interface HandBackFacts {
  result: ChildResult;
  /** The evidence entries with `ok: true` the child's tool envelopes reported, the first of each kind. */
  verified: readonly Evidence[];
}

/** The JSON Schema check the engine supplies: one message per violation (`path: message`), [] when valid. */
export type SchemaErrors = (schema: Record<string, unknown>, value: unknown) => string[];

/**
 * The hand-back of `child` checked against what its delegation asked it to return (`returns`):
 * a child that completed `succeeded` or `partial` but whose result does not satisfy
 * `returns.schema` (diagnostic `handback_schema_mismatch`, one per violation, with its path) or
 * lacks a required evidence kind (`handback_evidence_missing`, naming the kind) hands back
 * `blocked`, never `succeeded`; the payload carries the result either way. A hand-back that
 * passes carries, as its `evidence`, the entries of the required kinds the child's tools reported. A child without
 * `returns`, or one that did not complete succeeded/partial, hands back as {@link handBackEnvelope}.
 * Null while the child is live.
 */
export function checkedHandBackEnvelope(
  child: RunRecord,
  facts: HandBackFacts | null,
  schemaErrors: SchemaErrors,
): ToolResultEnvelope | null {
  const base = handBackEnvelope(child);
  const terms = child.returns;
  if (base === null || terms === undefined || facts === null) return base;
  const payload = { ...(base.payload as HandBackPayload), result: facts.result };
  if (base.status !== 'succeeded') return { ...base, payload };
  const diagnostics: ToolResultEnvelope['diagnostics'] = [];
  if (terms.schema !== undefined) {
    for (const message of schemaErrors(terms.schema, facts.result)) {
      diagnostics.push({
        code: 'handback_schema_mismatch',
        severity: 'error',
        message: `the child's result does not match returns.schema: ${message}`,
      });
    }
  }
  const evidence: Evidence[] = [];
  for (const kind of terms.evidence ?? []) {
    const entry = facts.verified.find((e) => e.kind === kind);
    if (entry !== undefined) {
      evidence.push(entry);
      continue;
    }
    diagnostics.push({
      code: 'handback_evidence_missing',
      severity: 'error',
      message: `no tool of the child reported evidence of kind "${kind}" with ok: true`,
    });
  }
  // Passed: the hand-back carries the evidence that satisfied it, as the child's tools reported it.
  if (diagnostics.length === 0) return { ...base, payload, evidence };
  return { ...base, status: 'blocked', payload, diagnostics };
}

/** The facts of a checked hand-back, from `events` of the child's log (see {@link HandBackFacts}). */
export function handBackFactsOf(child: RunRecord, events: readonly RunEvent[]): HandBackFacts | null {
  if (child.status !== 'completed') return null;
  const verified = new Map<string, Evidence>();
  let artifacts: unknown[] | undefined;
  for (const event of events) {
    if (event.kind === 'run_completed' && Array.isArray(event.data.artifacts))
      artifacts = event.data.artifacts;
    if (event.kind !== 'tool_result') continue;
    const envelope = event.data.envelope as Partial<ToolResultEnvelope> | undefined;
    if (envelope === undefined || envelope.legacy === true) continue;
    for (const e of envelope.evidence ?? [])
      if (e.ok === true && !verified.has(e.kind)) verified.set(e.kind, e);
  }
  return {
    result: {
      outcome: child.outcome,
      ...(child.summary !== undefined ? { summary: child.summary } : {}),
      ...(artifacts !== undefined ? { artifacts } : {}),
    },
    verified: [...verified.values()],
  };
}
