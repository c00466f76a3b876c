/**
 * Plays the Lambda DynamoDB Streams event source mapping for the stream handler on the local
 * stack, over DynamoDB Local's own stream of the run table (DynamoDB Local implements the
 * DynamoDB Streams API; fauxqs covers SQS and S3 only): it walks the stream's shards in order
 * (DescribeStream, GetShardIterator, GetRecords), keeps the records the mapping's filter keeps
 * (run record items, RUN_RECORD_FILTER), hands them to the handler as a real
 * DynamoDBStreamEvent, and on `batchItemFailures` retries from the first failed record, as the
 * mapping does with ReportBatchItemFailures (up to `retryAttempts`, then the records are skipped
 * and logged, like a mapping without an on-failure destination). Shards that exist when it
 * starts are read from LATEST, shards found later from TRIM_HORIZON. docs/guides/local-stack.md,
 * "How it stands in for AWS".
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { describeError, type LogSink, SILENT_LOG } from '../handlers/observability.ts';
import { isRunRecordChange, type StreamRecordLike } from '../live/stream-records.ts';

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamPollerOptions {
  dynamo: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  tableName: string;
  handler: StreamHandler;
  region: string;
  /** Pause between empty reads (ms, default 100). */
  idleMs?: number;
  /** Records per GetRecords (default 100). */
  batchSize?: number;
  /** Retries of a failed record before it is skipped (default 10). */
  retryAttempts?: number;
  logger?: LogSink;
}

export interface StreamPoller {
  readonly stats: { batches: number; records: number; retries: number; skipped: number };
  stop(): Promise<void>;
}

/** A record as Lambda hands it over (epoch seconds for the creation time, the ARN as source). */
function lambdaRecord(record: StreamRecord, streamArn: string, region: string): DynamoDBRecord {
  const d = record.dynamodb ?? {};
  const created = d.ApproximateCreationDateTime;
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(d as unknown as NonNullable<DynamoDBRecord['dynamodb']>),
      ...(created !== undefined
        ? { ApproximateCreationDateTime: Math.floor(new Date(created).getTime() / 1000) }
        : {}),
    },
  };
}

/** Starts polling; resolves once the stream is found and the initial iterators are taken. */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const logger = options.logger ?? SILENT_LOG;
  const idleMs = options.idleMs ?? 100;
  const retryAttempts = options.retryAttempts ?? 10;
  const stats = { batches: 0, records: 0, retries: 0, skipped: 0 };
  const table = await options.dynamo.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = table.Table?.LatestStreamArn;
  if (streamArn === undefined) throw new Error(`table ${options.tableName} has no stream`);
  /** Shard id → its next iterator; null once the shard is closed and read to its end. */
  const iterators = new Map<string, string | null>();

  async function discover(initial: boolean): Promise<void> {
    let start: string | undefined;
    do {
      const out = await options.streams.send(
        new DescribeStreamCommand({
          StreamArn: streamArn,
          ...(start !== undefined ? { ExclusiveStartShardId: start } : {}),
        }),
      );
      for (const shard of out.StreamDescription?.Shards ?? []) {
        const id = shard.ShardId;
        if (id === undefined || iterators.has(id)) continue;
        const it = await options.streams.send(
          new GetShardIteratorCommand({
            StreamArn: streamArn,
            ShardId: id,
            ShardIteratorType: initial ? 'LATEST' : 'TRIM_HORIZON',
          }),
        );
        iterators.set(id, it.ShardIterator ?? null);
      }
      start = out.StreamDescription?.LastEvaluatedShardId;
    } while (start !== undefined);
  }

  /** Hands `records` to the handler, retrying from the first failure. */
  async function deliver(records: DynamoDBRecord[]): Promise<void> {
    let pending = records;
    let attempts = 0;
    while (pending.length > 0) {
      stats.batches += 1;
      let failedFrom = -1;
      try {
        const out = await options.handler({ Records: pending });
        const failures = new Set((out?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        failedFrom = pending.findIndex(
          (r) => r.dynamodb?.SequenceNumber !== undefined && failures.has(r.dynamodb.SequenceNumber),
        );
      } catch (err) {
        logger.warn('stream handler threw; the batch is retried', describeError(err));
        failedFrom = 0;
      }
      if (failedFrom < 0) return;
      attempts += 1;
      stats.retries += 1;
      if (attempts > retryAttempts) {
        stats.skipped += pending.length - failedFrom;
        logger.error('stream records skipped after their retries', { count: pending.length - failedFrom });
        return;
      }
      pending = pending.slice(failedFrom);
      await sleep(Math.min(1_000, 50 * 2 ** attempts));
    }
  }

  let stopping = false;
  let closed = false;
  await discover(true);
  const loop = (async () => {
    while (!stopping) {
      let read = 0;
      try {
        for (const [shard, iterator] of iterators) {
          if (iterator === null || stopping) continue;
          const out = await options.streams.send(
            new GetRecordsCommand({ ShardIterator: iterator, Limit: options.batchSize ?? 100 }),
          );
          iterators.set(shard, out.NextShardIterator ?? null);
          if (out.NextShardIterator === undefined) closed = true;
          const records = (out.Records ?? [])
            .map((r) => lambdaRecord(r, streamArn, options.region))
            .filter((r) => isRunRecordChange(r as StreamRecordLike));
          read += out.Records?.length ?? 0;
          stats.records += records.length;
          if (records.length > 0) await deliver(records);
        }
        if (closed) {
          // A shard closed: its children carry on from their start.
          closed = false;
          await discover(false);
        }
      } catch (err) {
        if (stopping) break;
        logger.warn('stream read failed; retrying', describeError(err));
        await sleep(500);
      }
      if (read === 0 && !stopping) await sleep(idleMs);
    }
  })();
  return {
    stats,
    async stop() {
      stopping = true;
      await loop;
    },
  };
}
