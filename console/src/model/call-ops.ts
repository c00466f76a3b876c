/**
 * Which operation ran each of the model's tool calls: the run's own id for a call
 * (`run_…/op/N`), keyed by the model's id for it (`call_id`). Read from what names both: the
 * run's current operation, its open result requests, and the events that end or park a call
 * (`tool_result`, `operation_cancelled`, a result's `request_opened`). Pure.
 * docs/contracts/run-lifecycle.md, "Operations".
 */
import type { PublicRunRecord, RunEvent } from '../../../lib/contracts/index.ts';

/** `call_id → op_id` for every call whose operation `run` or `events` name; later ones win. */
export function callOperations(
  events: readonly Pick<RunEvent, 'kind' | 'data' | 'operation_id'>[],
  run?: Pick<PublicRunRecord, 'open_requests'> & { operation?: PublicRunRecord['operation'] },
): Map<string, string> {
  const ops = new Map<string, string>();
  for (const e of events) {
    const callId = e.data.call_id;
    if (typeof callId !== 'string') continue;
    if ((e.kind === 'tool_result' || e.kind === 'operation_cancelled') && e.operation_id !== undefined)
      ops.set(callId, e.operation_id);
    else if (e.kind === 'request_opened' && e.data.kind === 'result' && typeof e.data.op_id === 'string')
      ops.set(callId, e.data.op_id);
  }
  for (const r of run?.open_requests ?? [])
    if (r.kind === 'result' && r.call_id !== undefined) ops.set(r.call_id, r.op_id);
  const op = run?.operation;
  if (op !== null && op !== undefined && op.call_id !== undefined) ops.set(op.call_id, op.op_id);
  return ops;
}
