/**
 * The first commit of a step: take the run's lease. Issue 24, point 2 (no read a step does not
 * need); seed agent-runs, "Leases, recovery and the sweeper".
 */
import { randomUUID } from 'node:crypto';
import { isTerminalStatus, type RunRecord } from '../contracts/index.ts';
import { acquireLease } from '../core/run-machine.ts';
import { deliverAfterEnd } from './after-end.ts';
import { CommitRejected } from './commit-errors.ts';
import { commitRun, type EngineContext } from './deps.ts';

/** What a step ends with when it cannot take the lease. */
export type NoLease = { kind: 'not_found' } | { kind: 'nothing_to_do'; status: string } | { kind: 'busy' };

/**
 * Takes the run's lease in one commit. Starts from the record this process committed last
 * (ctx.records), when it has one: no read. A guess that is out of date costs nothing more: the
 * commit is refused `stale_version` with the current record, and the lease is taken on that one;
 * a guess on which the lease cannot be taken is checked against the store before giving up.
 */
export async function takeLease(ctx: EngineContext, runId: string): Promise<{ base: RunRecord } | NoLease> {
  const owner = `${ctx.workerId}/${randomUUID().slice(0, 8)}`;
  const cached = ctx.records.get(runId);
  let guess = cached !== undefined && !isTerminalStatus(cached.status);
  let first = guess ? (cached as RunRecord) : await ctx.store.getRun(runId);
  for (;;) {
    if (first === null) return { kind: 'not_found' };
    if (isTerminalStatus(first.status)) {
      if (first.inbox.length > 0 && first.reducer !== null) await deliverAfterEnd(ctx, first);
      return { kind: 'nothing_to_do', status: first.status };
    }
    const acquired = acquireLease(first, owner, ctx.clock.now(), ctx.leaseTtlMs);
    if (!acquired.ok) {
      if (guess) {
        guess = false;
        first = await ctx.store.getRun(runId);
        continue;
      }
      return acquired.code === 'lease_held'
        ? { kind: 'busy' }
        : { kind: 'nothing_to_do', status: first.status };
    }
    try {
      const base = await commitRun(ctx, {
        record: acquired.record,
        expectedVersion: first.version,
        events: [],
      });
      ctx.records.remember(base);
      return { base };
    } catch (err) {
      if (!(err instanceof CommitRejected && err.code === 'stale_version')) throw err;
      if (!guess) return { kind: 'busy' };
      // The guess was out of date: go on from the record the refusal carries.
      guess = false;
      first = err.current ?? (await ctx.store.getRun(runId));
    }
  }
}
