/**
 * The admission-quota part of the commit plan: the items a create claims under its principal's
 * quota key (its live-run slot `QUOTA#{sha256} / L#{n}`, the minute's count `W#{ms}`; layout in
 * commit-plan.ts) and the slot the commit that ends a run frees. Pure; both RunStore adapters
 * execute these writes. docs/architecture.md, "The seams of a step" (admission).
 */
import { createHash } from 'node:crypto';
import type { RunRecord } from '../contracts/index.ts';
import { quotaKeyOf } from '../core/principal.ts';
import type { Commit } from '../engine/ports.ts';
import type { PlannedWrite } from './planned-write.ts';
import { ATTR } from './table.ts';

export const quotaPk = (quotaKey: string) => `QUOTA#${createHash('sha256').update(quotaKey).digest('hex')}`;
export const quotaSlotSk = (slot: number) => `L#${slot}`;
export const quotaWindowSk = (start: number) => `W#${start}`;
/** How long a window's count item outlives its minute (s): TTL deletes it after. */
const QUOTA_WINDOW_TTL_S = 3600;

/** A create's quota claims: the record's live-run slot (held until it ends) and the window count. */
export function quotaWrites(commit: Commit, record: RunRecord): PlannedWrite[] {
  if (commit.quota === undefined) return [];
  const pk = quotaPk(commit.quota.principalKey);
  const writes: PlannedWrite[] = [];
  if (record.quota_slot !== undefined) {
    writes.push({
      op: 'put',
      role: 'quota_slot',
      item: { pk, sk: quotaSlotSk(record.quota_slot), run_id: record.run_id },
      condition: { kind: 'absent' },
    });
  }
  const window = commit.quota.window;
  if (window !== undefined) {
    writes.push({
      op: 'put',
      role: 'quota_window',
      item: {
        pk,
        sk: quotaWindowSk(window.start),
        count: window.count,
        [ATTR.expiresAtTtl]: Math.ceil(window.start / 1000) + QUOTA_WINDOW_TTL_S,
      },
      condition: { kind: 'count_is', count: window.count - 1 },
    });
  }
  return writes;
}

/**
 * The slot a run that just ended frees, under the record's own quota key. Unconditional: only
 * the run holding a slot ever frees it.
 */
export function quotaReleaseWrites(record: RunRecord): PlannedWrite[] {
  if (record.quota_slot === undefined) return [];
  return [
    {
      op: 'delete',
      role: 'quota_release',
      key: { pk: quotaPk(quotaKeyOf(record.principal)), sk: quotaSlotSk(record.quota_slot) },
    },
  ];
}
