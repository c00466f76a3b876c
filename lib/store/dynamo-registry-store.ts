/**
 * The RegistryStore on the one DynamoDB table (items in registry-items.ts). A publication is
 * one TransactWriteItems of three Puts built from named conditions:
 *
 *   head      `headAt(n)`        attribute_not_exists(pk) for n = 0, else version = n
 *   snapshot  `neverWritten`     attribute_not_exists(pk)
 *   entry     `neverWritten`     attribute_not_exists(pk): a published version never changes
 *
 * with ReturnValuesOnConditionCheckFailure ALL_OLD, so a cancelled transaction says which part
 * failed: the entry → version_exists; the head, the snapshot, or a conflicting transaction →
 * head_moved (read the head again). Reads are strongly consistent GetItems and one Query per
 * name (versions). docs/reference/storage.md.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  paginateQuery,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { raisingStoreUnavailable } from '../aws-faults.ts';
import type { RegistryEntry, RegistryKind, RegistrySnapshot } from '../contracts/index.ts';
import { RegistryConflictError, type RegistryStore, StoreUnavailable } from '../engine/ports.ts';
import {
  emptySnapshot,
  entryAttributes,
  entryKey,
  entryOfItem,
  entryPartition,
  headKey,
  snapshotAttributes,
  snapshotKey,
  snapshotOfItem,
  versionsInOrder,
} from './registry-items.ts';

export interface DynamoRegistryStoreOptions {
  doc: DynamoDBDocumentClient;
  tableName: string;
}

const neverWritten = { ConditionExpression: 'attribute_not_exists(pk)' };
const headAt = (n: number) =>
  n === 0
    ? neverWritten
    : {
        ConditionExpression: '#version = :expected',
        ExpressionAttributeNames: { '#version': 'version' },
        ExpressionAttributeValues: { ':expected': n },
      };

/**
 * The DynamoDB RegistryStore. Throws RegistryConflictError for a refused publication and
 * StoreUnavailable (retryable) when DynamoDB is unreachable or throttles (lib/aws-faults.ts).
 */
export function createDynamoRegistryStore(options: DynamoRegistryStoreOptions): RegistryStore {
  const { doc, tableName: TableName } = options;
  const get = async (Key: { pk: string; sk: string }) =>
    (await doc.send(new GetCommand({ TableName, Key, ConsistentRead: true }))).Item;
  return raisingStoreUnavailable<RegistryStore>(
    {
      async head(kind) {
        const item = await get(headKey(kind));
        return typeof item?.version === 'number' ? item.version : 0;
      },
      async snapshot(kind, version) {
        if (version === 0) return emptySnapshot(kind);
        const item = await get(snapshotKey(kind, version));
        return item === undefined ? null : snapshotOfItem(kind, item);
      },
      async entry(kind, name, version) {
        const item = await get(entryKey(kind, name, version));
        return item === undefined ? null : entryOfItem(item);
      },
      async versions(kind: RegistryKind, name: string) {
        const found: RegistryEntry[] = [];
        const pages = paginateQuery(
          { client: doc },
          {
            TableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': entryPartition(kind, name) },
            ConsistentRead: true,
          },
        );
        for await (const page of pages) for (const item of page.Items ?? []) found.push(entryOfItem(item));
        return versionsInOrder(found);
      },
      async publish(entry: RegistryEntry, snapshot: RegistrySnapshot) {
        const returnOld = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const };
        try {
          await doc.send(
            new TransactWriteCommand({
              TransactItems: [
                {
                  Put: {
                    TableName,
                    Item: { ...headKey(entry.kind), version: snapshot.version },
                    ...headAt(snapshot.version - 1),
                    ...returnOld,
                  },
                },
                {
                  Put: {
                    TableName,
                    Item: { ...snapshotKey(entry.kind, snapshot.version), ...snapshotAttributes(snapshot) },
                    ...neverWritten,
                    ...returnOld,
                  },
                },
                {
                  Put: {
                    TableName,
                    Item: { ...entryKey(entry.kind, entry.name, entry.version), ...entryAttributes(entry) },
                    ...neverWritten,
                    ...returnOld,
                  },
                },
              ],
            }),
          );
        } catch (err) {
          if (!(err instanceof TransactionCanceledException)) throw err;
          const codes = (err.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
          if (codes.includes('ThrottlingError') || codes.includes('ProvisionedThroughputExceeded'))
            throw new StoreUnavailable(`DynamoDB throttled the publication: ${codes.join(',')}`, {
              cause: err,
            });
          if (codes[2] === 'ConditionalCheckFailed' && codes[0] !== 'ConditionalCheckFailed') {
            throw new RegistryConflictError('version_exists', `${entry.name} ${entry.version} is published`);
          }
          if (codes.some((c) => c === 'ConditionalCheckFailed' || c === 'TransactionConflict')) {
            throw new RegistryConflictError('head_moved', `the ${entry.kind} registry moved on`);
          }
          throw err;
        }
      },
    },
    'DynamoDB',
  );
}
