/**
 * The journal of a client-driven run: what its event log says each operation was and how it
 * ended, in op order, and the steers consumed before each. A restarted agent walks it to replay
 * recorded results instead of calling the model or a tool again. Pure: events in, journal out.
 * docs/contracts/run-lifecycle.md, "Operations" (six outcomes), "Leases, recovery and the sweeper"
 * (a non-replay-safe operation in flight at a crash is recorded outcome_unknown), "Controls"
 * (steer, approve: the approvals a tool call waited for).
 */
import { z } from 'zod';
import {
  ModelTurnCompletedData,
  OperationCancelledData,
  OperationFailedData,
  type RunEvent,
  ToolResultData,
} from '../contracts/index.ts';

/** How a recorded operation ended: the result event's kind and its parsed data. */
export type RecordedResult =
  | { kind: 'model_turn_completed'; data: z.infer<typeof ModelTurnCompletedData> }
  | { kind: 'tool_result'; data: z.infer<typeof ToolResultData> }
  | { kind: 'operation_failed'; data: z.infer<typeof OperationFailedData> }
  | { kind: 'operation_cancelled'; data: z.infer<typeof OperationCancelledData> };

/** One operation of the run as its events tell it: `result` null while it was begun but never ended. */
export interface RecordedOperation {
  /** `{run_id}/op/{n}`. */
  readonly opId: string;
  /** `model_turn`, `tool_call`, ... (operation_started.data.kind). */
  readonly kind: string;
  /** The tool's name, for a tool call. */
  readonly tool: string | undefined;
  /** The model's call id a tool call answers (operation_started.data.call_id), when the server recorded it. */
  readonly callId: string | undefined;
  /** How it ended; null when no result was recorded (a replay-safe operation kept pending). */
  result: RecordedResult | null;
  /** The inputs of the steers consumed after the previous operation and before this one, oldest first. */
  readonly steersBefore: unknown[];
}

/** How an approval ended: `approved`, `rejected` (with the approver's reason), or `closed` unanswered (expired, or the run ended; the reason says which). */
export interface ApprovalDecision {
  readonly decision: 'approved' | 'rejected' | 'closed';
  readonly reason: string | undefined;
}

/** An approval a tool call asked for (request_opened with a `tool_call` subject), and its decision. */
export interface RecordedApproval {
  /** `{run_id}/req/{n}`. */
  readonly requestId: string;
  /** The tool and the model's call id the subject names (`subject.changes`). */
  readonly tool: string;
  readonly callId: string | undefined;
  /** null while the request is open. */
  decision: ApprovalDecision | null;
}

/** The run's operations in op order, the tool calls' approvals in request order, and the steers consumed after the last operation. */
export interface Journal {
  readonly operations: RecordedOperation[];
  readonly approvals: RecordedApproval[];
  /** The seq of the last event read (0 for none). */
  readonly lastSeq: number;
  /** Steers consumed after the last operation began (taken by a process that then died). */
  readonly steersAfter: unknown[];
}

const Started = z.object({ kind: z.string(), tool: z.string().optional(), call_id: z.string().optional() });
/** The approval subject kind of a tool call's approval; `changes` names the call. */
export const TOOL_CALL_SUBJECT = 'tool_call';
const ApprovalOpened = z.object({
  kind: z.literal('approval'),
  request_id: z.string(),
  subject: z.object({
    kind: z.literal(TOOL_CALL_SUBJECT),
    changes: z.object({ tool: z.string(), call_id: z.string().optional() }),
  }),
});
const RequestEnded = z.object({
  request_id: z.string(),
  decision: z.enum(['approved', 'rejected']).optional(),
  reason: z.string().optional(),
});
const SteerConsumed = z.object({ input: z.unknown() });

const RESULT_SCHEMAS = {
  model_turn_completed: ModelTurnCompletedData,
  tool_result: ToolResultData,
  operation_failed: OperationFailedData,
  operation_cancelled: OperationCancelledData,
} as const;

/** The result an event records, or null when the event is no operation result. Throws on a malformed one. */
function resultOf(event: RunEvent): RecordedResult | null {
  if (!(event.kind in RESULT_SCHEMAS)) return null;
  const kind = event.kind as keyof typeof RESULT_SCHEMAS;
  const parsed = RESULT_SCHEMAS[kind].safeParse(event.data);
  if (!parsed.success) throw new Error(`event ${event.seq} (${kind}) is malformed: ${parsed.error.message}`);
  return { kind, data: parsed.data } as RecordedResult;
}

/**
 * Builds the journal from a run's events (any order; read in seq order). An operation begun
 * again after a takeover (attempt + 1) is one entry; its last result wins. Throws Error naming
 * the seq of a malformed operation_started or result event.
 */
export function journalOf(events: readonly RunEvent[]): Journal {
  const operations: RecordedOperation[] = [];
  const byId = new Map<string, RecordedOperation>();
  const approvals = new Map<string, RecordedApproval>();
  let steers: unknown[] = [];
  for (const event of [...events].sort((a, b) => a.seq - b.seq)) {
    if (event.kind === 'steer_consumed') {
      steers.push(SteerConsumed.parse(event.data).input);
      continue;
    }
    if (
      event.kind === 'request_opened' ||
      event.kind === 'request_resolved' ||
      event.kind === 'request_closed'
    ) {
      noteApproval(event, approvals);
      continue;
    }
    const opId = event.operation_id;
    if (opId === undefined) continue;
    if (event.kind === 'operation_started') {
      if (byId.has(opId)) continue;
      const started = Started.safeParse(event.data);
      if (!started.success) throw new Error(`event ${event.seq} (operation_started) is malformed`);
      const entry: RecordedOperation = {
        opId,
        kind: started.data.kind,
        tool: started.data.tool,
        callId: started.data.call_id,
        result: null,
        steersBefore: steers,
      };
      steers = [];
      operations.push(entry);
      byId.set(opId, entry);
      continue;
    }
    const result = resultOf(event);
    const entry = byId.get(opId);
    if (result !== null && entry !== undefined) entry.result = result;
  }
  const lastSeq = events.reduce((max, e) => Math.max(max, e.seq), 0);
  return { operations, approvals: [...approvals.values()], steersAfter: steers, lastSeq };
}

/** Notes a tool call's approval opened, resolved or closed (other requests are no approval of a tool call). */
function noteApproval(event: RunEvent, approvals: Map<string, RecordedApproval>): void {
  if (event.kind === 'request_opened') {
    const opened = ApprovalOpened.safeParse(event.data);
    if (!opened.success) return;
    const { tool, call_id } = opened.data.subject.changes;
    approvals.set(opened.data.request_id, {
      requestId: opened.data.request_id,
      tool,
      callId: call_id,
      decision: null,
    });
    return;
  }
  const ended = RequestEnded.safeParse(event.data);
  const approval = ended.success ? approvals.get(ended.data.request_id) : undefined;
  if (!ended.success || approval === undefined || approval.decision !== null) return;
  approval.decision = {
    decision: event.kind === 'request_closed' ? 'closed' : (ended.data.decision ?? 'approved'),
    reason: ended.data.reason,
  };
}
