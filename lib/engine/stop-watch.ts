/**
 * The stop watch of an in-flight interruptible operation: every `stopPollMs` (default 2 s) one
 * cheap read of the run's status (`RunStore.getStatus`: an eventually consistent read of the
 * record item projected to its status and `interrupt_requested`, half a read unit per 4 KB of
 * record) and, on `cancelling` or on a steer that interrupts (when_busy `interrupt`), the
 * operation's AbortSignal fires. The lease heartbeat (every `heartbeatMs`, 30 s by default)
 * still renews the lease and detects its loss; the watch only shortens how long a stop takes to
 * reach the operation, from up to a heartbeat to up to `stopPollMs` plus one read.
 *
 * Why a poll and not a push: the stop may be committed by any API instance while the operation
 * runs in another Lambda invocation; nothing can reach that invocation but what it reads. A
 * stream or queue per run would cost more than one read every 2 s of a running operation and
 * would still need the read for its own loss. docs/contracts/run-lifecycle.md, "Controls" (stop,
 * and a steer that interrupts).
 */
import type { Operation } from '../contracts/index.ts';
import { type OperationEnd, operationMustEnd } from '../core/guards.ts';
import type { OperationResult } from '../core/run-machine.ts';
import type { EngineDeps } from './deps.ts';

/** What the watch saw: the run stopping, or a steer interrupting the operation. */
export type WatchSignal = OperationEnd;

/**
 * Starts watching `runId` for a stop or an interrupt; `onSignal` is called once, when
 * `cancelling` (→ `stop`) or an `interrupt_requested` (→ `interrupt`) is read. A read that fails
 * is skipped (the next one, or the heartbeat, sees it). Returns the function that ends the
 * watch; it waits for a read in progress.
 */
export function watchForStop(
  deps: EngineDeps,
  runId: string,
  onSignal: (signal: WatchSignal) => void,
): () => Promise<void> {
  let reading: Promise<void> = Promise.resolve();
  let done = false;
  const timer = setInterval(() => {
    reading = reading.then(async () => {
      if (done) return;
      try {
        const view = await deps.store.getStatus(runId);
        const signal = view === null ? null : operationMustEnd(view);
        if (signal !== null && !done) {
          done = true;
          clearInterval(timer);
          onSignal(signal);
        }
      } catch (err) {
        // skipped: the next read, or the heartbeat, sees it
        deps.log({ level: 'warn', message: 'stop watch read failed', run_id: runId, error: String(err) });
      }
    });
  }, deps.stopPollMs);
  return async () => {
    done = true;
    clearInterval(timer);
    await reading;
  };
}

/**
 * The last look before the started operation `op` of `runId` is dispatched, for a
 * non-interruptible operation only: one strongly consistent status read (`getStatus`
 * consistent). A stop whose commit came after the operation's start commit found the operation
 * started and left the run `cancelling`; the operation has not run, so it is cancelled instead:
 * `{kind: 'operation_cancelled', acknowledged: true, before_dispatch: true}` (its commit ends
 * the run stopped and logs operation_cancelled with `before_dispatch: true`). A stop committed
 * before the start commit needs no look: that commit is then stale and its replay is refused.
 * Null when the operation may run: it is interruptible (the watch aborts it once it runs, so
 * that path costs no read), no stop was seen, or the read failed (it runs, as it did before the
 * look existed; the stop then ends the run when the operation returns).
 * docs/contracts/run-lifecycle.md, "Controls" (stop).
 */
export async function stopBeforeDispatch(
  deps: EngineDeps,
  runId: string,
  op: Operation,
): Promise<OperationResult | null> {
  if (op.interruptible) return null;
  try {
    const view = await deps.store.getStatus(runId, { consistent: true });
    if (view?.status !== 'cancelling') return null;
  } catch (err) {
    deps.log({
      level: 'warn',
      message: 'stop look before dispatch failed',
      run_id: runId,
      error: String(err),
    });
    return null;
  }
  deps.log({ level: 'info', message: 'operation cancelled before dispatch', run_id: runId, op_id: op.op_id });
  return { kind: 'operation_cancelled', acknowledged: true, before_dispatch: true };
}
