/**
 * Controls and their acks: stop, pause, resume, steer (with `when_busy`), approve and
 * provide_input, each carrying a caller-chosen `control_id`; the three ack shapes and the stable
 * rejection reasons. docs/contracts/run-lifecycle.md, "Controls".
 */
import { z } from 'zod';
import { cleanId } from './clean-text.ts';
import { STEER_WHEN_BUSY } from './names.ts';
import { Budgets } from './run.ts';

/** No control characters in a control id (clean-text.ts cleanId). */
const controlBase = { control_id: cleanId(200) };

export const StopControl = z.strictObject({
  ...controlBase,
  command: z.literal('stop'),
  reason: z.string().optional(),
});
export const PauseControl = z.strictObject({
  ...controlBase,
  command: z.literal('pause'),
  reason: z.string().optional(),
});
export const ResumeControl = z.strictObject({
  ...controlBase,
  command: z.literal('resume'),
  budget_increase: Budgets.optional(),
  accept_reducer_change: z.boolean().optional(),
});
/**
 * What a steer does when an operation is in flight (what peers call double-texting): `enqueue`
 * (the default) queues it for the next boundary; `reject` refuses it (ack rejected `run_busy`);
 * `interrupt` queues it and cancels an interruptible operation in flight, so that it is consumed
 * at the boundary that follows (a non-interruptible one runs to its end, as with `enqueue`).
 * Between operations all three queue the steer.
 */
export { STEER_WHEN_BUSY } from './names.ts';
export const SteerWhenBusy = z.enum(STEER_WHEN_BUSY);
export type SteerWhenBusy = z.infer<typeof SteerWhenBusy>;

export const SteerControl = z.strictObject({
  ...controlBase,
  command: z.literal('steer'),
  input: z.unknown(),
  /** Absent: `enqueue`. Optional rather than defaulted, so that the digest of a steer sent before it existed is unchanged. */
  when_busy: SteerWhenBusy.optional(),
});
export const ApproveControl = z.strictObject({
  ...controlBase,
  command: z.literal('approve'),
  request_id: cleanId(256),
  subject_digest: z.string().min(1),
  decision: z.enum(['approved', 'rejected']).default('approved'),
  reason: z.string().optional(),
});
export const ProvideInputControl = z.strictObject({
  ...controlBase,
  command: z.literal('provide_input'),
  request_id: cleanId(256),
  value: z.unknown(),
});

export const CONTROL_COMMANDS = ['stop', 'pause', 'resume', 'steer', 'approve', 'provide_input'] as const;
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];

/** A control: `{control_id, command, ...}`. The command set is closed. */
export const Control = z.discriminatedUnion('command', [
  StopControl,
  PauseControl,
  ResumeControl,
  SteerControl,
  ApproveControl,
  ProvideInputControl,
]);
export type Control = z.infer<typeof Control>;

/** Stable reasons a control is rejected with. */
export const CONTROL_REJECTION_REASONS = [
  'run_terminal',
  'unauthorized',
  'digest_mismatch',
  'control_id_reused',
  'request_not_found',
  /** approve or provide_input of a request of this run that is no longer open (answered or closed). */
  'request_already_resolved',
  'request_kind_mismatch',
  'not_paused',
  'reducer_change_not_accepted',
  /** resume accepting a reducer change where the deployment requires a passing check, and it did not pass. */
  'reducer_check_failed',
  /** resume of a run whose pending operation a budget would still refuse (raise it with budget_increase). */
  'budget_still_exceeded',
  /** stop or pause of a run already stopping (cancelling). */
  'already_stopping',
  /** pause of a run already paused. */
  'already_paused',
  /** resume of a child run with budget_increase.max_depth (the parent's ceiling holds). */
  'max_depth_inherited',
  /** resume of a child run with budget_increase of a tree limit (its parent reserved that limit). */
  'tree_budget_reserved',
  /** steer with when_busy `reject` while an operation is in flight. */
  'run_busy',
  /** steer while the run already holds its bound of queued steers (EngineOptions.maxQueuedSteers). */
  'steer_queue_full',
  'invalid_state',
] as const;
export const ControlRejectionReason = z.enum(CONTROL_REJECTION_REASONS);
export type ControlRejectionReason = z.infer<typeof ControlRejectionReason>;

/** The three acknowledgement shapes. */
export const AppliedAck = z.object({ ack: z.literal('applied'), seq: z.number().int().positive() });
export const DuplicateAck = z.object({
  ack: z.literal('duplicate'),
  original_seq: z.number().int().positive(),
});
export const RejectedAck = z.object({
  ack: z.literal('rejected'),
  reason: z.string(),
  seq: z.number().int().positive(),
});
/**
 * The answer to a control: `{ack: 'applied', seq}` (the seq of the event it recorded),
 * `{ack: 'duplicate', original_seq}` (a control with this control_id was applied before), or
 * `{ack: 'rejected', reason, seq}` (recorded and not applied; `reason` a ControlRejectionReason).
 */
export const ControlAck = z.discriminatedUnion('ack', [AppliedAck, DuplicateAck, RejectedAck]);
export type ControlAck = z.infer<typeof ControlAck>;
