/**
 * Builds the `raisin.agent-run.reducer/1` request for one persisted event.
 * docs/contracts/reducer.md, "Request" (the event table says which persisted event yields which
 * kind).
 */
import {
  REDUCER_CONTRACT,
  type ReducerEvent,
  ReducerEvent as ReducerEventSchema,
  type ReducerRequest,
  type RunEvent,
  type RunRecord,
} from '../contracts/index.ts';

/** Maps a persisted event to the event the reducer sees, or null for bookkeeping kinds. */
export function toReducerEvent(event: RunEvent): ReducerEvent | null {
  const kind = event.kind === 'steer_consumed' ? 'user_input' : event.kind;
  const candidate = {
    seq: event.seq,
    kind,
    ...(event.effect_id !== undefined ? { effect_id: event.effect_id } : {}),
    ...(event.operation_id !== undefined ? { operation_id: event.operation_id } : {}),
    data: event.data,
  };
  const parsed = ReducerEventSchema.safeParse(candidate);
  return parsed.success ? parsed.data : null;
}

/** The run summary plus the reducer's last state and the event to deliver. */
export function buildReducerRequest(record: RunRecord, state: unknown, event: ReducerEvent): ReducerRequest {
  return {
    contract: REDUCER_CONTRACT,
    accept: [REDUCER_CONTRACT],
    run: {
      run_id: record.run_id,
      status: record.status,
      turn: record.turn,
      last_seq: record.last_seq,
      usage: record.usage,
      budgets: record.budgets,
      open_requests: record.open_requests.map((r) => ({
        request_id: r.request_id,
        kind: r.kind,
        effect_id: r.effect_id,
        ...(r.kind === 'approval' ? { subject_digest: r.subject.digest } : {}),
        ...(r.expires_at !== null ? { expires_at: r.expires_at } : {}),
      })),
      unanswered_calls: record.unanswered_calls,
      subject: record.subject,
    },
    state: state ?? null,
    state_rev: record.state_rev,
    event,
  };
}
