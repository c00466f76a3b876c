/**
 * The run's persisted event log. Every change to a run appends events with contiguous seq from 1.
 * A subset of kinds is delivered to the reducer (see `toReducerEvent` in lib/core).
 * docs/contracts/run-lifecycle.md, "Lifecycle" and "Controls" (steer_queued, steer_consumed);
 * docs/reference/storage.md.
 */
import { z } from 'zod';

/** The delivered kinds after the run start and the steers: the reducer receives each under its persisted name. */
export const DELIVERED_AS_PERSISTED = [
  'model_turn_completed',
  'tool_result',
  'request_resolved',
  'request_closed',
  'operation_failed',
  'operation_cancelled',
  'resumed',
  'budget_exceeded',
  'stopped',
] as const;

/** Persisted kinds delivered to the reducer (steer_consumed arrives as user_input). */
export const REDUCER_VISIBLE_EVENT_KINDS = [
  'run_started',
  'steer_consumed',
  ...DELIVERED_AS_PERSISTED,
] as const;

export const RUN_EVENT_KINDS = [
  ...REDUCER_VISIBLE_EVENT_KINDS,
  // bookkeeping, not delivered
  'reducer_answered',
  'operation_started',
  'request_opened',
  'steer_queued',
  'steers_discarded',
  'control_rejected',
  'stop_requested',
  'pause_requested',
  'paused',
  /** A model turn's provider stayed unavailable; the run pauses and the turn is kept (on_provider_outage). */
  'provider_outage',
  'checkpoint_written',
  'lease_taken_over',
  'capability_gap',
  'run_completed',
  'run_failed',
  'result_delivered',
] as const;
export const RunEventKind = z.enum(RUN_EVENT_KINDS);
export type RunEventKind = z.infer<typeof RunEventKind>;

/** One persisted event: `{seq, kind, at (ms epoch), effect_id?, operation_id?, data}`. */
export const RunEvent = z.object({
  seq: z.number().int().positive(),
  kind: RunEventKind,
  at: z.number(),
  effect_id: z.string().optional(),
  operation_id: z.string().optional(),
  data: z.record(z.string(), z.unknown()),
});
export type RunEvent = z.infer<typeof RunEvent>;

/** An event before the commit assigns its seq. */
export type NewRunEvent = Omit<RunEvent, 'seq'>;
