/**
 * The journal of a client-driven run: what its event log says each operation was and how it
 * ended, in op order, and the steers consumed before each. A restarted agent walks it to replay
 * recorded results instead of calling the model or a tool again. Pure: events in, journal out.
 * Seed: agent-runs, "Operations" (six outcomes), "Leases, recovery and the sweeper" (a
 * non-replay-safe operation in flight at a crash is recorded outcome_unknown), "Controls" (steer).
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
  /** How it ended; null when no result was recorded (a replay-safe operation kept pending). */
  result: RecordedResult | null;
  /** The inputs of the steers consumed after the previous operation and before this one, oldest first. */
  readonly steersBefore: unknown[];
}

/** The run's operations in op order, and the steers consumed after the last one. */
export interface Journal {
  readonly operations: RecordedOperation[];
  /** Steers consumed after the last operation began (taken by a process that then died). */
  readonly steersAfter: unknown[];
}

const Started = z.object({ kind: z.string(), tool: z.string().optional() });
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
  let steers: unknown[] = [];
  for (const event of [...events].sort((a, b) => a.seq - b.seq)) {
    if (event.kind === 'steer_consumed') {
      steers.push(SteerConsumed.parse(event.data).input);
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
  return { operations, steersAfter: steers };
}
