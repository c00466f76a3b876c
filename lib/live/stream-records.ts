/**
 * Reading the table's stream (DynamoDB Streams, NEW_AND_OLD_IMAGES): which run records changed,
 * and the lifecycle notification a status change makes. Only the run record item (`sk = R`)
 * matters: each commit changes it once, so one change is one commit. Pure: images in, shapes
 * out. docs/architecture.md, "The seams of a step" (notifications go through an outbox: no writer
 * knows who listens).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { isTerminalStatus, type RunNotification, type RunRecord } from '../contracts/index.ts';
import { recordOf } from '../store/item-codec.ts';

/** The parts of a stream record (Lambda's DynamoDBRecord, or DynamoDB Streams' own) read here. */
export interface StreamRecordLike {
  eventName?: string | undefined;
  dynamodb?:
    | {
        Keys?: Record<string, AttributeValue | { S?: string }> | undefined;
        NewImage?: Record<string, unknown> | undefined;
        OldImage?: Record<string, unknown> | undefined;
      }
    | undefined;
}

/** One commit of a run, as the stream shows it. */
export interface RunChange {
  run_id: string;
  before: RunRecord | null;
  after: RunRecord | null;
}

/** The filter the event source mapping applies (and the local poller too): run record items only. */
export const RUN_RECORD_FILTER = { dynamodb: { Keys: { sk: { S: ['R'] } } } } as const;

/** Whether the stream record is a change of a run record item. */
export function isRunRecordChange(record: StreamRecordLike): boolean {
  const keys = record.dynamodb?.Keys as Record<string, { S?: string }> | undefined;
  return keys?.sk?.S === 'R' && typeof keys.pk?.S === 'string' && keys.pk.S.startsWith('RUN#');
}

function imageRecord(image: Record<string, unknown> | undefined): RunRecord | null {
  if (image === undefined) return null;
  return recordOf(unmarshall(image as Record<string, AttributeValue>));
}

/** The run change a stream record carries, or null for any other item. Throws on a corrupt image. */
export function runChangeOf(record: StreamRecordLike): RunChange | null {
  if (!isRunRecordChange(record)) return null;
  const keys = record.dynamodb?.Keys as Record<string, { S?: string }>;
  const runId = (keys.pk?.S ?? '').slice('RUN#'.length);
  return {
    run_id: runId,
    before: imageRecord(record.dynamodb?.OldImage),
    after: imageRecord(record.dynamodb?.NewImage),
  };
}

/** The lifecycle notification of a change, or null when the status stayed. */
export function notificationOf(change: RunChange): RunNotification | null {
  const after = change.after;
  if (after === null) return null;
  const previous = change.before?.status ?? null;
  if (previous === after.status) return null;
  return {
    run_id: after.run_id,
    status: after.status,
    previous_status: previous,
    seq: after.last_seq,
    version: after.version,
    at: after.updated_at,
    terminal: isTerminalStatus(after.status),
    ...('terminal_reason' in after ? { terminal_reason: after.terminal_reason } : {}),
    ...('outcome' in after ? { outcome: after.outcome } : {}),
    ...(after.parent_run_id !== undefined ? { parent_run_id: after.parent_run_id } : {}),
    principal: { kind: after.principal.kind, id: after.principal.id },
    subject: { workspace: after.subject.workspace, path: after.subject.path },
  };
}
