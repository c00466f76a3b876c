/**
 * The memory registry store (lib/store/memory-registry-store.ts) under the RegistryStore
 * contract; the same suite runs on DynamoDB Local in test/integration/dynamo-registry-store.int.test.ts.
 */
import { createMemoryRegistryStore } from '../../lib/store/memory-registry-store.ts';
import { registryStoreContract } from '../contract/registry-store.contract.ts';

registryStoreContract('memory', async () => ({ store: createMemoryRegistryStore(), close: async () => {} }));
