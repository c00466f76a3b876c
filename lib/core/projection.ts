/**
 * The effective projection readers receive: an in_progress item survives only while the run is
 * running; otherwise it shows as waiting, paused, stopped, failed or blocked. A stopped run never
 * displays an active task. docs/contracts/run-lifecycle.md, "Projections";
 * docs/contracts/reducer.md, "Projection".
 */
import type { Projection, ProjectionItemStatus, RunStatus } from '../contracts/index.ts';

const IN_PROGRESS_AS: Record<RunStatus, ProjectionItemStatus> = {
  queued: 'waiting',
  running: 'in_progress',
  waiting: 'waiting',
  paused: 'paused',
  cancelling: 'stopped',
  completed: 'blocked',
  failed: 'failed',
  stopped: 'stopped',
};

export function effectiveProjection(projection: Projection | null, status: RunStatus): Projection | null {
  if (projection === null) return null;
  const as = IN_PROGRESS_AS[status];
  return {
    ...projection,
    items: projection.items.map((item) => (item.status === 'in_progress' ? { ...item, status: as } : item)),
  };
}
