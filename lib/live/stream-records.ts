/**
 * Reading the table's stream (DynamoDB Streams, NEW_AND_OLD_IMAGES): which run records changed,
 * and the lifecycle notification a status change makes. Only the run record item (`sk = R`)
 * matters: each commit changes it once, so one change is one commit. Pure: images in, shapes
 * out. docs/architecture.md, "The seams of a step" (notifications go through an outbox: no writer
 * knows who listens).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  isTerminalStatus,
  RUN_STATUSES,
  type RunNotification,
  type RunRecord,
  type RunStatus,
} from '../contracts/index.ts';
import { recordOf } from '../store/item-codec.ts';
import { boundedNotification } from './frame-bounds.ts';

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

/**
 * One commit of a run, as the stream shows it. The statuses come from the item's plain `status`
 * attribute (written beside the compressed body for the status index), so a commit that kept the
 * status costs no decoding: the record itself is decoded only when asked for (`after()`), which
 * notificationOf does for a status change only.
 */
export interface RunChange {
  run_id: string;
  /** The status before the commit; null when the record is new. */
  previous_status: RunStatus | null;
  /** The status after the commit; null when the record was removed. */
  status: RunStatus | null;
  /** The record after the commit (decoded once, on first call); null when it was removed. Throws on a corrupt image. */
  after(): RunRecord | null;
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

const STATUSES: ReadonlySet<string> = new Set(RUN_STATUSES);

/** The image's status attribute; the decoded record's when the attribute is absent or not a status. */
function imageStatus(image: Record<string, unknown> | undefined): RunStatus | null {
  if (image === undefined) return null;
  const attribute = (image.status as { S?: unknown } | undefined)?.S;
  if (typeof attribute === 'string' && STATUSES.has(attribute)) return attribute as RunStatus;
  return imageRecord(image)?.status ?? null;
}

/**
 * The run change a stream record carries, or null for any other item. Throws on a corrupt image
 * only when the image has no status attribute (the record is then decoded to read it).
 */
export function runChangeOf(record: StreamRecordLike): RunChange | null {
  if (!isRunRecordChange(record)) return null;
  const keys = record.dynamodb?.Keys as Record<string, { S?: string }>;
  const runId = (keys.pk?.S ?? '').slice('RUN#'.length);
  const newImage = record.dynamodb?.NewImage;
  let decoded: { record: RunRecord | null } | undefined;
  return {
    run_id: runId,
    previous_status: imageStatus(record.dynamodb?.OldImage),
    status: imageStatus(newImage),
    after: () => {
      decoded ??= { record: imageRecord(newImage) };
      return decoded.record;
    },
  };
}

/**
 * The lifecycle notification of a change, or null when the status stayed. Bounded: one over
 * MAX_NOTIFICATION_BYTES is made without its subject, terminal_reason and outcome, marked
 * `truncated: true` (frame-bounds.ts), so that EventBridge never refuses it.
 */
export function notificationOf(change: RunChange): RunNotification | null {
  if (change.status === null || change.previous_status === change.status) return null;
  const after = change.after();
  if (after === null) return null;
  const previous = change.previous_status;
  return boundedNotification({
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
  });
}
