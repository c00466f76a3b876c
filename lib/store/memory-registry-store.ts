/**
 * The RegistryStore over maps: the DynamoDB adapter's items and conditions (registry-items.ts)
 * without Java, for engine tests and local development. Never production. The registry-store
 * contract (test/contract/registry-store.contract.ts) keeps the two adapters alike.
 */
import type { RegistryEntry, RegistryKind, RegistrySnapshot } from '../contracts/index.ts';
import { RegistryConflictError, type RegistryStore } from '../engine/ports.ts';
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

type Item = Record<string, unknown>;
const id = (key: { pk: string; sk: string }): string => `${key.pk}\u0000${key.sk}`;

export function createMemoryRegistryStore(): RegistryStore {
  const items = new Map<string, Item>();
  return {
    async head(kind) {
      const item = items.get(id(headKey(kind)));
      return typeof item?.version === 'number' ? item.version : 0;
    },
    async snapshot(kind, version) {
      if (version === 0) return emptySnapshot(kind);
      const item = items.get(id(snapshotKey(kind, version)));
      return item === undefined ? null : snapshotOfItem(kind, item);
    },
    async entry(kind, name, version) {
      const item = items.get(id(entryKey(kind, name, version)));
      return item === undefined ? null : entryOfItem(item);
    },
    async versions(kind: RegistryKind, name: string) {
      const prefix = `${entryPartition(kind, name)}\u0000`;
      const found = [...items.entries()].filter(([k]) => k.startsWith(prefix)).map(([, v]) => entryOfItem(v));
      return versionsInOrder(found);
    },
    async publish(entry: RegistryEntry, snapshot: RegistrySnapshot) {
      const head = items.get(id(headKey(entry.kind)));
      const current = typeof head?.version === 'number' ? head.version : 0;
      if (current !== snapshot.version - 1)
        throw new RegistryConflictError('head_moved', `the ${entry.kind} registry is at ${current}`);
      const eKey = id(entryKey(entry.kind, entry.name, entry.version));
      if (items.has(eKey))
        throw new RegistryConflictError('version_exists', `${entry.name} ${entry.version} is published`);
      items.set(eKey, entryAttributes(entry));
      items.set(id(snapshotKey(entry.kind, snapshot.version)), snapshotAttributes(snapshot));
      items.set(id(headKey(entry.kind)), { version: snapshot.version });
    },
  };
}
