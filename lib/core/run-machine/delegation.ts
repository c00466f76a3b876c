/**
 * Delegation in the run machine: which operations are delegations, a child's hand-back, and an
 * ended run's owed duties. docs/contracts/run-lifecycle.md, sweeper ("delivers owed child
 * hand-backs, stops children of ended parents").
 */
import {
  CHILD_BUDGET_REFUSAL_PREFIX,
  ChildStartedPayload,
  childResumeKey,
  DELEGATE_MESSAGE_TOOL,
  DELEGATE_TOOL,
  DELEGATION_REFUSALS,
  HandBackPayload,
  isTerminalStatus,
  type Operation,
  type OwedDuty,
  type RunEvent,
  type RunRecord,
  saturatingAdd,
  type ToolResultEnvelope,
  TREE_LIMITS,
  type TreeAmounts,
} from '../../contracts/index.ts';
import { append, type Draft, ev, finish, reject, seal, type TransitionResult } from './draft.ts';
import { deliverResult, queueSteer } from './requests.ts';

/** Whether `op` is a delegation: a call of the reserved delegate tool, which core executes. */
export function isDelegation(op: Operation): boolean {
  return op.effect.kind === 'call_tool' && op.effect.tool === DELEGATE_TOOL;
}

/** Whether `op` calls the reserved delegate-message tool (the mailbox), which core executes. */
export function isDelegateMessage(op: Operation): boolean {
  return op.effect.kind === 'call_tool' && op.effect.tool === DELEGATE_MESSAGE_TOOL;
}

/** `amounts` added to `into`, per tree limit. */
function addAmounts(into: TreeAmounts, amounts: TreeAmounts): TreeAmounts {
  const sum: TreeAmounts = { ...into };
  for (const which of TREE_LIMITS) {
    const n = amounts[which];
    if (n !== undefined && n > 0) sum[which] = saturatingAdd(sum[which] ?? 0, n);
  }
  return sum;
}

/** Whether a delegation's failed `envelope` is a refusal that wrote nothing (DELEGATION_REFUSALS). */
function isRefusal(envelope: ToolResultEnvelope): boolean {
  const code = envelope.diagnostics?.[0]?.code;
  if (code === undefined) return false;
  return (
    (DELEGATION_REFUSALS as readonly string[]).includes(code) || code.startsWith(CHILD_BUDGET_REFUSAL_PREFIX)
  );
}

/**
 * The draft after a delegation's result `envelope`: a created child joins `live_children` with its
 * terms (its reservation, whether the parent waits on it); a hand-back answered at once (a child
 * that had already ended when a re-dispatch found it) charges its usage; a refusal that wrote
 * nothing (DELEGATION_REFUSALS: bad args, quota, tree bounds, budget) takes back the `counters.children` its start
 * counted. Other results change nothing. docs/contracts/run-lifecycle.md, "Budgets" (children
 * reserve against the parent).
 */
export function noteDelegationResult(draft: Draft, envelope: ToolResultEnvelope): Draft {
  const handBack = HandBackPayload.safeParse(envelope.payload);
  if (handBack.success) {
    return { ...draft, tree_usage: addAmounts(draft.tree_usage, handBack.data.tree_usage ?? {}) } as Draft;
  }
  if (envelope.status === 'failed' && isRefusal(envelope)) {
    // Refused before anything was written: the delegation begun is not a child started.
    const children = Math.max(0, draft.counters.children - 1);
    return { ...draft, counters: { ...draft.counters, children } } as Draft;
  }
  if (envelope.status !== 'waiting' && envelope.status !== 'succeeded') return draft;
  const started = ChildStartedPayload.safeParse(envelope.payload);
  if (!started.success) return draft;
  const { child_run_id: child, reserved, wait } = started.data;
  return {
    ...draft,
    live_children: draft.live_children.includes(child)
      ? draft.live_children
      : [...draft.live_children, child],
    child_terms: { ...draft.child_terms, [child]: { reserved, wait } },
  } as Draft;
}

/**
 * The hand-back of a child run that ended: the child leaves `live_children`, its reservation
 * returns to the parent and its usage (with its descendants', the payload's `tree_usage`) is
 * charged to the parent's `tree_usage`, in this one commit. When the parent still waits on
 * `child:{child_run_id}` the child's outcome (`envelope`) is delivered as that call's tool_result
 * (like {@link deliverResult}); a background child's (delegated with `wait: false`) is queued as
 * a steer `{from_child, hand_back}` the parent sees as `user_input`. Rejected `run_terminal` for
 * an ended parent and `nothing_to_do` when the hand-back was already taken (so a repeated delivery
 * adds nothing). docs/contracts/run-lifecycle.md, sweeper ("delivers owed child hand-backs"),
 * "Budgets".
 */
export function childEnded(
  record: RunRecord,
  childRunId: string,
  envelope: ToolResultEnvelope,
  now: number,
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  const key = childResumeKey(childRunId);
  const waiting = record.open_requests.some((r) => r.kind === 'result' && r.resume_key === key);
  const live = record.live_children.includes(childRunId);
  if (!waiting && !live) return reject('nothing_to_do', 'the hand-back was already taken');
  const charged = HandBackPayload.safeParse(envelope.payload);
  const { [childRunId]: terms, ...otherTerms } = record.child_terms;
  const next = seal({
    ...record,
    live_children: record.live_children.filter((c) => c !== childRunId),
    child_terms: otherTerms,
    tree_usage: addAmounts(record.tree_usage, charged.success ? (charged.data.tree_usage ?? {}) : {}),
    updated_at: now,
  });
  if (!waiting) {
    if (terms === undefined || terms.wait) return { ok: true, record: next, events: [] };
    const queued = queueSteer(
      { ...next } as Draft,
      `handback:${childRunId}`,
      {
        from_child: childRunId,
        hand_back: envelope,
      },
      now,
    );
    return finish(queued.draft, queued.events);
  }
  const request = record.open_requests.find((r) => r.kind === 'result' && r.resume_key === key);
  const opId = request?.kind === 'result' ? request.op_id : undefined;
  const told = messagesFirst(next, childRunId, now);
  const delivered = deliverResult(
    told.record,
    key,
    opId !== undefined ? { ...envelope, operation_id: opId } : envelope,
    now,
  );
  return delivered.ok ? { ...delivered, events: [...told.events, ...delivered.events] } : delivered;
}

/**
 * The messages a child posted that its waiting parent has not yet taken, consumed now (events
 * steer_consumed), so that the parent's reducer sees them before the child's hand-back: a child's
 * messages reach its parent in the order it sent them, and none is discarded by the hand-back.
 */
function messagesFirst(
  record: RunRecord,
  childRunId: string,
  now: number,
): { record: RunRecord; events: RunEvent[] } {
  const fromChild = (input: unknown) =>
    input !== null &&
    typeof input === 'object' &&
    (input as { from_child?: unknown }).from_child === childRunId;
  const mine = record.queued_steers.filter((q) => fromChild(q.input));
  if (mine.length === 0) return { record, events: [] };
  const appended = append(
    { ...record, queued_steers: record.queued_steers.filter((q) => !fromChild(q.input)) } as Draft,
    mine.map((q) => ev('steer_consumed', now, { steer_id: q.steer_id, input: q.input })),
    now,
  );
  return { record: seal(appended.draft), events: appended.events };
}

/**
 * An ended run with one owed duty done: `handback` delivered, or `stop_children` done (its
 * live_children then cleared). Rejected `nothing_to_do` when that duty is not owed.
 */
export function settleOwed(record: RunRecord, duty: OwedDuty, now: number): TransitionResult {
  if (!isTerminalStatus(record.status) || !('owed' in record) || !record.owed.includes(duty))
    return reject('nothing_to_do', `${duty} is not owed`);
  return finish(
    {
      ...record,
      owed: record.owed.filter((d) => d !== duty),
      ...(duty === 'stop_children' ? { live_children: [] } : {}),
      updated_at: now,
    } as Draft,
    [],
  );
}
