/**
 * The memory run store (lib/store/memory-run-store.ts) under the RunStore contract, with no
 * Java and no services; the same suite runs on DynamoDB Local in
 * test/integration/dynamo-run-store.int.test.ts. Below it, what only the memory store promises.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryBlobStore } from '../../lib/blobs/memory-blob-store.ts';
import { createRun } from '../../lib/core/run-machine.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { recordingBlobs, runStoreContract } from '../contract/run-store.contract.ts';

runStoreContract('memory', async () => {
  const blobs = recordingBlobs(createMemoryBlobStore());
  return {
    store: createMemoryRunStore({ blobs }),
    blobPuts: blobs.puts,
    close: async () => {},
    countsTransactionUnits: true,
  };
});

describe('the memory store', () => {
  it('never lets a caller alias stored state: changing what it returned or committed changes nothing stored', async () => {
    const store = createMemoryRunStore();
    const created = createRun(
      {
        run_id: 'alias-1',
        principal: { kind: 'user', id: 'alice' },
        subject: { workspace: 'w', path: '/alias' },
        reducer: null,
        input: { list: [1] },
        budgets: {},
        on_exceeded: 'pause',
      },
      1_000,
    );
    const stored = await store.commit({
      record: created.record,
      expectedVersion: null,
      events: created.events,
    });
    const snapshot = structuredClone(stored);
    (created.events[0]?.data.input as { list: number[] } | undefined)?.list.push(2);
    (stored.inbox as number[]).push(99);
    const read = await store.getRun('alias-1');
    expect(read).toEqual(snapshot);
    read?.inbox.push(98);
    expect(await store.getRun('alias-1')).toEqual(snapshot);
    expect((await store.readEvents('alias-1', 0, 10))[0]?.data).toEqual({ input: { list: [1] } });
  });

  it('yields to the event loop on every call, so a caller looping on it never starves a timer', async () => {
    const store = createMemoryRunStore();
    let fired = false;
    setTimeout(() => {
      fired = true;
    }, 5);
    for (let i = 0; i < 100_000 && !fired; i += 1) await store.getRun('nobody');
    expect(fired).toBe(true);
  });
});
