/**
 * The resume-key part of the commit plan: what a commit's waits and deliveries write to the
 * `RKEY#{sha256} / K` item (layout in commit-plan.ts), and the one write that holds a result
 * arriving before its wait. Pure; both RunStore adapters execute these writes.
 * docs/contracts/run-lifecycle.md, "Operations" (waiting with a resume_key).
 */
import { createHash } from 'node:crypto';
import { overLimitMessage, type RunEvent, type RunRecord } from '../contracts/index.ts';
import { principalKeyOf } from '../core/principal.ts';
import { CommitTooLarge, type EarlyResultHold } from '../engine/ports.ts';
import type { Condition, PlannedWrite } from './planned-write.ts';
import { ATTR } from './table.ts';

export const resumeKeyPk = (key: string) => `RKEY#${createHash('sha256').update(key).digest('hex')}`;

/** The largest result body (UTF-8 JSON bytes) held for a wait that is not recorded yet. */
export const EARLY_RESULT_LIMIT = 64 * 1024;
/** How long an applied delivery_id is remembered, so that a repeat is a duplicate (ms, 7 days). */
export const DELIVERY_MEMORY_MS = 7 * 24 * 3_600_000;

/** What one commit's events do to one resume key. */
interface ResumeKeyUse {
  opened?: { run_id: string; op_id: string; at: number; expires_at: number | null };
  delivered?: {
    op_id: string | undefined;
    delivery_id?: string;
    body_digest?: string;
    early: boolean;
    seq: number;
    at: number;
  };
}

/**
 * The resume-key items a commit's events call for, one write per key, each stamped with the
 * run's principal key. A wait (request_opened of kind result) claims the key unless an early
 * result is held there or another principal's run waits on it or used it (condition
 * resume_key_claim; the commit is then refused resume_key_held, and the committer reads the key
 * to tell which: an early result it applies, another's key it refuses). A delivery keeps the key as used
 * {delivered_id?, delivered_digest?, delivered_seq} for DELIVERY_MEMORY_MS (a repeat of its
 * delivery_id and body is a duplicate, another delivery is refused) until a new wait takes it; an early result applied in
 * the wait's own commit must still be held then, so it is applied exactly once.
 */
export function eventIndexWrites(events: RunEvent[], record: RunRecord): PlannedWrite[] {
  const uses = new Map<string, ResumeKeyUse>();
  const use = (key: string) => uses.get(key) ?? (uses.set(key, {}).get(key) as ResumeKeyUse);
  events.forEach((event, i) => {
    const key = event.data.resume_key;
    if (typeof key !== 'string') return;
    if (event.kind === 'request_opened' && event.data.kind === 'result') {
      const expiresAt = event.data.expires_at;
      use(key).opened = {
        run_id: record.run_id,
        op_id: String(event.data.op_id),
        at: event.at,
        expires_at: typeof expiresAt === 'number' ? expiresAt : null,
      };
    }
    if (event.kind === 'result_delivered') {
      const { delivery_id: deliveryId, body_digest: bodyDigest } = event.data;
      use(key).delivered = {
        op_id: events[i + 1]?.operation_id,
        ...(typeof deliveryId === 'string' ? { delivery_id: deliveryId } : {}),
        ...(typeof bodyDigest === 'string' ? { body_digest: bodyDigest } : {}),
        early: event.data.early === true,
        // The ack names the tool_result that follows result_delivered.
        seq: events[i + 1]?.seq ?? event.seq,
        at: event.at,
      };
    }
  });
  const writes: PlannedWrite[] = [];
  // A key belongs to the principal whose run waits on it, and stays theirs while used.
  const principalKey = uses.size === 0 ? '' : principalKeyOf(record.principal);
  for (const [key, { opened, delivered }] of uses) {
    const k = { pk: resumeKeyPk(key), sk: 'K', principal_key: principalKey };
    if (delivered === undefined) {
      if (opened === undefined) continue;
      writes.push({
        op: 'put',
        role: 'resume_key',
        item: {
          ...k,
          run_id: opened.run_id,
          op_id: opened.op_id,
          // A wait that expires frees its key for others once a delivery could no longer be a repeat.
          ...(opened.expires_at !== null
            ? { [ATTR.expiresAtTtl]: Math.ceil((opened.expires_at + DELIVERY_MEMORY_MS) / 1000) }
            : {}),
        },
        condition: {
          kind: 'resume_key_claim',
          run_id: opened.run_id,
          principal_key: principalKey,
          now: opened.at,
        },
      });
      continue;
    }
    const condition: Condition | undefined = delivered.early ? { kind: 'early_held' } : undefined;
    // The key stays used (a repeat is a duplicate, or refused), until a new wait takes it.
    writes.push({
      op: 'put',
      role: 'resume_key_release',
      item: {
        ...k,
        run_id: record.run_id,
        op_id: delivered.op_id ?? opened?.op_id ?? '',
        ...(delivered.delivery_id !== undefined ? { delivered_id: delivered.delivery_id } : {}),
        ...(delivered.body_digest !== undefined ? { delivered_digest: delivered.body_digest } : {}),
        delivered_seq: delivered.seq,
        [ATTR.expiresAtTtl]: Math.ceil((delivered.at + DELIVERY_MEMORY_MS) / 1000),
      },
      ...(condition ? { condition } : {}),
    });
  }
  return writes;
}

/**
 * The one write that holds an early result: a put of the resume key item, allowed when the key
 * is free (no wait, no applied delivery, no live early result). Throws CommitTooLarge above
 * EARLY_RESULT_LIMIT bytes. docs/contracts/run-lifecycle.md, "Operations" (waiting with a
 * resume_key).
 */
export function planEarlyResult(hold: EarlyResultHold): PlannedWrite {
  const bytes = Buffer.byteLength(hold.body);
  if (bytes > EARLY_RESULT_LIMIT) {
    throw new CommitTooLarge(overLimitMessage('a result held before its wait', EARLY_RESULT_LIMIT, bytes));
  }
  return {
    op: 'put',
    role: 'early_result',
    item: {
      pk: resumeKeyPk(hold.resume_key),
      sk: 'K',
      early_json: hold.body,
      ...(hold.delivery_id !== undefined ? { delivery_id: hold.delivery_id } : {}),
      received_at: hold.received_at,
      early_expires_at: hold.expires_at,
      [ATTR.expiresAtTtl]: Math.ceil(hold.expires_at / 1000),
    },
    condition: { kind: 'absent_or_early_expired', now: hold.received_at },
  };
}
