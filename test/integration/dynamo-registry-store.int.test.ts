/**
 * The DynamoDB registry store (lib/store/dynamo-registry-store.ts) on DynamoDB Local under the
 * RegistryStore contract (test/contract/registry-store.contract.ts), each test on a table of
 * its own (a registry's head is one item per table, so tests must not share one).
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, inject } from 'vitest';
import { createAwsClients } from '../../lib/aws-clients.ts';
import { createDynamoRegistryStore } from '../../lib/store/dynamo-registry-store.ts';
import { createTableInput } from '../../lib/store/table.ts';
import { registryStoreContract } from '../contract/registry-store.contract.ts';

const local = inject('localServices');
const clients = createAwsClients(local);
afterAll(() => clients.destroy());

registryStoreContract('DynamoDB Local', async () => {
  const tableName = `registry-${randomUUID()}`;
  await clients.dynamo.send(new CreateTableCommand(createTableInput(tableName)));
  return {
    store: createDynamoRegistryStore({ doc: clients.doc, tableName }),
    close: async () => {
      await clients.dynamo.send(new DeleteTableCommand({ TableName: tableName }));
    },
  };
});
