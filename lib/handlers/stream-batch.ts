/**
 * The logic behind `functions/stream.ts`: one batch of the table's stream (DynamoDB Streams,
 * run record changes only: the event source mapping filters `sk = R`) → for each change, in
 * order, the run lifecycle notification when its status changed (EventBridge, or the local
 * file) and the live fan-out of the run (every subscribed connection gets the events it has not
 * been sent). Partial failures are reported through `@aws-lambda-powertools/batch`
 * (EventType.DynamoDBStreams, processed one record after the other): Lambda retries from the
 * first failed record, so a notification is published at least once and in order per run.
 * Only what is worth holding the shard for fails a record: a store or subscription read, or a
 * notification EventBridge refused (notifications are bounded, so a large run cannot cause
 * that). A post to one connection that fails (not gone) is logged at most every 10 s and
 * skipped (lib/live/fan-out.ts pumpRun says why): retrying the record would hold every later
 * record of the shard, other tenants' runs too.
 * docs/architecture.md, "The seams of a step" (notifications are published through an outbox:
 * no writer knows who listens); docs/contracts/run-lifecycle.md, "Following a run over HTTP,
 * WebSocket and SSE".
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { isTerminalStatus } from '../contracts/index.ts';
import { rateLimitedLog } from '../core/rate-limited-log.ts';
import type { RunStore } from '../engine/ports.ts';
import { type FanOutDeps, pumpRun } from '../live/fan-out.ts';
import type { NotificationPublisher } from '../live/ports.ts';
import {
  notificationOf,
  type RunChange,
  runChangeOf,
  type StreamRecordLike,
} from '../live/stream-records.ts';
import { describeError, type LogSink } from './observability.ts';

export interface StreamBatchDeps extends FanOutDeps {
  /** The fan-out's reads, and the subject release of each run that ended (the outbox's write). */
  store: FanOutDeps['store'] & Pick<RunStore, 'releaseSubject'>;
  publisher: NotificationPublisher;
  logger: LogSink;
}

export type StreamBatchHandler = (
  event: DynamoDBStreamEvent,
  context?: Context,
) => Promise<DynamoDBBatchResponse>;

export function createStreamBatchHandler(deps: StreamBatchDeps): StreamBatchHandler {
  // One line per 10 s at most, however many connections fail: a client can cause these at will.
  const postFailures =
    deps.postFailures ??
    rateLimitedLog(
      (message, attributes) => deps.logger.warn(message, attributes),
      'live post failed; that subscription skips to its next change (the client sees a gap and resubscribes)',
      { now: deps.now ?? Date.now },
    );
  const fanOut: FanOutDeps = { ...deps, postFailures };
  return async (event, context) => {
    const processor = new BatchProcessor(EventType.DynamoDBStreams);
    // A run pumped once in this batch is current: its later records only need their notification.
    const pumped = new Set<string>();
    const recordHandler = async (record: DynamoDBRecord): Promise<void> => {
      const change = runChangeOf(record as StreamRecordLike);
      if (change === null) return;
      // The run just ended: free its subject (its ending commit left that to the outbox).
      const ended = endedNow(change) ? change.after() : null;
      if (ended !== null) await deps.store.releaseSubject(ended);
      const notification = notificationOf(change);
      if (notification !== null) await deps.publisher.publish([notification]);
      if (change.status === null || pumped.has(change.run_id)) return;
      pumped.add(change.run_id);
      try {
        await pumpRun(fanOut, change.run_id);
      } catch (err) {
        pumped.delete(change.run_id);
        deps.logger.warn('live fan-out failed; the record is retried', {
          run_id: change.run_id,
          ...describeError(err),
        });
        throw err;
      }
    };
    return processPartialResponse(event, recordHandler, processor, {
      ...(context !== undefined ? { context } : {}),
      processInParallel: false,
    });
  };
}

/** True when the change is the commit that ended the run (its status became terminal). */
function endedNow(change: RunChange): boolean {
  return (
    change.status !== null &&
    isTerminalStatus(change.status) &&
    (change.previous_status === null || !isTerminalStatus(change.previous_status))
  );
}
