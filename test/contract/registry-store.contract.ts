/**
 * The RegistryStore contract: what every adapter of the port (lib/engine/ports.ts) does. Run
 * on the memory store by test/unit/memory-registry-store.test.ts and on DynamoDB Local by
 * test/integration/dynamo-registry-store.int.test.ts, each test over an empty registry.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RegistryEntry, RegistryKind, RegistrySnapshot } from '../../lib/contracts/index.ts';
import { RegistryConflictError, type RegistryStore } from '../../lib/engine/ports.ts';

export interface RegistryStoreUnderTest {
  store: RegistryStore;
  close(): Promise<void>;
}

/** Opens an adapter over registries nobody else writes to. */
export type OpenRegistryStore = () => Promise<RegistryStoreUnderTest>;

const admin = { kind: 'user' as const, id: 'admin-1', groups: ['admin'] };

function entryOf(kind: RegistryKind, name: string, version: string, registryVersion: number): RegistryEntry {
  return {
    kind,
    name,
    version,
    body: { name, version, note: `body of ${name} ${version}` },
    digest: 'a'.repeat(64),
    published_at: 1_000 + registryVersion,
    published_by: admin,
    registry_version: registryVersion,
  };
}

async function rejection(p: Promise<unknown>): Promise<RegistryConflictError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof RegistryConflictError))
    throw new Error(`expected a RegistryConflictError, got ${err}`);
  return err;
}

export function registryStoreContract(name: string, open: OpenRegistryStore): void {
  describe(`RegistryStore contract: ${name}`, () => {
    let under: RegistryStoreUnderTest;
    let store: RegistryStore;
    beforeEach(async () => {
      under = await open();
      store = under.store;
    });
    afterEach(async () => under.close());

    it('starts every registry empty at version 0', async () => {
      for (const kind of ['tools', 'policy', 'agents'] as const) {
        expect(await store.head(kind)).toBe(0);
        expect(await store.snapshot(kind, 0)).toEqual({ kind, version: 0, entries: {} });
        expect(await store.snapshot(kind, 1)).toBeNull();
        expect(await store.entry(kind, 'x', '1.0.0')).toBeNull();
        expect(await store.versions(kind, 'x')).toEqual([]);
      }
    });

    it('publishes an entry, its snapshot and the head together', async () => {
      const entry = entryOf('tools', 'lookup', '1.0.0', 1);
      const snapshot: RegistrySnapshot = { kind: 'tools', version: 1, entries: { lookup: '1.0.0' } };
      await store.publish(entry, snapshot);
      expect(await store.head('tools')).toBe(1);
      expect(await store.snapshot('tools', 1)).toEqual(snapshot);
      expect(await store.entry('tools', 'lookup', '1.0.0')).toEqual(entry);
      expect(await store.versions('tools', 'lookup')).toEqual(['1.0.0']);
      // The other registries are untouched.
      expect(await store.head('agents')).toBe(0);
      expect(await store.entry('agents', 'lookup', '1.0.0')).toBeNull();
    });

    it('refuses a publication whose head moved on, and writes none of it', async () => {
      await store.publish(entryOf('policy', 'default', '1', 1), {
        kind: 'policy',
        version: 1,
        entries: { default: '1' },
      });
      const stale = store.publish(entryOf('policy', 'default', '2', 1), {
        kind: 'policy',
        version: 1,
        entries: { default: '2' },
      });
      expect((await rejection(stale)).reason).toBe('head_moved');
      const skipping = store.publish(entryOf('policy', 'default', '3', 3), {
        kind: 'policy',
        version: 3,
        entries: { default: '3' },
      });
      expect((await rejection(skipping)).reason).toBe('head_moved');
      expect(await store.head('policy')).toBe(1);
      expect(await store.entry('policy', 'default', '2')).toBeNull();
      expect(await store.snapshot('policy', 1)).toEqual({
        kind: 'policy',
        version: 1,
        entries: { default: '1' },
      });
      expect(await store.snapshot('policy', 3)).toBeNull();
    });

    it('never overwrites a published version: a second publication of it is version_exists and changes nothing', async () => {
      const first = entryOf('tools', 'lookup', '1.0.0', 1);
      await store.publish(first, { kind: 'tools', version: 1, entries: { lookup: '1.0.0' } });
      const changed = { ...entryOf('tools', 'lookup', '1.0.0', 2), body: { changed: true } };
      const again = store.publish(changed, { kind: 'tools', version: 2, entries: { lookup: '1.0.0' } });
      expect((await rejection(again)).reason).toBe('version_exists');
      expect(await store.head('tools')).toBe(1);
      expect(await store.snapshot('tools', 2)).toBeNull();
      expect(await store.entry('tools', 'lookup', '1.0.0')).toEqual(first);
    });

    it('lists the versions of a name in publication order, and keeps every snapshot', async () => {
      const order = ['2.0.0', '1.5.0', '10.0.0'];
      let entries: Record<string, string> = {};
      for (const [i, version] of order.entries()) {
        entries = { ...entries, lookup: version, [`other-${i}`]: '1.0.0' };
        await store.publish(entryOf('tools', 'lookup', version, i + 1), {
          kind: 'tools',
          version: i + 1,
          entries,
        });
      }
      expect(await store.versions('tools', 'lookup')).toEqual(order);
      expect((await store.snapshot('tools', 1))?.entries).toEqual({ lookup: '2.0.0', 'other-0': '1.0.0' });
      expect((await store.snapshot('tools', 3))?.entries.lookup).toBe('10.0.0');
    });

    it('lets exactly one of several concurrent publishers at the same head win', async () => {
      const attempts = Array.from({ length: 5 }, (_, i) =>
        store
          .publish(entryOf('agents', `agent-${i}`, '1', 1), {
            kind: 'agents',
            version: 1,
            entries: { [`agent-${i}`]: '1' },
          })
          .then(
            () => 'won',
            (e: unknown) => (e instanceof RegistryConflictError ? e.reason : String(e)),
          ),
      );
      const outcomes = await Promise.all(attempts);
      expect(outcomes.filter((o) => o === 'won')).toHaveLength(1);
      expect(outcomes.filter((o) => o !== 'won')).toEqual(Array(4).fill('head_moved'));
      const winner = outcomes.indexOf('won');
      expect(await store.snapshot('agents', 1)).toEqual({
        kind: 'agents',
        version: 1,
        entries: { [`agent-${winner}`]: '1' },
      });
    });
  });
}
