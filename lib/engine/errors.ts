/**
 * Engine errors with stable codes. Each is terminal (the request is wrong: fix it) or
 * retryable (the infrastructure failed: try again). A rejected control is not an error: it is
 * an ack. STYLE "Typed errors with stable codes".
 */
import { EngineModuleError } from './module-error.ts';

export type EngineErrorCode =
  | 'validation_failed'
  | 'run_not_found'
  /** A caller who may see the run presented a capability that does not match (403). */
  | 'capability_invalid'
  /** The subject has a live run the caller may not see (409; nothing of it is revealed). */
  | 'subject_busy'
  /** The create key was used for a different request (409). */
  | 'create_key_reused'
  /** as_agent names an agent that is not registered, or may not act for this user (403). */
  | 'agent_not_allowed'
  /** The subject's workspace is not granted to the caller (403; nothing of its runs is revealed). */
  | 'workspace_not_granted'
  /** A per-principal limit of the deployment (live runs, creations per minute) is reached (429). */
  | 'quota_exceeded'
  | 'checkpoint_not_found'
  | 'invalid_cursor'
  /** An events cursor (after, Last-Event-ID) beyond the run's last seq (409; details.after, details.last_seq). */
  | 'cursor_ahead'
  | 'unauthorized'
  | 'reducer_not_found'
  | 'resume_key_not_found'
  /** Another delivery (another delivery_id) was already applied to the resume key (409). */
  | 'result_already_delivered'
  /** Another result is held for the resume key until its wait is recorded (409). */
  | 'result_already_held'
  /** A body above a size limit (413). */
  | 'payload_too_large'
  | 'run_terminal'
  | 'state_not_found'
  | 'subject_taken'
  | 'checkpoint_not_forkable'
  /** A published registry version never changes: a different document needs a new version (409). */
  | 'version_immutable'
  /** A tool published as data may not take the name of a tool registered in code (409). */
  | 'tool_name_reserved'
  /** No such registry entry or version (404). */
  | 'registry_entry_not_found'
  /** A client-driven write whose fence no longer holds (details.reason_code session-fence-mismatch). */
  | 'fenced_out'
  /** Another client holds the run's unexpired lease (details.expires_at). */
  | 'lease_held'
  /** A client-driven route on a run that has a reducer: the server drives it. */
  | 'not_client_driven'
  /** The run is not in a state that allows this write (details.reason: operation_in_flight, ...). */
  | 'invalid_state'
  /** A turn outcome the runtime refused (details.reason_code: event-duplicate, event-stale, ...). */
  | 'turn_outcome_refused'
  | 'store_unavailable';

export class EngineError extends EngineModuleError {
  override name = 'EngineError';
  readonly code: EngineErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;
  constructor(
    code: EngineErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions & { retryable?: boolean },
  ) {
    super(message, options);
    this.code = code;
    this.details = details;
    this.retryable = options?.retryable ?? false;
  }
}

/** The step worker lost its lease (fenced out): it stops and writes nothing more. */
export class LeaseLost extends EngineModuleError {
  override name = 'LeaseLost';
  readonly code = 'lease_lost';
  /** The worker stops; the step is another worker's now. */
  readonly retryable = false;
}
