/**
 * The run records this worker process committed last, by run id: the next step of the same run
 * starts from its cached record instead of a GetItem. A cached record is only a guess of the
 * stored one: the lease-acquiring commit is conditioned on its version, so a record another
 * writer moved on is refused `stale_version` with the current record (ReturnValues ALL_OLD),
 * and the step goes on from that one: no read is wasted and none is trusted. Bounded (least
 * recently used dropped first).
 */
import type { RunRecord } from '../contracts/index.ts';

/** Runs remembered per process by default (a record is a few KB: a few MB at most). */
export const RECORD_CACHE_SIZE = 4_096;

export interface RecordCache {
  /** The record last remembered for `runId`, or undefined. */
  get(runId: string): RunRecord | undefined;
  /** Remembers `record` as the newest this process knows of its run (an older version is ignored). */
  remember(record: RunRecord): void;
  /** Forgets `runId` (the worker lost its lease, or its record can no longer be trusted). */
  forget(runId: string): void;
}

export function createRecordCache(size = RECORD_CACHE_SIZE): RecordCache {
  const records = new Map<string, RunRecord>();
  return {
    get(runId) {
      const record = records.get(runId);
      if (record === undefined) return undefined;
      records.delete(runId);
      records.set(runId, record);
      return record;
    },
    remember(record) {
      const known = records.get(record.run_id);
      if (known !== undefined && known.version > record.version) return;
      records.delete(record.run_id);
      records.set(record.run_id, record);
      if (records.size > size) {
        const oldest = records.keys().next();
        if (!oldest.done) records.delete(oldest.value);
      }
    },
    forget(runId) {
      records.delete(runId);
    },
  };
}
