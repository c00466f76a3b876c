/**
 * Creates the stack's resources on the local emulators: the one table (from lib/store/table.ts,
 * the definition the CDK stack uses too), the step queue with its DLQ, and the payload bucket.
 * docs/reference/storage.md; docs/guides/local-stack.md, "How it stands in for AWS".
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { BucketAlreadyOwnedByYou, CreateBucketCommand } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { type AwsClients, type AwsEndpoints, createAwsClients } from '../aws-clients.ts';
import { createTableInput, DEFAULT_TABLE_NAME, TABLE_DEFINITION, timeToLiveInput } from '../store/table.ts';

/** Step queue settings shared with the CDK stack. */
export const STEP_QUEUE_DEFINITION = {
  /** Receives before SQS moves a message to the DLQ. */
  maxReceiveCount: 5,
  /** DLQ retention: the SQS maximum, 14 days, in seconds. */
  dlqMessageRetentionSeconds: 1_209_600,
} as const;

export interface ResourceNames {
  tableName: string;
  queueName: string;
  dlqName: string;
  bucketName: string;
}

export const DEFAULT_RESOURCE_NAMES: ResourceNames = {
  tableName: DEFAULT_TABLE_NAME,
  queueName: 'agent-runs-step',
  dlqName: 'agent-runs-step-dlq',
  bucketName: 'agent-runs-payloads',
};

/** What exists after {@link ensureResources}. */
export interface LocalResources extends ResourceNames {
  queueUrl: string;
  queueArn: string;
  dlqUrl: string;
  dlqArn: string;
}

/**
 * Creates the table (+ TTL), the DLQ, the step queue (redrive to the DLQ after
 * maxReceiveCount 5) and the payload bucket, each only if missing: safe to call on every
 * start, also against a persisted directory. Throws if the table exists with other GSIs than
 * the definition (a stale persisted database: delete it). SDK errors propagate unchanged.
 */
export async function ensureResources(
  endpoints: AwsEndpoints,
  names: Partial<ResourceNames> = {},
): Promise<LocalResources> {
  const resolved: ResourceNames = { ...DEFAULT_RESOURCE_NAMES, ...names };
  const clients = createAwsClients(endpoints);
  try {
    const [queues] = await Promise.all([
      ensureQueues(clients.sqs, resolved),
      ensureTable(clients.dynamo, resolved.tableName),
      ensureBucket(clients.s3, resolved.bucketName),
    ]);
    return { ...resolved, ...queues };
  } finally {
    clients.destroy();
  }
}

async function ensureTable(dynamo: AwsClients['dynamo'], tableName: string): Promise<void> {
  try {
    await dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client: dynamo, maxWaitTime: 60, minDelay: 1 }, { TableName: tableName });

  const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
  const actual = (Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName).sort();
  const expected = TABLE_DEFINITION.globalSecondaryIndexes.map((g) => g.indexName).sort();
  if (actual.join() !== expected.join()) {
    throw new Error(
      `table ${tableName} exists with GSIs [${actual.join(', ')}], expected [${expected.join(', ')}]: ` +
        'it was created from an older definition; delete it (or the persisted local data) and start again',
    );
  }

  // A table persisted before the stream was part of the definition: turn it on.
  if (Table?.StreamSpecification?.StreamEnabled !== true) {
    await dynamo.send(
      new UpdateTableCommand({
        TableName: tableName,
        StreamSpecification: { StreamEnabled: true, StreamViewType: TABLE_DEFINITION.stream },
      }),
    );
  }

  const ttl = await dynamo.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
  if (status !== 'ENABLED' && status !== 'ENABLING') {
    await dynamo.send(new UpdateTimeToLiveCommand(timeToLiveInput(tableName)));
  }
}

async function ensureQueues(
  sqs: AwsClients['sqs'],
  names: ResourceNames,
): Promise<Pick<LocalResources, 'queueUrl' | 'queueArn' | 'dlqUrl' | 'dlqArn'>> {
  const dlq = await createQueue(sqs, names.dlqName, {
    MessageRetentionPeriod: String(STEP_QUEUE_DEFINITION.dlqMessageRetentionSeconds),
  });
  const queue = await createQueue(sqs, names.queueName, {
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: STEP_QUEUE_DEFINITION.maxReceiveCount,
    }),
  });
  return { queueUrl: queue.url, queueArn: queue.arn, dlqUrl: dlq.url, dlqArn: dlq.arn };
}

/** CreateQueue without attributes (idempotent whatever exists), then SetQueueAttributes (idempotent too). */
async function createQueue(
  sqs: AwsClients['sqs'],
  name: string,
  attributes: Record<string, string>,
): Promise<{ url: string; arn: string }> {
  const { QueueUrl: url } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  if (url === undefined) throw new Error(`CreateQueue ${name} returned no QueueUrl`);
  await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`GetQueueAttributes ${name} returned no QueueArn`);
  return { url, arn };
}

async function ensureBucket(client: AwsClients['s3'], bucketName: string): Promise<void> {
  const s3 = await client.get();
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucketName }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
  }
}
