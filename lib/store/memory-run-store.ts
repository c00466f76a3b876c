/**
 * RunStore in memory, with the DynamoDB adapter's semantics: it executes the same commit plans
 * (commit-plan.ts) by the same protocol (commit-protocol.ts: a plain commit's page, then its
 * record update; any other plan as one transaction), evaluating their conditions (version,
 * fence, absent items, open pages) against maps and applying every write of a transaction or
 * none, so versions, fences, contiguous seqs, event pages, state_at and the indexes behave alike. The store contract suite
 * (test/contract/run-store.contract.ts) runs against both adapters.
 *
 * It also refuses what DynamoDB refuses beyond the planner's limits: an item above 400 KB or a
 * transaction above 4 MB (sized by DynamoDB's published rules, see `itemSize`), and one item
 * written twice, as CommitRejected 'validation' (the DynamoDB adapter lets DynamoDB's
 * ValidationException through instead; both write nothing). Items are stored as DynamoDB's
 * document client stores them (undefined attributes dropped) and cloned in and out. It counts
 * read and write capacity units as DynamoDB does (metering.ts), the writes from the items as
 * stored (exact before-sizes and index keys; plain writes once, a transaction's twice), and
 * charges them to runs as the DynamoDB adapter does. Every call
 * yields to the event loop once before it touches the maps, as a network call would, so that
 * concurrent callers interleave (and a caller looping on the store never starves timers).
 *
 * A test and local-development aid for engine logic at unit speed, NEVER a production option:
 * nothing is durable, nothing is shared between processes. docs/guides/local-stack.md, "How it
 * stands in for AWS".
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { createMemoryBlobStore } from '../blobs/memory-blob-store.ts';
import type { RunRecord } from '../contracts/index.ts';
import { sumCharges } from '../core/prices.ts';
import { type Commit, CommitRejected, noStoreMetrics, type RunStore, SWEEP_SHARDS } from '../engine/ports.ts';
import {
  ackSk,
  type CommitBodies,
  type CommitPlan,
  checkpointSk,
  createKeyPk,
  eventSk,
  type Item,
  type PlannedWrite,
  planEarlyResult,
  quotaPk,
  quotaWindowSk,
  resumeKeyPk,
  runPk,
  stateSk,
  storeCommitBodies,
  subjectKey,
  subjectReleaseWrites,
} from './commit-plan.ts';
import {
  commitPlanned,
  givenUpItem,
  type PlainCreate,
  pageTaken,
  plainCommitOf,
  plainCreateOf,
  subjectClaimOf,
} from './commit-protocol.ts';
import { classifyRefusal } from './commit-refusal.ts';
import { type EventTail, pagedSeq, stateWhere, tailStatesItem } from './event-tail.ts';
import {
  checkpointOf,
  controlAckOf,
  createKeyItemOf,
  eventsOf,
  heldTailEntries,
  quotaUsageOf,
  recordAndTailOf,
  recordOf,
  resumeKeyEntryOf,
  stateOf,
  tailOf,
  takeContiguous,
  waitOf,
} from './item-codec.ts';
import { LISTING_KEY_ITEM, listingKeyOf, newListingKeyItem } from './listing-key.ts';
import { compareListing, type ListingPosition, listingCursor, listingPosition } from './listing-order.ts';
import { MemoryTable, seenIn, yieldOnce } from './memory-table.ts';
import { countingGets, itemReadUnits } from './metering.ts';
import { ATTR, principalHashOf } from './table.ts';

export interface MemoryRunStoreOptions {
  /** Where large payloads go (default: a fresh in-memory blob store). */
  blobs?: BlobStore;
  /**
   * Fault injection for the crash tests only: called after a plain commit's event page landed and
   * before its record update; what it throws ends the commit there (a dead writer).
   */
  afterPage?: (runId: string) => void | Promise<void>;
  /**
   * Fault injection for the crash tests only: called after a plain create's subject put and
   * before its record put (commit-protocol.ts plainCreateOf).
   */
  afterClaim?: (runId: string) => void | Promise<void>;
  /** The store's clock (ms since the epoch; default Date.now): stamps and ages subject claims. */
  now?: () => number;
}

/** The crash hooks and the clock of one store. */
interface Hooks extends Pick<MemoryRunStoreOptions, 'afterPage' | 'afterClaim'> {
  now: () => number;
}

/** A listing cursor of the memory store: the sort position of the last run returned. */
/** Where a run record item sorts in the listing of `status`, or null when it is not listed there. */
function listingKey(item: Item, status: string): ListingPosition | null {
  const [itemStatus] = String(item[ATTR.statusShard]).split('#');
  if (itemStatus !== status) return null;
  return { created_at: Number(item[ATTR.createdAt]), run_id: String(item.pk).slice(4) };
}

/** Where a run record sorts in the listing of the principal whose hash is `hash` (table.ts principalHashOf), or null. */
const principalListingKeys =
  (hash: string) =>
  (item: Item): ListingPosition | null => {
    const [itemHash] = String(item[ATTR.principalShard]).split('#');
    if (itemHash !== hash) return null;
    return { created_at: Number(item[ATTR.createdAt]), run_id: String(item.pk).slice(4) };
  };

/** The events of `runId` after `after` (the DynamoDB adapter's readEvents, over the maps). */
function eventEntriesIn(table: MemoryTable, runId: string, after: number, limit: number): Item[] {
  // The record first: only what its last_seq covers is committed, and its tail holds the newest.
  const item = table.read(runPk(runId), 'R');
  const read = tailOf(item);
  if (read === null || read.last_seq <= after) return [];
  if (typeof item?.version === 'number') table.tails.set(runId, item.version, read.tail);
  const paged = pagedSeq(read.tail);
  const entries: Item[] = [];
  if (after < paged) {
    table.metrics.queries += 1;
    const pages = table.range(runPk(runId), 'E#', eventSk(paged));
    // Pages are keyed by their first seq: after + 1 is in the last page starting at or below it.
    const head = pages.findLastIndex((p) => String(p.sk) <= eventSk(after + 1));
    takeContiguous(pages.slice(Math.max(head, 0)), after, limit, entries, paged);
    // Charged as the pages taken (the DynamoDB adapter's Query reads about these).
    table.charge(runPk(runId), itemReadUnits(entries, 'query'));
  }
  if (after + entries.length >= paged && entries.length < limit)
    takeContiguous([{ events: read.tail.events }], after, limit, entries, read.last_seq);
  return entries;
}

/** Domain state `rev` at `at` (the DynamoDB adapter's getState, over the maps). */
function stateItemIn(table: MemoryTable, runId: string, rev: number, sk: string): Item | undefined {
  let where = stateWhere(table.tails.latest(runId), rev, sk);
  if (where === 'unknown') {
    seenIn(table, table.read(runPk(runId), 'R'));
    where = stateWhere(table.tails.latest(runId), rev, sk, true);
  }
  if (where === 'tail') return tailStatesItem(table.tails.latest(runId) as EventTail);
  return where === 'none' ? undefined : table.read(runPk(runId), sk);
}

/** The runs of `shard` due at `now`, most overdue first (the DynamoDB adapter's sweep index query). */
function sweepCandidatesIn(table: MemoryTable, shard: number, now: number, limit: number): string[] {
  if (shard < 0 || shard >= SWEEP_SHARDS) throw new RangeError(`shard must be in [0, ${SWEEP_SHARDS})`);
  return table
    .recordItems()
    .filter((i) => i[ATTR.sweepShard] === String(shard) && Number(i[ATTR.sweepDue]) <= now)
    .sort((a, b) => Number(a[ATTR.sweepDue]) - Number(b[ATTR.sweepDue]))
    .slice(0, limit)
    .map((i) => String(i.pk).slice(4));
}

/** A page of the runs `keyOf` places, in the DynamoDB adapter's order: newest first over every shard (one query). */
async function listingIn(
  table: MemoryTable,
  keyOf: (item: Item) => ListingPosition | null,
  limit: number,
  cursor: string | undefined,
): Promise<{ run_ids: string[]; cursor?: string }> {
  await yieldOnce();
  table.metrics.queries += 1;
  // In the DynamoDB adapter's order: newest first over every shard, ties by run id.
  const position = cursor === undefined ? undefined : listingPosition(cursor);
  const entries = table
    .recordItems()
    .map(keyOf)
    .filter((key): key is ListingPosition => key !== null)
    .filter((key) => position === undefined || compareListing(key, position) > 0)
    .sort(compareListing);
  const page = entries.slice(0, limit);
  const last = page.at(-1);
  const runIds = page.map((key) => key.run_id);
  if (entries.length <= limit || last === undefined) return { run_ids: runIds };
  return { run_ids: runIds, cursor: listingCursor(last) };
}

/**
 * One plan, as the DynamoDB adapter executes it (commit-protocol.ts): a plain commit as its page,
 * one turn of the event loop, then its record update; any other plan all or nothing, like a
 * TransactWriteItems (every condition evaluated, then every write applied, nothing awaited in
 * between). Write units are counted as DynamoDB counts them (plain writes once, a transaction's
 * twice) from the items as stored before each write. 'page_taken' when only an event page's
 * condition failed; throws the refusal `classifyRefusal` names.
 */
async function executeIn(
  table: MemoryTable,
  plan: CommitPlan,
  commit: Commit,
  hooks: Hooks,
): Promise<'committed' | 'page_taken'> {
  table.metrics.transactions += 1;
  const runId = commit.record.run_id;
  const create = plainCreateOf(plan);
  if (create !== null) return createIn(table, plan, commit, create, hooks);
  const plain = plainCommitOf(plan);
  if (plain !== null) {
    table.metrics.writeRequests += plain.page === undefined ? 1 : 2;
    if (plain.page !== undefined) {
      if (!table.holds(plain.page)) return 'page_taken';
      table.write(plain.page, false);
      await hooks.afterPage?.(runId);
      await yieldOnce();
    }
    if (!table.holds(plain.record)) {
      // A refused record update deletes the attempt's page while it is still its own (its
      // version and commit_token), as the DynamoDB adapter does.
      const page = plain.page?.item;
      const stored = page === undefined ? undefined : table.get(page.pk, page.sk);
      if (
        page !== undefined &&
        stored?.commit_version === page.commit_version &&
        stored?.commit_token === page.commit_token
      )
        table.write({ op: 'delete', role: 'page', key: { pk: page.pk, sk: page.sk } }, false);
      const codes = plan.writes.map((w) => (w === plain.record ? 'ConditionalCheckFailed' : 'None'));
      throw classifyRefusal(commit, plan, codes, [], seenIn(table, table.get(runPk(runId), 'R')));
    }
    table.write(plain.record, false);
    return 'committed';
  }
  table.metrics.writeRequests += 1;
  const codes = plan.writes.map((w) => (table.holds(w) ? 'None' : 'ConditionalCheckFailed'));
  if (codes.some((c) => c !== 'None')) {
    if (pageTaken(plan, codes)) return 'page_taken';
    throw classifyRefusal(commit, plan, codes, [], seenIn(table, table.get(runPk(runId), 'R')));
  }
  for (const w of plan.writes) table.write(w, true);
  return 'committed';
}

/**
 * Writes one commit by the commit protocol (commit-protocol.ts) over `executeIn`, charging the
 * run the reads it owes (taken for the commit, given back when it fails).
 */
/** A plain create, as the DynamoDB adapter executes it (dynamo-writes.ts executeCreate). */
async function createIn(
  table: MemoryTable,
  plan: CommitPlan,
  commit: Commit,
  create: PlainCreate,
  hooks: Hooks,
): Promise<'committed'> {
  const subject = { ...create.subject, item: { ...create.subject.item, claimed_at: hooks.now() } };
  table.metrics.writeRequests += 1;
  if (!table.holds(subject)) {
    const codes = plan.writes.map((w) => (w === create.subject ? 'ConditionalCheckFailed' : 'None'));
    throw classifyRefusal(commit, plan, codes, [], null);
  }
  table.write(subject, false);
  await hooks.afterClaim?.(commit.record.run_id);
  await yieldOnce();
  table.metrics.writeRequests += 1;
  if (table.holds(create.record)) {
    table.write(create.record, false);
    return 'committed';
  }
  if (recordOf(table.get(runPk(commit.record.run_id), 'R')) === null)
    throw new CommitRejected('subject_taken', 'the create was given up: another create took its subject');
  table.write(
    { op: 'delete', role: 'subject_release', key: { pk: subject.item.pk, sk: subject.item.sk } },
    false,
  );
  throw new CommitRejected('stale_version', 'the run already exists');
}

async function commitIn(
  table: MemoryTable,
  commit: Commit,
  bodies: CommitBodies,
  hooks: Hooks,
): Promise<RunRecord> {
  const runId = commit.record.run_id;
  const reads = table.reads.take(runId);
  try {
    return await commitPlanned(
      {
        execute: (plan, c) => executeIn(table, plan, c, hooks),
        readRecord: async (id) => {
          await yieldOnce();
          return recordAndTailOf(table.read(runPk(id), 'R'));
        },
        tails: table.tails,
        sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
        subjectHolder: async (pk) => {
          await yieldOnce();
          return subjectClaimOf(table.read(pk, 'S'));
        },
        async giveUp(id) {
          await yieldOnce();
          const tombstone = givenUpItem(runPk(id), hooks.now());
          if (!table.holds(tombstone)) return false;
          table.write(tombstone, false);
          return true;
        },
        now: hooks.now,
      },
      commit,
      bodies,
      sumCharges(commit.charge ?? {}, reads),
    );
  } catch (err) {
    table.reads.add(runId, reads);
    throw err;
  }
}

/** Each of `writes` as a plain conditional write, made when its condition holds. */
async function writeHeld(table: MemoryTable, writes: PlannedWrite[]): Promise<void> {
  await yieldOnce();
  for (const w of writes) if (table.holds(w)) table.write(w, false);
}

export function createMemoryRunStore(options: MemoryRunStoreOptions = {}): RunStore {
  const blobs = options.blobs ?? createMemoryBlobStore();
  const metrics = noStoreMetrics();
  const table = new MemoryTable(metrics);
  const hooks: Hooks = { ...options, now: options.now ?? Date.now };
  // The blob store with each get charged to `runId` as an S3 GET.
  const blobGets = (runId: string) =>
    countingGets(blobs, () => table.reads.add(runId, { s3_get_requests: 1 }));

  return {
    metrics,
    async getRun(runId) {
      await yieldOnce();
      return seenIn(table, table.read(runPk(runId), 'R'));
    },
    async getStatus(runId, opts) {
      await yieldOnce();
      const record = recordOf(table.read(runPk(runId), 'R', opts?.consistent === true));
      if (record === null) return null;
      const interrupt = 'interrupt_requested' in record ? record.interrupt_requested : undefined;
      return { status: record.status, interrupt_requested: interrupt ?? null };
    },
    async getRunAndAck(runId, controlId) {
      await yieldOnce();
      metrics.reads += 1;
      const ack = table.get(runPk(runId), ackSk(controlId));
      const record = table.get(runPk(runId), 'R');
      table.charge(runPk(runId), itemReadUnits([record, ack], 'batch'));
      return {
        record: seenIn(table, record),
        ack: ack === undefined ? null : controlAckOf(ack),
      };
    },
    async getState(runId, rev, at) {
      await yieldOnce();
      if (rev === 0) return null;
      const sk = at ?? stateSk(rev);
      return stateOf(stateItemIn(table, runId, rev, sk), runId, rev, sk, blobGets(runId));
    },
    async readEvents(runId, after, limit, held) {
      await yieldOnce();
      const entries =
        heldTailEntries(table.tails, runId, after, limit, held) ?? eventEntriesIn(table, runId, after, limit);
      return eventsOf(entries, blobGets(runId), (linked, first, count) =>
        this.readEvents(linked, first, count),
      );
    },
    async getCheckpoint(runId, n) {
      await yieldOnce();
      const item = table.read(runPk(runId), checkpointSk(n));
      return item === undefined ? null : checkpointOf(item);
    },
    async listCheckpoints(runId) {
      await yieldOnce();
      metrics.queries += 1;
      return table
        .withPrefix(runPk(runId), 'C#')
        .map((i) => checkpointOf(i))
        .sort((a, b) => a.n - b.n);
    },
    async findBySubject(subject) {
      await yieldOnce();
      return (table.read(subjectKey(subject), 'S')?.run_id as string | undefined) ?? null;
    },
    async findByCreateKey(principalKey, key) {
      await yieldOnce();
      return createKeyItemOf(table.read(createKeyPk(principalKey, key), 'K'));
    },
    async readQuota(principalKey, windowStart) {
      await yieldOnce();
      metrics.queries += 1;
      const pk = quotaPk(principalKey);
      return quotaUsageOf(table.withPrefix(pk, 'L#'), table.read(pk, quotaWindowSk(windowStart)));
    },
    async listChildren(parentRunId) {
      await yieldOnce();
      metrics.queries += 1;
      return table.withPrefix(runPk(parentRunId), 'CH#').map((i) => i.run_id as string);
    },
    async findByResumeKey(resumeKey) {
      await yieldOnce();
      return waitOf(table.read(resumeKeyPk(resumeKey), 'K'));
    },
    async readResumeKey(resumeKey, now) {
      await yieldOnce();
      return resumeKeyEntryOf(table.read(resumeKeyPk(resumeKey), 'K'), now);
    },
    releaseSubject: (record) => writeHeld(table, subjectReleaseWrites(record)),
    async holdEarlyResult(hold) {
      await yieldOnce();
      const write = planEarlyResult(hold);
      if (!table.holds(write)) return false;
      table.apply(write);
      return true;
    },
    async sweepCandidates(shard, now, limit) {
      await yieldOnce();
      metrics.queries += 1;
      return sweepCandidatesIn(table, shard, now, limit);
    },
    listByStatus: (status, limit, cursor) => listingIn(table, (i) => listingKey(i, status), limit, cursor),
    listByPrincipal: (principalKey, limit, cursor) =>
      listingIn(table, principalListingKeys(principalHashOf(principalKey)), limit, cursor),
    async listingKey() {
      await yieldOnce();
      const found = listingKeyOf(table.read(LISTING_KEY_ITEM.pk, LISTING_KEY_ITEM.sk));
      if (found !== null) return found;
      const item = newListingKeyItem();
      table.metrics.writeRequests += 1;
      table.apply({ op: 'put', role: 'record', item });
      return listingKeyOf(item) as Uint8Array;
    },
    async commit(commit) {
      await yieldOnce();
      return commitIn(table, commit, await storeCommitBodies(commit, blobs), hooks);
    },
  };
}
