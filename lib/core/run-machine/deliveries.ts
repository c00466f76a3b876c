/**
 * Deliveries of external results by resume_key, decided from what the key holds: apply to the
 * wait, hold until the wait is recorded (a result that arrived first), or answer a repeat of a
 * delivery_id as a duplicate. Seed: agent-runs, "Operations" (waiting with a resume_key); issue
 * 12 (early results are never lost, deliveries are idempotent).
 */

/** What a resume key holds (the store's item, read back). */
export type ResumeKeyEntry =
  | {
      kind: 'wait';
      run_id: string;
      op_id: string;
      /** The delivery applied to this wait (the key is used): its delivery_id, if it had one. */
      delivered?: { delivery_id?: string; seq: number };
    }
  | {
      kind: 'early';
      /** The body as delivered (JSON text). */
      body: string;
      delivery_id?: string;
      received_at: number;
      expires_at: number;
    };

/** How long a result that arrived before its wait is held (ms, default 15 minutes). */
export const EARLY_RESULT_TTL_MS = 15 * 60_000;

/** How long a result request stays open when its tool names no `result_expires_in_ms` (ms, 24 hours). */
export const RESULT_EXPIRY_MS = 24 * 3_600_000;

export type DeliveryDecision =
  /** Deliver to the run waiting on the key. */
  | { kind: 'deliver'; run_id: string; op_id: string }
  /** No wait yet: hold the result by its key until the wait is recorded. */
  | { kind: 'hold' }
  /**
   * No wait yet, and the caller may not have a result held: only a system caller (a service or
   * webhook) may, since nothing shows yet whose run the key will belong to.
   */
  | { kind: 'unknown_key' }
  /** The same delivery_id was applied: its ack's seq. */
  | { kind: 'duplicate'; original_seq: number }
  /** The same delivery_id is held, not applied yet. */
  | { kind: 'duplicate_held'; expires_at: number }
  /**
   * Refused: a delivery was applied to the key and this is not a repeat of its delivery_id
   * (result_already_delivered), or another result is held for it (result_already_held).
   */
  | { kind: 'refused'; code: 'result_already_delivered' | 'result_already_held' };

/**
 * Decides a delivery for `entry` (what the key holds, null for nothing) with the caller's
 * `deliveryId` (optional: without one a repeat cannot be recognized). `mayHold`: whether the
 * caller may have a result held before its wait is recorded (system callers only: a key with no
 * wait names no run yet, so no one else's authority over it can be checked).
 */
export function decideDelivery(
  entry: ResumeKeyEntry | null,
  deliveryId: string | undefined,
  mayHold: boolean,
): DeliveryDecision {
  if (entry === null) return mayHold ? { kind: 'hold' } : { kind: 'unknown_key' };
  if (entry.kind === 'early') {
    return deliveryId !== undefined && entry.delivery_id === deliveryId
      ? { kind: 'duplicate_held', expires_at: entry.expires_at }
      : { kind: 'refused', code: 'result_already_held' };
  }
  if (entry.delivered !== undefined) {
    return deliveryId !== undefined && entry.delivered.delivery_id === deliveryId
      ? { kind: 'duplicate', original_seq: entry.delivered.seq }
      : { kind: 'refused', code: 'result_already_delivered' };
  }
  return { kind: 'deliver', run_id: entry.run_id, op_id: entry.op_id };
}
