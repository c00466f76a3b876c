/**
 * RunStore in memory, with the DynamoDB adapter's semantics: it executes the same commit plans
 * (commit-plan.ts), evaluating their conditions (version, fence, absent items) against maps
 * and applying every write of a commit or none, so versions, fences, contiguous seqs, event
 * pages, state_at and the indexes behave alike. The store contract suite
 * (test/contract/run-store.contract.ts) runs against both adapters.
 *
 * A test and local-development aid for engine logic at unit speed, NEVER a production option:
 * nothing is durable, nothing is shared between processes. DESIGN section 10.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { createMemoryBlobStore } from '../blobs/memory-blob-store.ts';
import type { RunStore, StoreMetrics } from '../engine/ports.ts';
import {
  ackSk,
  type Condition,
  checkpointOf,
  checkpointSk,
  classifyRefusal,
  controlAckOf,
  createKeyPk,
  eventOf,
  eventSk,
  type Item,
  LAST_EVENT_SK,
  type PlannedWrite,
  planCommit,
  recordOf,
  resumeKeyPk,
  runPk,
  stateOf,
  stateSk,
  storeCommitBodies,
  subjectKey,
  takeContiguous,
} from './commit-plan.ts';
import { ATTR, LISTING_SHARDS, SWEEP_SHARDS } from './table.ts';

export interface MemoryRunStoreOptions {
  /** Where large payloads go (default: a fresh in-memory blob store). */
  blobs?: BlobStore;
}

/** A listing cursor of the memory store: the sort position of the last run returned. */
interface MemoryCursor {
  created_at: number;
  run_id: string;
}

export function createMemoryRunStore(options: MemoryRunStoreOptions = {}): RunStore {
  const blobs = options.blobs ?? createMemoryBlobStore();
  /** pk → sk → item. Items are cloned in and out, so no caller can alias stored state. */
  const table = new Map<string, Map<string, Item>>();
  const metrics: StoreMetrics = {
    reads: 0,
    queries: 0,
    transactions: 0,
    transactionRetries: 0,
    readCapacity: 0,
    writeCapacity: 0,
  };

  const get = (pk: string, sk: string): Item | undefined => {
    const item = table.get(pk)?.get(sk);
    return item === undefined ? undefined : structuredClone(item);
  };
  const read = (pk: string, sk: string): Item | undefined => {
    metrics.reads += 1;
    return get(pk, sk);
  };
  /** The items of one partition with from ≤ sk ≤ to, in sort-key order. */
  const range = (pk: string, from: string, to: string): Item[] => {
    const partition = table.get(pk);
    if (partition === undefined) return [];
    return [...partition.keys()]
      .filter((sk) => sk >= from && sk <= to)
      .sort()
      .map((sk) => structuredClone(partition.get(sk) as Item));
  };
  const withPrefix = (pk: string, prefix: string): Item[] => range(pk, prefix, `${prefix}\uffff`);
  /** Every stored run record item (the GSIs' source). */
  const recordItems = (): Item[] =>
    [...table.values()].flatMap((p) => {
      const r = p.get('R');
      return r === undefined ? [] : [r];
    });

  function holds(condition: Condition | undefined, existing: Item | undefined): boolean {
    if (condition === undefined) return true;
    switch (condition.kind) {
      case 'absent':
        return existing === undefined;
      case 'absent_or_held_by':
        return existing === undefined || existing.run_id === condition.run_id;
      case 'record_version':
        return (
          existing !== undefined &&
          existing.version === condition.version &&
          (condition.fence === undefined ||
            (existing.lease_owner === condition.fence.owner && existing.epoch === condition.fence.epoch))
        );
    }
  }

  const keyOf = (w: PlannedWrite) => (w.op === 'put' ? { pk: w.item.pk, sk: w.item.sk } : w.key);

  function apply(w: PlannedWrite): void {
    const { pk, sk } = keyOf(w);
    let partition = table.get(pk);
    if (partition === undefined) {
      partition = new Map();
      table.set(pk, partition);
    }
    if (w.op === 'put') partition.set(sk, structuredClone(w.item));
    else if (w.op === 'delete') partition.delete(sk);
    else {
      const next: Item = { ...(partition.get(sk) ?? { pk, sk }), ...structuredClone(w.set) };
      for (const k of w.remove) delete next[k];
      partition.set(sk, next);
    }
  }

  return {
    metrics,
    async getRun(runId) {
      return recordOf(read(runPk(runId), 'R'));
    },
    async getRunAndAck(runId, controlId) {
      metrics.reads += 1;
      const ack = get(runPk(runId), ackSk(controlId));
      return { record: recordOf(get(runPk(runId), 'R')), ack: ack === undefined ? null : controlAckOf(ack) };
    },
    async getState(runId, rev, at) {
      if (rev === 0) return null;
      const sk = at ?? stateSk(rev);
      return stateOf(read(runPk(runId), sk), runId, rev, sk, blobs);
    },
    async readEvents(runId, after, limit) {
      metrics.queries += 1;
      const entries: Item[] = [];
      takeContiguous(range(runPk(runId), eventSk(after + 1), LAST_EVENT_SK), after, limit, entries);
      return Promise.all(entries.map((entry) => eventOf(entry, blobs)));
    },
    async getCheckpoint(runId, n) {
      const item = read(runPk(runId), checkpointSk(n));
      return item === undefined ? null : checkpointOf(item);
    },
    async listCheckpoints(runId) {
      metrics.queries += 1;
      return withPrefix(runPk(runId), 'C#')
        .map((i) => checkpointOf(i))
        .sort((a, b) => a.n - b.n);
    },
    async findBySubject(subject) {
      return (read(subjectKey(subject), 'S')?.run_id as string | undefined) ?? null;
    },
    async findByCreateKey(principalKey, key) {
      return (read(createKeyPk(principalKey, key), 'K')?.run_id as string | undefined) ?? null;
    },
    async listChildren(parentRunId) {
      metrics.queries += 1;
      return withPrefix(runPk(parentRunId), 'CH#').map((i) => i.run_id as string);
    },
    async findByResumeKey(resumeKey) {
      const item = read(resumeKeyPk(resumeKey), 'K');
      if (item === undefined) return null;
      return { run_id: item.run_id as string, op_id: item.op_id as string };
    },
    async sweepCandidates(shard, now, limit) {
      if (shard < 0 || shard >= SWEEP_SHARDS) throw new RangeError(`shard must be in [0, ${SWEEP_SHARDS})`);
      metrics.queries += 1;
      return recordItems()
        .filter((i) => i[ATTR.sweepShard] === String(shard) && Number(i[ATTR.sweepDue]) <= now)
        .sort((a, b) => Number(a[ATTR.sweepDue]) - Number(b[ATTR.sweepDue]))
        .slice(0, limit)
        .map((i) => String(i.pk).slice(4));
    },
    async listByStatus(status, limit, cursor) {
      let position: MemoryCursor | undefined;
      if (cursor !== undefined) {
        try {
          position = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as MemoryCursor;
        } catch {
          throw new SyntaxError('not a cursor this store issued');
        }
        if (typeof position?.created_at !== 'number' || typeof position.run_id !== 'string')
          throw new SyntaxError('not a cursor this store issued');
      }
      metrics.queries += 1;
      const shards = new Set(Array.from({ length: LISTING_SHARDS }, (_, i) => `${status}#${i}`));
      const before = (i: Item) =>
        position === undefined ||
        Number(i[ATTR.createdAt]) < position.created_at ||
        (Number(i[ATTR.createdAt]) === position.created_at && String(i.pk).slice(4) < position.run_id);
      const matching = recordItems()
        .filter((i) => shards.has(String(i[ATTR.statusShard])) && before(i))
        .sort(
          (a, b) =>
            Number(b[ATTR.createdAt]) - Number(a[ATTR.createdAt]) || String(b.pk).localeCompare(String(a.pk)),
        );
      const page = matching.slice(0, limit);
      const runIds = page.map((i) => String(i.pk).slice(4));
      const last = page.at(-1);
      if (matching.length <= limit || last === undefined) return { run_ids: runIds };
      const next: MemoryCursor = {
        created_at: Number(last[ATTR.createdAt]),
        run_id: String(last.pk).slice(4),
      };
      return { run_ids: runIds, cursor: Buffer.from(JSON.stringify(next)).toString('base64url') };
    },
    async commit(commit) {
      const plan = planCommit(commit, await storeCommitBodies(commit, blobs));
      metrics.transactions += 1;
      // From here to the end nothing awaits: every condition is evaluated, then every write is
      // applied, so a commit is atomic like a TransactWriteItems.
      const keys = plan.writes.map((w) => `${keyOf(w).pk}\u0000${keyOf(w).sk}`);
      if (new Set(keys).size !== keys.length) {
        // DynamoDB refuses a transaction that touches one item twice.
        const codes = keys.map((k, i) => (keys.indexOf(k) !== i ? 'ValidationError' : 'None'));
        throw classifyRefusal(commit, plan, codes, ['one item is written twice'], null);
      }
      const codes = plan.writes.map((w) =>
        holds(w.condition, get(keyOf(w).pk, keyOf(w).sk)) ? 'None' : 'ConditionalCheckFailed',
      );
      if (codes.some((c) => c !== 'None')) {
        const current = recordOf(get(runPk(commit.record.run_id), 'R'));
        throw classifyRefusal(commit, plan, codes, [], current);
      }
      for (const w of plan.writes) apply(w);
      return plan.record;
    },
  };
}
