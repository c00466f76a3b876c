/**
 * The live fan-out: a run changed, so every connection subscribed to it receives the events it
 * has not been sent yet, in seq order, read from the run's log (the store is the outbox: the
 * table's stream says which run changed, never what to send), then `settled` once the run ended
 * and its log is complete. Each subscription keeps the last seq sent; a pump claims a page by
 * moving that cursor (conditionally) before it sends the page, so each seq reaches a
 * subscription once even while several pumps run. The subscribers of one
 * pump share its page reads: a page read from a cursor is read once per pump, however many
 * subscriptions stand at that cursor.
 * A connection that is gone is dropped; one whose token expired (the subscription's
 * `token_exp`) is sent nothing more and ended (lib/live/expiry.ts). A subscribe's catch-up is
 * charged to its principal's replay budget (`replay`), part by part before each part is claimed;
 * a refused charge ends the catch-up and the subscription with an `error`
 * `replay_budget_exceeded` (docs/guides/live-streams.md, "Replay budget").
 * docs/contracts/run-lifecycle.md, "over HTTP, WebSocket".
 */
import {
  isTerminalStatus,
  type LiveServerMessage,
  REPLAY_BUDGET_EXCEEDED,
  type RunEvent,
  type RunRecord,
} from '../contracts/index.ts';
import type { RateLimitedLog } from '../core/rate-limited-log.ts';
import type { RunStore } from '../engine/ports.ts';
import { expireConnection, tokenExpired } from './expiry.ts';
import { liveEventFrame } from './frame-bounds.ts';
import type { ConnectionPoster, ReplayTake, Subscription, SubscriptionStore } from './ports.ts';

/** Events read per page while catching a subscription up. */
export const FAN_OUT_PAGE = 100;

/**
 * The most bytes (the events' whole JSON) charged to a replay budget at once: a page is claimed
 * and sent in parts of at most this (or one event), each charged before it is claimed, so a
 * catch-up passes its principal's budget by less than one part.
 */
export const REPLAY_PART_BYTES = 256 * 1024;

/** Charges `bytes` of catch-up to the subscriber's principal (SubscriptionStore.takeReplay bound to it). */
export type ReplayCharge = (bytes: number) => Promise<ReplayTake>;

export interface FanOutDeps {
  store: Pick<RunStore, 'getRun' | 'readEvents'>;
  subscriptions: SubscriptionStore;
  poster: ConnectionPoster;
  /** The clock against the tokens' `exp` (ms since epoch; default Date.now). */
  now?: () => number;
  /**
   * Where a post that failed for a reason other than a gone connection is noted (a
   * rate-limited warn line with run_id, connection_id and the error's name); unset: only
   * counted in the report.
   */
  postFailures?: Pick<RateLimitedLog, 'note'>;
}

/** What one pump of a run did. */
export interface PumpReport {
  subscribers: number;
  sent: number;
  settled: number;
  gone: number;
  /** Connections ended because their token expired. */
  expired: number;
  /** Subscriptions whose catch-up stopped at a post that failed (not gone): see {@link pumpRun}. */
  failed: number;
  /** Subscriptions ended because their principal's replay budget was spent (`replay`). */
  refused: number;
}

/** An ended run whose reducer has received every event: its log will not grow. */
function settledAt(record: RunRecord): boolean {
  return isTerminalStatus(record.status) && record.inbox.length === 0;
}

/**
 * Sends every subscriber of `runId` (or only `only`, a new subscription) what it misses. Throws
 * when the store or the subscriptions cannot be read (the stream record is then retried).
 *
 * A post that fails for a reason other than a gone connection (API Gateway throttling, a
 * payload it refuses, a network error) does not throw: it is noted (`postFailures`, rate
 * limited), counted (`failed`), and that subscription's catch-up stops while the other
 * subscribers are served. Throwing would fail the stream record, and Lambda retries a DynamoDB
 * stream from the failed record, holding every later record of the shard (other runs, other
 * tenants) until the retries run out and then dropping them: one connection's trouble would
 * stall everyone's live events. The page was claimed before the post, so the client sees a gap
 * in seq at its next event and subscribes again from the last seq it holds (as after a crash
 * between claim and send); the subscription is kept, so the next change of the run retries it.
 *
 * With `replay` (a subscribe's catch-up), each part of a page (REPLAY_PART_BYTES, by the events'
 * whole JSON: what was read and serialized, even for a frame sent truncated) is charged before it
 * is claimed. A refused charge ends the subscription and sends an `error`
 * `replay_budget_exceeded` with `retry_after_ms` after the events already sent: the client
 * holds every seq up to the last one it received, and subscribes again from it later.
 */
export async function pumpRun(
  deps: FanOutDeps,
  runId: string,
  only?: Subscription,
  replay?: ReplayCharge,
): Promise<PumpReport> {
  const report: PumpReport = {
    subscribers: 0,
    sent: 0,
    settled: 0,
    gone: 0,
    expired: 0,
    failed: 0,
    refused: 0,
  };
  const subs = only !== undefined ? [only] : await deps.subscriptions.subscribers(runId);
  if (subs.length === 0) return report;
  const record = await deps.store.getRun(runId);
  if (record === null) return report;
  const pages = new Map<number, RunEvent[]>();
  const page = async (after: number) => {
    const found = pages.get(after) ?? (await deps.store.readEvents(runId, after, FAN_OUT_PAGE));
    pages.set(after, found);
    return found;
  };
  for (const sub of subs) {
    report.subscribers += 1;
    const outcome = await catchUp(deps, record, sub, page, replay);
    report.sent += outcome.sent;
    if (outcome.state === 'settled') report.settled += 1;
    if (outcome.state === 'gone') report.gone += 1;
    if (outcome.state === 'expired') report.expired += 1;
    if (outcome.state === 'failed') report.failed += 1;
    if (outcome.state === 'refused') report.refused += 1;
  }
  return report;
}

async function catchUp(
  deps: FanOutDeps,
  record: RunRecord,
  sub: Subscription,
  page: (after: number) => Promise<RunEvent[]>,
  replay: ReplayCharge | undefined,
): Promise<{ sent: number; state: 'open' | 'settled' | 'gone' | 'expired' | 'failed' | 'refused' }> {
  const now = deps.now ?? Date.now;
  /** Sends one message unless the token expired (the connection is then ended). */
  const push = async (message: LiveServerMessage): Promise<'sent' | 'gone' | 'expired' | 'failed'> => {
    if (tokenExpired(sub.token_exp, now())) {
      await expireConnection(deps, sub.connection_id);
      return 'expired';
    }
    let result: 'sent' | 'gone';
    try {
      result = await deps.poster.post(sub.connection_id, message);
    } catch (err) {
      deps.postFailures?.note({
        run_id: record.run_id,
        connection_id: sub.connection_id,
        error: (err as { name?: string }).name ?? 'Error',
        message: err instanceof Error ? err.message.slice(0, 200) : String(err).slice(0, 200),
      });
      return 'failed';
    }
    if (result === 'gone') await deps.subscriptions.deleteConnection(sub.connection_id);
    return result;
  };
  let cursor = sub.sent_seq;
  let sent = 0;
  pages: while (cursor < record.last_seq) {
    if (tokenExpired(sub.token_exp, now())) {
      // Before the claim: the cursor does not move over events this connection is not sent.
      await expireConnection(deps, sub.connection_id);
      return { sent, state: 'expired' };
    }
    const events = await page(cursor);
    if (events.length === 0) break;
    // A frame over MAX_LIVE_FRAME_BYTES goes without its data: the client fetches it over HTTP.
    const frames = events.map((event) => ({ seq: event.seq, ...liveEventFrame(record.run_id, event) }));
    for (const part of replay === undefined ? [frames] : replayParts(frames)) {
      const next = part[part.length - 1]?.seq as number;
      if (replay !== undefined) {
        const charged = await replay(part.reduce((n, f) => n + f.bytes, 0));
        if (!charged.ok) {
          await deps.subscriptions.unsubscribe(record.run_id, sub.connection_id);
          const result = await push({
            type: 'error',
            code: REPLAY_BUDGET_EXCEEDED,
            message: `the catch-up replay of this principal's subscribes is spent for now: subscribe again from seq ${cursor} in ${charged.retryAfterMs} ms`,
            run_id: record.run_id,
            retry_after_ms: charged.retryAfterMs,
          });
          return { sent, state: result === 'sent' ? 'refused' : result };
        }
      }
      // Claim the part before sending it: a pump sends only what it moved the cursor over, so two
      // pumps of one subscription (the subscribe's catch-up and the stream's, or a redelivered
      // stream record) never send a seq twice. A crash between the claim and the sends leaves a
      // gap the client sees (seq jumps) and closes by subscribing again from the seq it holds.
      if (!(await deps.subscriptions.advance(record.run_id, sub.connection_id, cursor, next))) {
        const moved = await deps.subscriptions.sentSeq(record.run_id, sub.connection_id);
        if (moved === null) return { sent, state: 'open' }; // unsubscribed meanwhile
        cursor = moved;
        continue pages;
      }
      for (const frame of part) {
        const result = await push(frame.message);
        if (result !== 'sent') return { sent, state: result };
        sent += 1;
      }
      cursor = next;
    }
  }
  if (settledAt(record) && cursor >= record.last_seq) {
    const settled = {
      type: 'settled' as const,
      run_id: record.run_id,
      last_seq: record.last_seq,
      status: record.status,
    };
    const result = await push(settled);
    if (result !== 'sent') return { sent, state: result };
    await deps.subscriptions.unsubscribe(record.run_id, sub.connection_id);
    return { sent, state: 'settled' };
  }
  return { sent, state: 'open' };
}

/** `frames` cut in order into parts of at most REPLAY_PART_BYTES each, or of one frame. */
function replayParts<F extends { bytes: number }>(frames: F[]): F[][] {
  const parts: F[][] = [];
  let bytes = 0;
  for (const frame of frames) {
    const last = parts[parts.length - 1];
    if (last !== undefined && bytes + frame.bytes <= REPLAY_PART_BYTES) {
      last.push(frame);
      bytes += frame.bytes;
    } else {
      parts.push([frame]);
      bytes = frame.bytes;
    }
  }
  return parts;
}
