/**
 * Plays the Lambda SQS event source mapping for the step handler on the local stack: long-polls
 * ReceiveMessage (batches of up to 10, with the queue's visibility timeout), invokes the handler
 * with a real SQSEvent, deletes the messages not listed in `batchItemFailures`, and leaves the
 * failed ones to reappear after the visibility timeout, so that the queue's redrive policy moves
 * a message to the DLQ after maxReceiveCount (5) receives, exactly as in AWS. Several batches
 * run concurrently (`concurrency` pollers). docs/guides/local-stack.md, "How it stands in for AWS".
 *
 * Event source mapping rules kept here (ReportBatchItemFailures): a handler that throws, or
 * answers a failure whose itemIdentifier is empty or not in the batch, fails the whole batch;
 * an empty or absent `batchItemFailures` acknowledges the whole batch.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describeError, type LogSink, SILENT_LOG } from '../handlers/observability.ts';

/** A handler shaped like functions/step.ts's (void counts as "every record succeeded"). */
export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

export interface PollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  /** The queue's ARN (the records' eventSourceARN). */
  queueArn: string;
  region: string;
  handler: SqsBatchHandler;
  /** Messages per batch, 1..10 (default 10). */
  batchSize?: number;
  /** Visibility timeout asked for on each receive, in seconds (default 60). */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait per ReceiveMessage, 0..20 s (default 1, so that stop() is quick). */
  waitTimeSeconds?: number;
  /** Batches handled at once (default 4). */
  concurrency?: number;
  /** The invocation's time limit for `context.getRemainingTimeInMillis()` (default 60 000 ms). */
  functionTimeoutMs?: number;
  functionName?: string;
  logger?: LogSink;
}

/** Counters of a running poller. */
export interface PollerStats {
  batches: number;
  received: number;
  deleted: number;
  /** Messages left on the queue to be redelivered (reported failed, or the whole batch failed). */
  failed: number;
  /** Invocations that threw. */
  errors: number;
}

export interface Poller {
  readonly stats: PollerStats;
  /** Stops receiving and waits up to `graceMs` (default 10 000) for batches in flight. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts the pollers; they run until stop(). Receive errors are logged and retried after 1 s. */
export function startPoller(options: PollerOptions): Poller {
  const logger = options.logger ?? SILENT_LOG;
  const batchSize = Math.min(10, Math.max(1, options.batchSize ?? 10));
  const visibility = options.visibilityTimeoutSeconds ?? 60;
  const waitTime = Math.min(20, Math.max(0, options.waitTimeSeconds ?? 1));
  const functionTimeoutMs = options.functionTimeoutMs ?? 60_000;
  const functionName = options.functionName ?? 'agent-runs-step';
  const stats: PollerStats = { batches: 0, received: 0, deleted: 0, failed: 0, errors: 0 };
  const stopping = new AbortController();

  async function receive(): Promise<Message[]> {
    const out = await options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: options.queueUrl,
        MaxNumberOfMessages: batchSize,
        WaitTimeSeconds: waitTime,
        VisibilityTimeout: visibility,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: stopping.signal },
    );
    return out.Messages ?? [];
  }

  async function handle(messages: Message[]): Promise<void> {
    stats.batches += 1;
    stats.received += messages.length;
    const event: SQSEvent = { Records: messages.map((m) => toRecord(m, options.queueArn, options.region)) };
    let failedIds: Set<string>;
    try {
      const response = await options.handler(event, lambdaContext(functionName, functionTimeoutMs));
      failedIds = failuresOf(response, event);
    } catch (err) {
      stats.errors += 1;
      logger.warn('step batch failed whole: its messages will be redelivered', {
        messages: messages.length,
        ...describeError(err),
      });
      failedIds = new Set(event.Records.map((r) => r.messageId));
    }
    stats.failed += failedIds.size;
    const done = messages.filter((m) => !failedIds.has(m.MessageId ?? ''));
    if (done.length === 0) return;
    const out = await options.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: options.queueUrl,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
    stats.deleted += out.Successful?.length ?? 0;
    if ((out.Failed?.length ?? 0) > 0) {
      logger.warn('some processed step messages could not be deleted: they will be redelivered', {
        failed: out.Failed?.map((f) => f.Code),
      });
    }
  }

  async function loop(): Promise<void> {
    while (!stopping.signal.aborted) {
      let messages: Message[];
      try {
        messages = await receive();
      } catch (err) {
        if (stopping.signal.aborted) return;
        logger.warn('ReceiveMessage failed; retrying in 1 s', describeError(err));
        await sleep(1_000, undefined, { signal: stopping.signal }).catch(() => {});
        continue;
      }
      if (messages.length === 0) continue;
      try {
        await handle(messages);
      } catch (err) {
        logger.error('step batch bookkeeping failed', describeError(err));
      }
    }
  }

  const loops = Array.from({ length: Math.max(1, options.concurrency ?? 4) }, () => loop());
  let stopped: Promise<void> | undefined;
  return {
    stats,
    stop(graceMs = 10_000) {
      stopped ??= (async () => {
        stopping.abort();
        const grace = sleep(graceMs, 'timeout' as const, { ref: false });
        const result = await Promise.race([Promise.all(loops).then(() => 'done' as const), grace]);
        if (result === 'timeout') {
          logger.warn('stopped with step batches still running: their messages will be redelivered', {
            grace_ms: graceMs,
          });
        }
      })();
      return stopped;
    },
  };
}

/** The record Lambda's event source mapping builds from one received message. */
export function toRecord(message: Message, queueArn: string, region: string): SQSRecord {
  const a = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? '000000000000',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, v]) => [
        name,
        {
          dataType: v.DataType ?? 'String',
          ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/** The ids to leave on the queue, per the ReportBatchItemFailures rules. */
function failuresOf(response: SQSBatchResponse | undefined, event: SQSEvent): Set<string> {
  const all = new Set(event.Records.map((r) => r.messageId));
  const failures = response?.batchItemFailures ?? [];
  const ids = new Set<string>();
  for (const f of failures) {
    if (typeof f.itemIdentifier !== 'string' || !all.has(f.itemIdentifier)) return all;
    ids.add(f.itemIdentifier);
  }
  return ids;
}

/** A Lambda context for a local invocation; the remaining time counts down from now. */
export function lambdaContext(functionName: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
