/**
 * Per-run metering between commits: what the runtime did for a run that is not yet charged to
 * it (step messages sent, step invocations and their measured duration, the store's reads), kept
 * in this process until the run's next commit carries it (lib/engine/deps.ts `commitRun`, the
 * stores' `commit`): taken when the commit is planned, given back when it fails, so two commits
 * of one run never carry the same charge. A commit that fails leaves the charge owed; a process that dies before the
 * run's next commit loses what it owed (the cost is then a lower bound). README "Cost per run".
 */
import { gbSeconds, type MeterCharge } from '../core/prices.ts';
import { PendingCharges } from './ports.ts';

/** What the engine meters per run: its step messages and its step worker's work. */
export interface UsageMeter {
  /** A step began working `runId`: one Lambda invocation; its duration runs until `endStep`. */
  beginStep(runId: string): void;
  endStep(runId: string): void;
  /** One SQS SendMessage (a step message) was sent for `runId`. */
  sent(runId: string): void;
  /** What `runId` owes now, the step's duration so far included, taken for a commit to carry. */
  take(runId: string): MeterCharge;
  /** The commit that took `charge` failed: `runId` owes it again. */
  giveBack(runId: string, charge: MeterCharge): void;
}

export interface UsageMeterOptions {
  /** The step function's configured memory (MB): its duration is charged as GB-seconds at it. */
  memoryMb: number;
  /** A monotonic millisecond clock (default `performance.now`). */
  now?: () => number;
}

/** The engine's meter, in this process's memory. */
export function createUsageMeter(options: UsageMeterOptions): UsageMeter {
  const pending = new PendingCharges();
  const now = options.now ?? (() => performance.now());
  const working = new Map<string, { since: number; steps: number }>();
  /** Moves the duration worked on `runId` since the last fold into what it owes. */
  const fold = (runId: string) => {
    const w = working.get(runId);
    if (w === undefined) return;
    const t = now();
    const ms = Math.max(0, t - w.since);
    w.since = t;
    pending.add(runId, { lambda_ms: ms, lambda_gb_seconds: gbSeconds(ms, options.memoryMb) });
  };
  return {
    beginStep(runId) {
      pending.add(runId, { lambda_invocations: 1 });
      const w = working.get(runId);
      if (w !== undefined) w.steps += 1;
      else working.set(runId, { since: now(), steps: 1 });
    },
    endStep(runId) {
      fold(runId);
      const w = working.get(runId);
      if (w === undefined) return;
      w.steps -= 1;
      if (w.steps <= 0) working.delete(runId);
    },
    sent: (runId) => pending.add(runId, { sqs_requests: 1 }),
    take(runId) {
      fold(runId);
      return pending.take(runId);
    },
    giveBack: (runId, charge) => pending.add(runId, charge),
  };
}
