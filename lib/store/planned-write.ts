/**
 * The writes of a planned commit, as data: each a put, update or delete with the condition it
 * carries and the role it plays (a refused commit is classified by the role of the write that
 * failed). The commit planner (commit-plan.ts) and its parts (quota-plan.ts, resume-key-plan.ts)
 * build them; the DynamoDB adapter renders them, the memory adapter evaluates them.
 */
import type { Fence } from '../core/run-machine.ts';

export type Item = Record<string, unknown>;
export interface ItemKey {
  pk: string;
  sk: string;
}

/** A write's condition, as data: the DynamoDB adapter renders it, the memory adapter evaluates it. */
export type Condition =
  /** attribute_not_exists(pk): the item must not exist. */
  | { kind: 'absent' }
  /** attribute_not_exists(pk) OR run_id = :run_id: absent, or held by this run. */
  | { kind: 'absent_or_held_by'; run_id: string }
  /** The run record as read: #version = :v, and for a lease holder the fence in the same expression. */
  | { kind: 'record_version'; version: number; fence?: Fence }
  /** A counter item as read: absent when `count` is 0, else #count = :count. */
  | { kind: 'count_is'; count: number }
  /**
   * A wait may claim the resume key: no item; or a wait or used key of this run, of this
   * principal (`principal_key`), of no recorded principal (written before keys had one), or
   * past its TTL; or no wait and no early result that is still live. A key another principal's
   * run waits on, or used within DELIVERY_MEMORY_MS, is not claimable.
   */
  | { kind: 'resume_key_claim'; run_id: string; principal_key: string; now: number }
  /** A resume key still holds an early result: attribute_exists(early_json). */
  | { kind: 'early_held' }
  /** A resume key is free for an early result: attribute_not_exists(pk) OR early_expires_at <= :now. */
  | { kind: 'absent_or_early_expired'; now: number }
  /**
   * An event page's key is free for a commit of record version `commit_version`: no page there,
   * or only an uncommitted one written for an older version (attribute_not_exists(pk) OR
   * commit_version < :commit_version). A committed page is never overwritten
   * (commit-protocol.ts).
   */
  | { kind: 'page_open'; commit_version: number };

/** What a write is for; a refused commit is classified by the role of the write that failed. */
export type WriteRole =
  | 'record'
  | 'subject'
  | 'create_key'
  | 'parent_link'
  | 'page'
  | 'resume_key'
  | 'resume_key_release'
  | 'early_result'
  | 'state'
  | 'checkpoint'
  | 'control_ack'
  | 'subject_release'
  | 'quota_slot'
  | 'quota_window'
  | 'quota_release';

export type PlannedWrite =
  | { op: 'put'; role: WriteRole; item: Item & ItemKey; condition?: Condition }
  /** Sets every attribute of `set` and removes `remove` from the item at `key`. */
  | { op: 'update'; role: 'record'; key: ItemKey; set: Item; remove: string[]; condition: Condition }
  | { op: 'delete'; role: WriteRole; key: ItemKey; condition?: Condition };
