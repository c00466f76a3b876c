/**
 * The tool audit log: bounded structured events for every invocation outcome, with correlation
 * ids, tool identity, outcome, duration and stable error codes, and nothing else: never inputs,
 * outputs, credentials, headers or exception text. docs/contracts/tool-result.md, "Audit and
 * privacy".
 */
import type { Clock } from '../engine/ports.ts';

export const AUDIT_EVENTS = [
  'accepted',
  'started',
  'completed',
  'failed',
  'cancelled',
  'timed_out',
  'denied',
  'approval_pending',
] as const;
export type AuditEventName = (typeof AUDIT_EVENTS)[number];

export interface AuditEvent {
  event: AuditEventName;
  run_id: string;
  operation_id: string;
  tool: string;
  /** null when the tool is not registered. */
  tool_version: string | null;
  /**
   * accepted, started, cancelled, timed_out, denied, approval_pending: the event's own name;
   * completed: the envelope status (succeeded, waiting, retryable, blocked); failed: failed.
   */
  outcome: string;
  /** Milliseconds since the call was accepted (0 for gate decisions). */
  duration_ms: number;
  /** Stable code: a deny code, an error class, or a diagnostic code such as output_too_large. */
  error_code?: string;
  /** ISO 8601 time of the event. */
  at: string;
}

/** Tool names in events are cut to this length (a call may name an unregistered tool). */
const MAX_TOOL_NAME_LENGTH = 128;

export type AuditSink = (event: AuditEvent) => void;

export interface AuditLog {
  /** Stamps `at` from the clock and hands the event to the sink. A throwing sink is reported to `onSinkError`, never to the call. */
  record(event: Omit<AuditEvent, 'at'>): void;
}

/**
 * Wraps a sink (for example the powertools logger, or an array in tests). The event is built
 * field by field here, so nothing a caller adds by mistake reaches the sink.
 */
export function createAuditLog(
  sink: AuditSink,
  options: { clock?: Clock; onSinkError?: (error: unknown) => void } = {},
): AuditLog {
  const clock = options.clock ?? { now: () => Date.now() };
  return {
    record(event) {
      const entry: AuditEvent = {
        event: event.event,
        run_id: event.run_id,
        operation_id: event.operation_id,
        tool: event.tool.slice(0, MAX_TOOL_NAME_LENGTH),
        tool_version: event.tool_version,
        outcome: event.outcome,
        duration_ms: Math.max(0, Math.round(event.duration_ms)),
        ...(event.error_code === undefined ? {} : { error_code: event.error_code }),
        at: new Date(clock.now()).toISOString(),
      };
      try {
        sink(entry);
      } catch (error) {
        options.onSinkError?.(error);
      }
    },
  };
}
