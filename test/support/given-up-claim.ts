/**
 * The crash between a plain create's two writes (lib/store/commit-protocol.ts plainCreateOf),
 * as one scenario both store adapters run: a creator stalls after its subject put (a process
 * frozen, or killed, before its record put). Within CLAIM_GRACE_MS its claim holds the subject;
 * after it, another create gives the stalled run up and takes the subject; when the stalled
 * creator resumes, its record put is refused and nothing of it is ever visible.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { RunRecord, Subject } from '../../lib/contracts/index.ts';
import { createRun } from '../../lib/core/run-machine.ts';
import { CommitRejected, type RunStore } from '../../lib/engine/ports.ts';
import { CLAIM_GRACE_MS } from '../../lib/store/commit-protocol.ts';

/** The crash hook and clock the scenario gives the store it builds. */
export interface ClaimHooks {
  afterClaim: (runId: string) => Promise<void>;
  now: () => number;
}

function created(runId: string, subject: Subject) {
  return createRun(
    {
      run_id: runId,
      principal: { kind: 'user', id: 'alice' },
      subject,
      reducer: { function_path: '/r/none' },
      input: 'go',
      budgets: {},
      on_exceeded: 'pause',
    },
    1_000,
  );
}

const commitCreate = (store: RunStore, run: ReturnType<typeof created>) =>
  store.commit({ record: run.record, expectedVersion: null, events: run.events });

async function refusalOf(commit: Promise<unknown>): Promise<string> {
  const err = await commit.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CommitRejected);
  return (err as CommitRejected).code;
}

/** Runs the scenario on the store `open` builds with the hooks given. */
export async function givenUpClaimScenario(open: (hooks: ClaimHooks) => RunStore): Promise<void> {
  let now = 1_700_000_000_000;
  const stalledId = `stalled-${randomUUID()}`;
  let resume: () => void = () => {};
  const resumed = new Promise<void>((r) => {
    resume = r;
  });
  let reachedClaim: () => void = () => {};
  const claimed = new Promise<void>((r) => {
    reachedClaim = r;
  });
  const store = open({
    now: () => now,
    afterClaim: async (runId) => {
      if (runId !== stalledId) return;
      reachedClaim();
      await resumed;
    },
  });
  const subject = { workspace: 'claims', path: `/${randomUUID()}` };

  // The stalled creator: its subject put lands, its record put waits.
  const stalled = commitCreate(store, created(stalledId, subject));
  await claimed;
  expect(await store.findBySubject(subject)).toBe(stalledId);
  expect(await store.getRun(stalledId)).toBeNull();

  // Within the grace, the claim holds: another create is refused and writes nothing.
  const early = created(`early-${randomUUID()}`, subject);
  expect(await refusalOf(commitCreate(store, early))).toBe('subject_taken');
  expect(await store.getRun(early.record.run_id)).toBeNull();

  // After it, a create gives the stalled run up and takes the subject.
  now += CLAIM_GRACE_MS;
  const taker = created(`taker-${randomUUID()}`, subject);
  const taken: RunRecord = await commitCreate(store, taker);
  expect(taken.status).toBe('queued');
  expect(await store.findBySubject(subject)).toBe(taker.record.run_id);

  // The stalled creator resumes: its record put is refused, nothing of it is visible.
  resume();
  expect(await refusalOf(stalled)).toBe('subject_taken');
  expect(await store.getRun(stalledId)).toBeNull();
  expect(await store.readEvents(stalledId, 0, 10)).toEqual([]);
  expect(await store.getStatus(stalledId)).toBeNull();
  expect(await store.findBySubject(subject)).toBe(taker.record.run_id);
}
