/**
 * The registries' item layout in the one table, the pure half both registry adapters share
 * (the DynamoDB adapter writes these items; the memory adapter keeps the same keys in a map):
 *
 *   REG#{kind}               / HEAD              {version}: the current registry version
 *   REG#{kind}               / S#{version, 12}   {entries}: the snapshot of one registry version
 *   REGE#{kind}#{name}       / V#{version}       {entry}:   one published document version
 *
 * Snapshots and entries are written once (attribute_not_exists) and never updated; only the
 * head moves, conditioned on the version it was read at. Bodies are stored as JSON text and
 * parsed with the contract's schemas when read. docs/reference/storage.md.
 */
import {
  type RegistryEntry,
  RegistryEntry as RegistryEntrySchema,
  type RegistryKind,
  type RegistrySnapshot,
  RegistrySnapshot as RegistrySnapshotSchema,
} from '../contracts/index.ts';

/** Key of a registry's head item. */
export const headKey = (kind: RegistryKind) => ({ pk: `REG#${kind}`, sk: 'HEAD' });
/** Key of the snapshot of registry version `version`. */
export const snapshotKey = (kind: RegistryKind, version: number) => ({
  pk: `REG#${kind}`,
  sk: `S#${String(version).padStart(12, '0')}`,
});
/** Partition of the published versions of one name. */
export const entryPartition = (kind: RegistryKind, name: string): string => `REGE#${kind}#${name}`;
/** Key of one published document version. */
export const entryKey = (kind: RegistryKind, name: string, version: string) => ({
  pk: entryPartition(kind, name),
  sk: `V#${version}`,
});

/** The empty registry: version 0, no entries. */
export const emptySnapshot = (kind: RegistryKind): RegistrySnapshot => ({ kind, version: 0, entries: {} });

/** A stored item that does not have the registry's shape. Terminal: reading again reads the same item. */
export class RegistryItemInvalid extends Error {
  override name = 'RegistryItemInvalid';
  readonly code = 'registry_item_invalid';
  readonly retryable = false;
}

/** The item attributes of an entry (besides its key). */
export const entryAttributes = (entry: RegistryEntry) => ({
  registry_version: entry.registry_version,
  entry: JSON.stringify(entry),
});
/** The item attributes of a snapshot (besides its key). */
export const snapshotAttributes = (snapshot: RegistrySnapshot) => ({
  version: snapshot.version,
  entries: JSON.stringify(snapshot.entries),
});

function parseJson(text: unknown, what: string): unknown {
  if (typeof text !== 'string') throw new RegistryItemInvalid(`${what}: not stored as JSON text`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new RegistryItemInvalid(`${what}: not JSON`, { cause: err });
  }
}

/** Parses an entry item. Throws RegistryItemInvalid. */
export function entryOfItem(item: Record<string, unknown>): RegistryEntry {
  const parsed = RegistryEntrySchema.safeParse(parseJson(item.entry, 'registry entry'));
  if (!parsed.success) throw new RegistryItemInvalid(`registry entry: ${parsed.error.message}`);
  return parsed.data;
}

/** Parses a snapshot item of `kind`. Throws RegistryItemInvalid. */
export function snapshotOfItem(kind: RegistryKind, item: Record<string, unknown>): RegistrySnapshot {
  const parsed = RegistrySnapshotSchema.safeParse({
    kind,
    version: item.version,
    entries: parseJson(item.entries, 'registry snapshot'),
  });
  if (!parsed.success) throw new RegistryItemInvalid(`registry snapshot: ${parsed.error.message}`);
  return parsed.data;
}

/** The versions of entries read from one name's partition, in publication order. */
export function versionsInOrder(entries: readonly RegistryEntry[]): string[] {
  return [...entries].sort((a, b) => a.registry_version - b.registry_version).map((e) => e.version);
}
