import { describe, expect, it } from 'vitest';
import {
  acquireLease,
  applyReducerAnswer,
  heldByDeadPredecessor,
  leaseOwnerOf,
  startOperation,
  type TransitionResult,
  takeOver,
  takeOverPredecessor,
} from '../../lib/core/run-machine.ts';
import { newRun, toolEffect } from '../support/runs.ts';

function ok(result: TransitionResult): Extract<TransitionResult, { ok: true }> {
  if (!result.ok) throw new Error(`expected ok, got ${result.code}: ${result.message}`);
  return result;
}

/** A run whose lease `owner` took at 2 000 ms (lease 90 s), a non-replay-safe tool call started. */
function startedUnder(owner: string) {
  const leased = ok(acquireLease(newRun(), owner, 2_000)).record;
  const answered = ok(
    applyReducerAnswer(
      leased,
      {
        event_seq: 1,
        state_rev: 1,
        effects: [toolEffect(1, 0, { replay_safe: false, mutating: true })],
        projection: null,
        diagnostics: [],
      },
      2_000,
    ),
  ).record;
  return ok(startOperation(answered, 2_100)).record;
}

const restarted = { slot: 'bench-worker', startedAt: 5_000 };
const predecessor = { slot: 'bench-worker', startedAt: 1_000 };

describe('takeover of a dead predecessor of the same slot', () => {
  it('takes over at once, lease unexpired, and bumps the epoch to fence the predecessor out', () => {
    const record = startedUnder(leaseOwnerOf(predecessor, 'ab12cd34'));
    expect(record.lease?.expires_at).toBeGreaterThan(5_100);
    const taken = ok(takeOverPredecessor(record, restarted, 5_100));
    expect(taken.record.lease).toBeNull();
    expect(taken.record.epoch).toBe(record.epoch + 1);
    expect(taken.record.status).toBe('queued');
    expect(taken.events.map((e) => e.kind)).toContain('lease_taken_over');
    const failed = taken.events.find((e) => e.kind === 'operation_failed');
    expect(failed?.data).toMatchObject({ outcome_unknown: true, retryable: false });
  });

  it('waits out the lease of another slot, of an unslotted worker and of a later process', () => {
    for (const owner of [
      leaseOwnerOf({ slot: 'other-worker', startedAt: 1_000 }, 'x'),
      'worker-1a2b3c4d/ab12cd34',
      leaseOwnerOf({ slot: 'bench-worker', startedAt: 9_000 }, 'x'),
      leaseOwnerOf({ slot: 'bench-worker', startedAt: 5_000 }, 'x'),
      'bench-worker@notanumber/x',
      'bench-worker-2@1000/x',
    ]) {
      const record = startedUnder(owner);
      expect(heldByDeadPredecessor(record, restarted)).toBe(false);
      expect(takeOverPredecessor(record, restarted, 5_100)).toMatchObject({ ok: false, code: 'lease_held' });
      // The sweeper's rule for everyone else is unchanged: no takeover before expiry.
      expect(takeOver(record, 5_100)).toMatchObject({ ok: false, code: 'lease_held' });
    }
  });

  it('refuses a run that holds no lease', () => {
    expect(takeOverPredecessor(newRun(), restarted, 5_100)).toMatchObject({ ok: false, code: 'no_lease' });
  });
});
