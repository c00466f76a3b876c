/**
 * Whether an operation in flight must end now, from the run's status alone: shared by the step
 * worker's heartbeat, the stop watch and a client's drive loop. Imports only the contracts, so
 * the browser-safe client can use it. docs/contracts/run-lifecycle.md, "Controls" (stop, steer).
 */
import type { RunRecord } from '../contracts/index.ts';

/** Why an operation in flight must end now: the run is stopping, or a steer interrupts it. */
export type OperationEnd = 'stop' | 'interrupt';

/**
 * Whether the operation in flight on a run in this state must end, and why: `stop` when the run
 * is `cancelling`, `interrupt` when a steer asked to interrupt it (`interrupt_requested`), else
 * null. Takes the record or the store's status view, so that the heartbeat, the stop watch and
 * a client's drive loop ask the same question. docs/contracts/run-lifecycle.md, "Controls" (stop,
 * steer).
 */
export function operationMustEnd(run: {
  status: RunRecord['status'];
  interrupt_requested?: string | null | undefined;
}): OperationEnd | null {
  if (run.status === 'cancelling') return 'stop';
  if (typeof run.interrupt_requested === 'string') return 'interrupt';
  return null;
}
