import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  GetItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { ensureResources } from '../../lib/local/resources.ts';
import { ATTR, GSI, sweepShardKey, TABLE_DEFINITION } from '../../lib/store/table.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
afterAll(() => clients.destroy());

describe('DynamoDB Local', () => {
  it('creates the table from the shared definition, with its GSIs and TTL', async () => {
    const { Table } = await clients.dynamo.send(new DescribeTableCommand({ TableName: local.tableName }));
    const { TimeToLiveDescription } = await clients.dynamo.send(
      new DescribeTimeToLiveCommand({ TableName: local.tableName }),
    );

    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    expect(Table?.GlobalSecondaryIndexes?.map((g) => g.IndexName).sort()).toEqual(
      TABLE_DEFINITION.globalSecondaryIndexes.map((g) => g.indexName).sort(),
    );
    expect(TimeToLiveDescription).toMatchObject({
      AttributeName: ATTR.expiresAtTtl,
      TimeToLiveStatus: 'ENABLED',
    });
  });

  it('commits a conditioned TransactWriteItems and explains a failed condition with the old item', async () => {
    // Prepare: a run record at version 1 plus its first event, written in one transaction.
    const pk = `RUN#${randomUUID()}`;
    await clients.dynamo.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Put: {
              TableName: local.tableName,
              Item: { pk: { S: pk }, sk: { S: 'R' }, version: { N: '1' }, status: { S: 'queued' } },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: local.tableName,
              Item: { pk: { S: pk }, sk: { S: 'E#000000000001' }, kind: { S: 'run_created' } },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );

    // Act: a stale writer (expects version 0) tries to bump the record and append event 2.
    const stale = clients.dynamo.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Update: {
              TableName: local.tableName,
              Key: { pk: { S: pk }, sk: { S: 'R' } },
              UpdateExpression: 'SET version = :next',
              ConditionExpression: 'version = :expected',
              ExpressionAttributeValues: { ':expected': { N: '0' }, ':next': { N: '1' } },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
          {
            Put: {
              TableName: local.tableName,
              Item: { pk: { S: pk }, sk: { S: 'E#000000000002' }, kind: { S: 'stale' } },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );

    // Assess: cancelled, reason per action in order, the record's old image returned, nothing written.
    const error = await stale.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransactionCanceledException);
    const reasons = (error as TransactionCanceledException).CancellationReasons;
    expect(reasons?.map((r) => r.Code)).toEqual(['ConditionalCheckFailed', 'None']);
    expect(reasons?.[0]?.Item).toEqual({
      pk: { S: pk },
      sk: { S: 'R' },
      version: { N: '1' },
      status: { S: 'queued' },
    });
    const event2 = await clients.dynamo.send(
      new GetItemCommand({
        TableName: local.tableName,
        Key: { pk: { S: pk }, sk: { S: 'E#000000000002' } },
        ConsistentRead: true,
      }),
    );
    expect(event2.Item).toBeUndefined();
  });

  it('finds a run on the sparse sweep GSI only while it carries the sweep keys', async () => {
    // Prepare: a due run record and one of its events (events never carry sweep keys).
    const runId = randomUUID();
    const key = { pk: `RUN#${runId}`, sk: 'R' };
    const shard = sweepShardKey(runId);
    await clients.doc.send(
      new PutCommand({
        TableName: local.tableName,
        Item: { ...key, [ATTR.sweepShard]: shard, [ATTR.sweepDue]: Date.now() - 1_000 },
      }),
    );
    await clients.doc.send(
      new PutCommand({ TableName: local.tableName, Item: { pk: key.pk, sk: 'E#000000000001' } }),
    );
    const dueInShard = async () => {
      const { Items } = await clients.doc.send(
        new QueryCommand({
          TableName: local.tableName,
          IndexName: GSI.sweep,
          KeyConditionExpression: '#shard = :shard AND #due <= :now',
          ExpressionAttributeNames: { '#shard': ATTR.sweepShard, '#due': ATTR.sweepDue },
          ExpressionAttributeValues: { ':shard': shard, ':now': Date.now() },
        }),
      );
      return (Items ?? []).filter((item) => item.pk === key.pk).map((item) => item.sk);
    };

    // Act + Assess: found while due; gone once the sweep keys are removed.
    expect(await dueInShard()).toEqual(['R']);
    await clients.doc.send(
      new UpdateCommand({
        TableName: local.tableName,
        Key: key,
        UpdateExpression: 'REMOVE #shard, #due',
        ExpressionAttributeNames: { '#shard': ATTR.sweepShard, '#due': ATTR.sweepDue },
      }),
    );
    expect(await dueInShard()).toEqual([]);
  });
});

describe('fauxqs SQS', () => {
  it('sends, receives and deletes a message', async () => {
    // Own queue pair per test so no other test can take the message.
    const id = randomUUID();
    const { queueUrl } = await ensureResources(local, {
      tableName: local.tableName,
      bucketName: local.bucketName,
      queueName: `q-${id}`,
      dlqName: `q-${id}-dlq`,
    });
    const body = JSON.stringify({ run_id: id });

    await clients.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    const received = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }),
    );
    expect(received.Messages?.map((m) => m.Body)).toEqual([body]);
    const handle = received.Messages?.[0]?.ReceiptHandle;
    expect(handle).toBeTypeOf('string');
    await clients.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: handle }));

    const afterDelete = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, VisibilityTimeout: 0, WaitTimeSeconds: 0 }),
    );
    expect(afterDelete.Messages ?? []).toEqual([]);
  });

  it('moves a message to the DLQ after maxReceiveCount 5 receives, idempotently re-ensured', async () => {
    const id = randomUUID();
    const names = {
      tableName: local.tableName,
      bucketName: local.bucketName,
      queueName: `q-${id}`,
      dlqName: `q-${id}-dlq`,
    };
    const first = await ensureResources(local, names);
    const again = await ensureResources(local, names);
    expect(again).toEqual(first);
    const { Attributes } = await clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: first.queueUrl, AttributeNames: ['RedrivePolicy'] }),
    );
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toEqual({
      deadLetterTargetArn: first.dlqArn,
      maxReceiveCount: 5,
    });

    await clients.sqs.send(new SendMessageCommand({ QueueUrl: first.queueUrl, MessageBody: 'poison' }));
    const receiveOnce = () =>
      clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: first.queueUrl, VisibilityTimeout: 0, WaitTimeSeconds: 1 }),
      );
    for (let i = 1; i <= 5; i++) {
      expect(
        (await receiveOnce()).Messages?.map((m) => m.Body),
        `receive ${i}`,
      ).toEqual(['poison']);
    }
    expect((await receiveOnce()).Messages ?? []).toEqual([]);

    const dead = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: first.dlqUrl, WaitTimeSeconds: 1 }),
    );
    expect(dead.Messages?.map((m) => m.Body)).toEqual(['poison']);
  });
});

describe('fauxqs S3', () => {
  it('stores and returns a 450 KB payload byte for byte', async () => {
    const key = `payloads/${randomUUID()}`;
    const payload = randomBytes(450 * 1024);
    const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

    await (await clients.s3.get()).send(
      new PutObjectCommand({
        Bucket: local.bucketName,
        Key: key,
        Body: payload,
        ContentType: 'application/octet-stream',
      }),
    );
    const got = await (await clients.s3.get()).send(
      new GetObjectCommand({ Bucket: local.bucketName, Key: key }),
    );
    const bytes = await got.Body?.transformToByteArray();

    expect(got.ContentLength).toBe(450 * 1024);
    expect(got.ContentType).toBe('application/octet-stream');
    expect(bytes && sha256(bytes)).toBe(sha256(payload));
  });
});
