/**
 * How a commit's plan (commit-plan.ts) reaches the table, shared by both RunStore adapters: as
 * plain writes when it can, as one transaction otherwise, with the same atomicity and fence.
 * docs/architecture.md, "The commit"; docs/reference/storage.md.
 *
 * A transactional write costs twice a plain one, and most commits (an operation's result plus
 * the next one's start, a lease renewal) write only the run record, their events inline in its
 * tail (event-tail.ts): ONE conditional UpdateItem. A commit that flushes the tail writes the
 * record and one event page, as two plain writes, in this order:
 *   1. the event page, a Put keyed by its FIRST seq (the first seq of the tail read),
 *      stamped `commit_version` (the record version it commits) and conditioned `page_open`:
 *      no page there, or only one stamped with an older version;
 *   2. the record, one UpdateItem conditioned on its version (and the committer's fence), which
 *      makes the page part of the log: readers read the record first and never read a page at
 *      or past its tail's first seq.
 * A crash or a refusal between 1 and 2 leaves a page at the tail's first seq that no reader
 * reads (its events are the tail's, committed already) and the next flush overwrites. A
 * committed page is never overwritten: a writer that read an older record has a first seq
 * whose page is committed, stamped with a version at least its own, so `page_open` refuses it.
 * The tail the commit builds on is known without a read when the adapter saw that version
 * (event-tail.ts TailCache); else it is read with the record, which refuses a stale commit
 * before anything is written.
 *
 * A page refused at step 1 (or inside a transaction) means one of: the record moved (the
 * committer is stale: refused as stale_version or fenced_out, with the current record), or an
 * uncommitted page stamped with the same version holds the key: a writer between its steps 1
 * and 2, or one that died there. After a short pause, if the record still has not moved, the
 * committer steps the record's version (one fenced UpdateItem of the record as it is), which
 * refuses the other writer's step 2, and commits again on the new version, overwriting the page.
 *
 * A create that claims only its subject is two plain writes too: the subject item (stamped
 * `claimed_at`), then the record (plainCreateOf says how a claim whose record never came is
 * given up). A subject whose item names an ended run is free: its release is the stream
 * consumer's, after the ending commit (createPlanned).
 *
 * Everything else (a create with a create key, quota or parent link, a commit with
 * checkpoints, a control ack, index items, a state without events, several pages) stays one
 * TransactWriteItems.
 *
 * Every plan is metered (metering.ts `planMetered`): plain writes charged once, a transaction
 * twice, the version step too (the commit after it carries the step's charge on). Each plan
 * carries its own `commit_token` on its record update and page, so that a write retried after
 * it landed (its answer lost) is known as that plan's own, not someone else's.
 */
import { randomBytes } from 'node:crypto';
import { isTerminalStatus, type RunRecord } from '../contracts/index.ts';
import type { MeterCharge } from '../core/prices.ts';
import { leaseNamedBy } from '../core/run-machine.ts';
import { type Commit, CommitRejected } from '../engine/ports.ts';
import type { CommitBodies, CommitPlan } from './commit-plan.ts';
import type { EventTail, TailCache } from './event-tail.ts';
import { planMetered } from './metering.ts';
import type { Item, PlannedWrite } from './planned-write.ts';
import { ATTR } from './table.ts';

/** How many times a commit steps the version past an uncommitted page before giving up. */
export const PAGE_ROUNDS = 4;

/** A planned page put and a planned record update, executed as two plain writes. */
export interface PlainCommit {
  page?: Extract<PlannedWrite, { op: 'put' }>;
  record: Extract<PlannedWrite, { op: 'update' }>;
}

/**
 * The plan as plain writes: a record update alone, or a record update and one event page
 * conditioned `page_open`; null for every other plan (it stays a transaction).
 */
export function plainCommitOf(plan: CommitPlan): PlainCommit | null {
  const [record, page, ...rest] = plan.writes;
  if (record?.op !== 'update' || rest.length > 0) return null;
  if (page === undefined) return { record };
  if (page.op !== 'put' || page.role !== 'page' || page.condition?.kind !== 'page_open') return null;
  return { page, record };
}

/** A create's record put and subject put, executed as two plain writes (subject first). */
export interface PlainCreate {
  subject: Extract<PlannedWrite, { op: 'put' }>;
  record: Extract<PlannedWrite, { op: 'put' }>;
}

/**
 * The plan as a plain create: a create that claims nothing but its subject (no create key,
 * quota, parent link), executed as the subject put, stamped `claimed_at` by the store's clock,
 * then the record put; null for every other plan. Until the record lands the subject names a
 * run that does not exist: a create that meets such a claim older than CLAIM_GRACE_MS gives
 * that run up (a record tombstone, conditioned on no record being there) and takes the subject
 * over; a late record put of the given-up run is refused. See createPlanned.
 */
export function plainCreateOf(plan: CommitPlan): PlainCreate | null {
  const [record, subject, ...rest] = plan.writes;
  if (rest.length > 0 || record?.op !== 'put' || record.role !== 'record') return null;
  if (subject?.op !== 'put' || subject.role !== 'subject') return null;
  return { record, subject };
}

/**
 * How long (ms) a subject claim whose run has no record yet is taken to be a create under way
 * (its record put is one round trip behind) before another create may give that run up.
 */
export const CLAIM_GRACE_MS = 5_000;

/** What a subject item says of its claim: the run it names and when (ms), or null for none. */
export function subjectClaimOf(item: Item | undefined): { run_id: string; claimed_at?: number } | null {
  if (typeof item?.run_id !== 'string') return null;
  return typeof item.claimed_at === 'number'
    ? { run_id: item.run_id, claimed_at: item.claimed_at }
    : { run_id: item.run_id };
}

/** The tombstone a given-up create's run id gets: no run, never one (expires after a day). */
export function givenUpItem(pk: string, now: number): PlannedWrite {
  return {
    op: 'put',
    role: 'record',
    item: { pk, sk: 'R', given_up_at: now, [ATTR.expiresAtTtl]: Math.ceil(now / 1000) + 86_400 },
    condition: { kind: 'absent' },
  };
}

/**
 * True when a refused plan failed only on event pages (`codes` aligned with `plan.writes`): the
 * record's own condition held, so an uncommitted page holds the commit's first seq.
 */
export function pageTaken(plan: CommitPlan, codes: string[]): boolean {
  const failed = plan.writes.filter((_, i) => codes[i] !== undefined && codes[i] !== 'None');
  return (
    failed.length > 0 &&
    failed.every((w) => w.role === 'page' && w.condition?.kind === 'page_open') &&
    codes.every((c) => c === 'None' || c === 'ConditionalCheckFailed')
  );
}

/**
 * Why a commit whose page was refused cannot step past it, from the record as it is now: the
 * run is gone or moved (stale_version), or the committer's lease is not its own (fenced_out);
 * null when the record is still the one the commit read (an uncommitted page is in the way).
 */
export function pageRefusal(commit: Commit, current: RunRecord | null): CommitRejected | null {
  if (current === null) return new CommitRejected('stale_version', 'the run is gone', null);
  const fence = commit.fence;
  if (fence !== undefined && !leaseNamedBy(current, fence))
    return new CommitRejected('fenced_out', 'the lease is no longer ours', current);
  if (current.version !== commit.expectedVersion)
    return new CommitRejected('stale_version', 'the run changed since it was read', current);
  return null;
}

/** The record as it is now, when it is still the one `commit` read; else throws its refusal. */
async function unmoved(io: CommitIo, commit: Commit): Promise<{ record: RunRecord; tail: EventTail }> {
  const read = await io.readRecord(commit.record.run_id);
  if (read !== null) io.tails.set(read.record.run_id, read.record.version, read.tail);
  const refused = pageRefusal(commit, read?.record ?? null);
  if (refused !== null) throw refused;
  return read as { record: RunRecord; tail: EventTail };
}

/**
 * The record's inline tail at the version `commit` was built on: remembered (a version's tail
 * never changes), else read with the record, which also tells a stale commit at once (thrown as
 * its refusal, nothing written). Undefined for a create.
 */
async function tailFor(io: CommitIo, commit: Commit): Promise<EventTail | undefined> {
  if (commit.expectedVersion === null) return undefined;
  return io.tails.get(commit.record.run_id, commit.expectedVersion) ?? (await unmoved(io, commit)).tail;
}

/** What an adapter gives the protocol: its execution of one plan, a consistent record read, a pause. */
export interface CommitIo {
  /**
   * Executes one plan (as plain writes when plainCommitOf allows, else as one transaction):
   * 'committed', or 'page_taken' when only an event page's condition failed. Throws
   * CommitRejected for every other refusal.
   */
  execute(plan: CommitPlan, commit: Commit): Promise<'committed' | 'page_taken'>;
  /** The run record and its inline tail, strongly consistent; null when there is no run. */
  readRecord(runId: string): Promise<{ record: RunRecord; tail: EventTail } | null>;
  /** The tails the adapter has seen (event-tail.ts): a commit on a remembered version reads nothing. */
  tails: TailCache;
  sleep(ms: number): Promise<void>;
  /** The run the subject item `pk` names and when it was claimed (strongly consistent), or null. */
  subjectHolder(pk: string): Promise<{ run_id: string; claimed_at?: number } | null>;
  /** Writes the run's tombstone (givenUpItem) unless a record is there: true when written. */
  giveUp(runId: string): Promise<boolean>;
  /** The store's clock (ms since the epoch): subject claims are stamped and aged by it. */
  now(): number;
}

/** A fresh commit_token: marks the writes of one plan (see the header). */
const newToken = () => randomBytes(8).toString('hex');

/** True when a plan goes to the table as one transaction (charged twice), not as plain writes. */
const isTransaction = (plan: CommitPlan) => plainCommitOf(plan) === null && plainCreateOf(plan) === null;

/**
 * Writes one commit, charging the run `owed` with the commit's own write units (planMetered):
 * its plan, and past an uncommitted page by stepping the record's version (see the header).
 * Returns the stored record. Throws CommitRejected (stale_version, fenced_out, or
 * transaction_conflict after PAGE_ROUNDS steps), CommitTooLarge from the plan. The caller gives
 * `owed` back when it throws: no record that carried it was written.
 */
export async function commitPlanned(
  io: CommitIo,
  commit: Commit,
  bodies: CommitBodies,
  owed: MeterCharge,
): Promise<RunRecord> {
  if (commit.expectedVersion === null) return createPlanned(io, commit, bodies, owed);
  let current = commit;
  let tail = await tailFor(io, commit);
  for (let round = 0; ; round += 1) {
    const plan = planMetered(current, bodies, owed, isTransaction, newToken(), tail);
    if ((await io.execute(plan, current)) === 'committed') {
      io.tails.set(plan.record.run_id, plan.record.version, plan.tail);
      return plan.record;
    }
    if (round >= PAGE_ROUNDS)
      throw new CommitRejected('transaction_conflict', 'an uncommitted event page kept the commit out');
    // Usually the record moved (a writer won the race): refused at once. Else a writer between
    // its page and its record update finishes within a round trip: let it, and look again.
    await unmoved(io, current);
    await io.sleep(10 + Math.random() * 30);
    const read = await unmoved(io, current);
    // Step the version of the record as it is: the other writer's record update is refused.
    // The step is charged like any commit; the commit after it carries that charge on.
    const stepCommit: Commit = {
      record: read.record,
      expectedVersion: read.record.version,
      ...(current.fence !== undefined ? { fence: current.fence } : {}),
      events: [],
    };
    const step = planMetered(stepCommit, { events: new Map() }, {}, isTransaction, newToken(), read.tail);
    await io.execute(step, stepCommit);
    io.tails.set(step.record.run_id, step.record.version, step.tail);
    tail = step.tail;
    current = {
      ...current,
      record: { ...current.record, ...(step.record.metered ? { metered: step.record.metered } : {}) },
      expectedVersion: step.record.version,
    };
  }
}

/**
 * Writes a create. A subject whose item still names a run that has ended (its release, made by
 * the stream consumer after the ending commit, has not landed yet), or a run that is gone, is
 * free: the create is planned again with its subject put conditioned on the item still naming
 * that run, so a concurrent create that took it first, or the ended run's own release, refuses
 * it (subject_taken, and the engine reads again). A subject held by a live run stays refused.
 */
async function createPlanned(
  io: CommitIo,
  commit: Commit,
  bodies: CommitBodies,
  owed: MeterCharge,
): Promise<RunRecord> {
  let endedHolder: string | null = null;
  for (;;) {
    const planned = planMetered(commit, bodies, owed, isTransaction, newToken());
    const plan = endedHolder === null ? planned : takingSubjectFrom(planned, endedHolder);
    try {
      await io.execute(plan, commit);
      io.tails.set(plan.record.run_id, plan.record.version, plan.tail);
      return plan.record;
    } catch (err) {
      if (endedHolder !== null || !(err instanceof CommitRejected) || err.code !== 'subject_taken') throw err;
      endedHolder = await endedSubjectHolder(io, plan);
      if (endedHolder === null) throw err;
    }
  }
}

/**
 * The run a create's subject item names when that run has ended, or has no record and never
 * will (given up here, or before); else null (a live run, or a create of it under way).
 */
async function endedSubjectHolder(io: CommitIo, plan: CommitPlan): Promise<string | null> {
  const subject = plan.writes.find((w) => w.role === 'subject');
  if (subject?.op !== 'put') return null;
  const held = await io.subjectHolder(subject.item.pk);
  if (held === null || held.run_id === plan.record.run_id) return null;
  const read = await io.readRecord(held.run_id);
  if (read !== null) return isTerminalStatus(read.record.status) ? held.run_id : null;
  // No record: its create is one write behind, or died between its two writes.
  if (io.now() - (held.claimed_at ?? 0) < CLAIM_GRACE_MS) return null;
  if (await io.giveUp(held.run_id)) return held.run_id;
  const again = await io.readRecord(held.run_id);
  return again === null || isTerminalStatus(again.record.status) ? held.run_id : null;
}

/** `plan` with its subject put conditioned on the subject item naming `holder` (or none). */
function takingSubjectFrom(plan: CommitPlan, holder: string): CommitPlan {
  return {
    ...plan,
    writes: plan.writes.map((w) =>
      w.role === 'subject' ? { ...w, condition: { kind: 'absent_or_held_by', run_id: holder } } : w,
    ),
  };
}
