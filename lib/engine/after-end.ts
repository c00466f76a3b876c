/**
 * Delivering the events an ended run still owes its reducer (e.g. `stopped`): only checkpoint
 * effects apply, and nothing can fail or pause the run any more. docs/contracts/reducer.md,
 * "Validation" (effects_after_terminal); docs/contracts/run-lifecycle.md, sweeper ("finishes the
 * domain bookkeeping of terminal runs").
 */
import type { RunRecord } from '../contracts/index.ts';
import { commitRun, type EngineDeps } from './deps.ts';
import { CommitRejected } from './ports.ts';
import { deliverInboxHead } from './reducer-delivery.ts';

/**
 * Delivers every undelivered event of an ended run, one commit each. Returns the last record it
 * committed (or `record`); after a stale commit that record may be behind, which the owed
 * duties' own retries absorb.
 */
export async function deliverAfterEnd(deps: EngineDeps, record: RunRecord): Promise<RunRecord> {
  let current = record;
  while (current.inbox.length > 0 && current.reducer !== null) {
    const run = current;
    const { transition, state } = await deliverInboxHead(
      deps,
      run,
      {
        event: async (seq) => (await deps.store.readEvents(run.run_id, seq - 1, 1))[0] ?? null,
        state: (rev) =>
          deps.store.getState(run.run_id, rev, rev === run.state_rev ? run.state_at : undefined),
      },
      { faultPoint: false },
    );
    if (!transition.ok) return current;
    try {
      current = await commitRun(deps, {
        record: transition.record,
        expectedVersion: run.version,
        events: transition.events,
        ...(state !== undefined ? { state } : {}),
      });
    } catch (err) {
      if (err instanceof CommitRejected && err.code === 'stale_version') return current;
      throw err;
    }
  }
  return current;
}
