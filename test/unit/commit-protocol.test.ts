/**
 * The commit protocol (lib/store/commit-protocol.ts) on the memory store, which executes it as
 * the DynamoDB adapter does (the crash-point suite kills a real worker between the two writes
 * on DynamoDB Local): a page whose record update never came is never read, a committed page is
 * never overwritten, and the record's stored form is compressed (lib/store/record-codec.ts).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { createRun } from '../../lib/core/run-machine.ts';
import { CommitRejected, type RunStore } from '../../lib/engine/ports.ts';
import { itemSize, recordItem } from '../../lib/store/commit-plan.ts';
import { recordOf } from '../../lib/store/item-codec.ts';
import { createMemoryRunStore } from '../../lib/store/memory-run-store.ts';
import { packRecord, unpackRecord } from '../../lib/store/record-codec.ts';
import { givenUpClaimScenario } from '../support/given-up-claim.ts';

class Died extends Error {}

async function created(store: RunStore, runId: string): Promise<RunRecord> {
  const run = createRun(
    {
      run_id: runId,
      principal: { kind: 'user', id: 'alice' },
      subject: { workspace: 'w', path: `/${runId}` },
      reducer: { function_path: '/r/none' },
      input: 'go',
      budgets: {},
      on_exceeded: 'pause',
    },
    1_000,
  );
  return store.commit({ record: run.record, expectedVersion: null, events: run.events });
}

/**
 * A note too large for the record's inline tail (random hex does not compress away): a commit
 * carrying it writes its own event page (lib/store/event-tail.ts).
 */
const paged = (label: string) => `${label}:${randomBytes(1_200).toString('hex')}`;

/** The run after a commit whose event is too large for the tail: its tail is empty again. */
async function withEmptyTail(store: RunStore, run: RunRecord): Promise<RunRecord> {
  return store.commit({ ...appended(run, paged('filler')), expectedVersion: run.version });
}

/** One commit appending one steer_queued event with `note` after the record's last seq. */
function appended(record: RunRecord, note: string): { record: RunRecord; events: RunEvent[] } {
  const seq = record.last_seq + 1;
  return {
    record: { ...record, last_seq: seq } as RunRecord,
    events: [{ seq, kind: 'steer_queued', at: 2_000, data: { note } }],
  };
}

describe('a commit of a page and a record (two plain writes)', () => {
  it('leaves a page whose record update never came unread, and the next commit steps past it', async () => {
    // Prepare: a store that dies once, right after the page of the next commit landed.
    let dies = true;
    const store = createMemoryRunStore({
      afterPage: () => {
        if (dies) {
          dies = false;
          throw new Died('killed between the page and the record update');
        }
      },
    });
    const run = await withEmptyTail(store, await created(store, 'half-made'));
    const lost = appended(run, paged('lost'));

    // Act: the first writer dies between its writes; another commits on the same record.
    await expect(store.commit({ ...lost, expectedVersion: run.version })).rejects.toBeInstanceOf(Died);
    const unchanged = await store.getRun(run.run_id);
    const unread = await store.readEvents(run.run_id, run.last_seq, 10);
    const next = appended(run, paged('kept'));
    const stored = await store.commit({ ...next, expectedVersion: run.version });

    // Assess: nothing of the dead writer's page was ever visible; the commit stepped the version.
    expect(unchanged).toEqual(run);
    expect(unread).toEqual([]);
    expect(stored.version).toBe(run.version + 2);
    const events = await store.readEvents(run.run_id, 0, 10);
    expect(events.map((e) => e.data)).toEqual([expect.anything(), expect.anything(), next.events[0]?.data]);
  });

  it('charges the version step to the run: the commit after it carries the units both wrote', async () => {
    // Prepare: a writer dies between its page and its record update.
    let dies = true;
    const store = createMemoryRunStore({
      afterPage: () => {
        if (dies) {
          dies = false;
          throw new Died('killed between the page and the record update');
        }
      },
    });
    const run = await withEmptyTail(store, await created(store, 'step-charged'));
    await expect(
      store.commit({ ...appended(run, paged('lost')), expectedVersion: run.version }),
    ).rejects.toBeInstanceOf(Died);
    const counted = store.metrics.writeCapacity;

    // Act: the next commit steps the version past the dead page, then writes its own.
    const stored = await store.commit({ ...appended(run, paged('kept')), expectedVersion: run.version });

    // Assess: charged what the store counted for the step and the commit (plain writes, once
    // each: the step's record update, the page, the record update), no more, no less.
    const units = (r: RunRecord) => r.metered?.dynamodb_write_units ?? 0;
    expect(stored.version).toBe(run.version + 2);
    expect(units(stored) - units(run)).toBe(store.metrics.writeCapacity - counted);
    expect(units(stored) - units(run)).toBeGreaterThanOrEqual(3);
    expect((await store.getRun(run.run_id))?.metered).toEqual(stored.metered);
  });

  it('refuses a writer that read an older record instead of overwriting the page it would reuse', async () => {
    const store = createMemoryRunStore();
    const run = await created(store, 'stale-page');
    const first = appended(run, 'first');
    await store.commit({ ...first, expectedVersion: run.version });

    // The same seq again, from the record as it was: its page key is the committed page's.
    const stale = appended(run, 'stale');
    const refused = await store.commit({ ...stale, expectedVersion: run.version }).catch((e: unknown) => e);

    expect(refused).toBeInstanceOf(CommitRejected);
    expect((refused as CommitRejected).code).toBe('stale_version');
    const events = await store.readEvents(run.run_id, 0, 10);
    expect(events.map((e) => e.data)).toEqual([expect.anything(), { note: 'first' }]);
  });
});

describe('the record as stored', () => {
  it('is compressed to under half its JSON text, and reads back equal', async () => {
    const store = createMemoryRunStore();
    const run = await created(store, 'small-record');
    const item = recordItem(run);
    // Formats 1 and plain kept the charge in the record's text, not beside it.
    const { body_z: packed, metered: _metered, ...attributes } = item;
    const plain = { ...attributes, record: JSON.stringify(run) };
    expect((packed as Uint8Array).byteLength).toBeLessThan(Buffer.byteLength(JSON.stringify(run)) / 2);
    // Format 1 (record_z, base64 text) still reads back.
    expect(recordOf({ ...attributes, record_z: packRecord(JSON.stringify(run)) })).toEqual(run);
    expect(itemSize(item)).toBeLessThan(itemSize(plain));
    // Format 2 reads the charge beside the body, and the item's own size.
    expect(recordOf(item)).toEqual({
      ...run,
      metered: { ...run.metered, record_item_bytes: itemSize(item) },
    });
    expect(unpackRecord(packRecord(JSON.stringify(run)))).toBe(JSON.stringify(run));
  });

  it('reads a record item written before compression (plain JSON text)', () => {
    const run = createRun(
      {
        run_id: 'legacy',
        principal: { kind: 'user', id: 'alice' },
        subject: { workspace: 'w', path: '/legacy' },
        reducer: null,
        input: 'go',
        budgets: {},
        on_exceeded: 'pause',
      },
      1_000,
    ).record;
    expect(recordOf({ pk: 'RUN#legacy', sk: 'R', record: JSON.stringify(run) })).toEqual(run);
  });
});

describe('a create of a record and a subject (two plain writes)', () => {
  it('gives up a create that stalled between its subject and its record once the grace is over', async () => {
    await givenUpClaimScenario((hooks) => createMemoryRunStore(hooks));
  });
});
