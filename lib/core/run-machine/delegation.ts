/**
 * Delegation in the run machine: which operations are delegations, a child's hand-back, and an
 * ended run's owed duties. Seed: agent-runs, sweeper ("delivers owed child hand-backs, stops
 * children of ended parents").
 */
import {
  childResumeKey,
  DELEGATE_TOOL,
  isTerminalStatus,
  type Operation,
  type OwedDuty,
  type RunRecord,
  type ToolResultEnvelope,
} from '../../contracts/index.ts';
import { type Draft, finish, reject, seal, type TransitionResult } from './draft.ts';
import { deliverResult } from './requests.ts';

/** Whether `op` is a delegation: a call of the reserved delegate tool, which core executes. */
export function isDelegation(op: Operation): boolean {
  return op.effect.kind === 'call_tool' && op.effect.tool === DELEGATE_TOOL;
}

/**
 * The hand-back of a child run that ended: the child leaves `live_children`, and when the parent
 * still waits on `child:{child_run_id}` the child's outcome (`envelope`) is delivered as that
 * call's tool_result (like {@link deliverResult}). Rejected `run_terminal` for an ended parent
 * and `nothing_to_do` when the hand-back was already taken (so a repeated delivery adds nothing).
 * Seed: agent-runs, sweeper ("delivers owed child hand-backs").
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
  const next = live
    ? seal({
        ...record,
        live_children: record.live_children.filter((c) => c !== childRunId),
        updated_at: now,
      })
    : record;
  if (!waiting) return { ok: true, record: next, events: [] };
  const request = record.open_requests.find((r) => r.kind === 'result' && r.resume_key === key);
  const opId = request?.kind === 'result' ? request.op_id : undefined;
  return deliverResult(next, key, opId !== undefined ? { ...envelope, operation_id: opId } : envelope, now);
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
