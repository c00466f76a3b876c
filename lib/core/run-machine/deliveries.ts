/**
 * Deliveries of external results by resume_key, decided from what the key holds: apply to the
 * wait, hold until the wait is recorded (a result that arrived first), or answer a repeat of a
 * delivery_id as a duplicate. A delivery_id is bound to its body as a control_id is to its
 * command: the same id with another body is refused `delivery_id_reused`. So an early result is
 * never lost and a delivery is idempotent. docs/contracts/run-lifecycle.md, "Operations" (waiting with a resume_key), "Controls"
 * (control_id_reused).
 */
import { digestOf } from '../canonical.ts';

/** What a resume key holds (the store's item, read back). */
export type ResumeKeyEntry =
  | {
      kind: 'wait';
      run_id: string;
      op_id: string;
      /**
       * The delivery applied to this wait (the key is used): its delivery_id, if it had one, and
       * the digest of its body (`digestOf`; absent for a delivery recorded before digests were).
       */
      delivered?: { delivery_id?: string; body_digest?: string; seq: number };
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
   * (result_already_delivered), another result is held for it (result_already_held), or the
   * delivery_id applied or held there came with another body (delivery_id_reused).
   */
  | { kind: 'refused'; code: 'result_already_delivered' | 'result_already_held' | 'delivery_id_reused' };

/**
 * Decides a delivery for `entry` (what the key holds, null for nothing) with the caller's
 * `deliveryId` (optional: without one a repeat cannot be recognized) and `bodyDigest` (the
 * `digestOf` of the body sent). `mayHold`: whether the caller may have a result held before its
 * wait is recorded (system callers only: a key with no wait names no run yet, so no one else's
 * authority over it can be checked). A repeat of the delivery_id applied or held on the key is
 * a duplicate only with the same body; with another body it is refused `delivery_id_reused`
 * (a delivery recorded without a digest is taken at its id).
 */
export function decideDelivery(
  entry: ResumeKeyEntry | null,
  deliveryId: string | undefined,
  mayHold: boolean,
  bodyDigest: string,
): DeliveryDecision {
  if (entry === null) return mayHold ? { kind: 'hold' } : { kind: 'unknown_key' };
  if (entry.kind === 'early') {
    if (deliveryId === undefined || entry.delivery_id !== deliveryId)
      return { kind: 'refused', code: 'result_already_held' };
    return heldBodyDigest(entry.body) === bodyDigest
      ? { kind: 'duplicate_held', expires_at: entry.expires_at }
      : { kind: 'refused', code: 'delivery_id_reused' };
  }
  if (entry.delivered !== undefined) {
    const { delivered } = entry;
    if (deliveryId === undefined || delivered.delivery_id !== deliveryId)
      return { kind: 'refused', code: 'result_already_delivered' };
    return delivered.body_digest === undefined || delivered.body_digest === bodyDigest
      ? { kind: 'duplicate', original_seq: delivered.seq }
      : { kind: 'refused', code: 'delivery_id_reused' };
  }
  return { kind: 'deliver', run_id: entry.run_id, op_id: entry.op_id };
}

/**
 * The `digestOf` of a held body (the JSON text the key keeps), or null when it is not JSON
 * (never, for a body this runtime held: then no repeat matches it).
 */
export function heldBodyDigest(body: string): string | null {
  try {
    return digestOf(JSON.parse(body) as unknown);
  } catch {
    return null;
  }
}
