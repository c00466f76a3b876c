/**
 * StepQueue in memory, for engine tests at unit speed: a message sent with a delay becomes
 * visible once the given clock has passed it, as SQS's DelaySeconds does (rounded up to whole
 * seconds, at most 900). Messages are delivered exactly once, in the order they became visible;
 * SQS's duplicates and reordering are the race tests' business, not this queue's.
 * A test aid, never a production option. docs/architecture.md, "The step".
 */
import type { Clock, StepMessage, StepQueue } from '../../lib/engine/ports.ts';

/** One message waiting in the queue. */
export interface QueuedStepMessage {
  message: StepMessage;
  /** When it becomes visible (ms since the epoch, on the queue's clock). */
  visible_at: number;
}

export interface MemoryStepQueue extends StepQueue {
  /** Removes every message visible now and returns their run ids, in the order they became visible. */
  drainMessages(): Promise<string[]>;
  /** Every message still queued, visible or not (a copy). */
  pending(): QueuedStepMessage[];
}

export function createMemoryStepQueue(clock: Clock): MemoryStepQueue {
  let sent = 0;
  let queued: (QueuedStepMessage & { n: number })[] = [];
  return {
    async send(message, delaySeconds) {
      sent += 1;
      const delay =
        delaySeconds !== undefined && delaySeconds > 0 ? Math.min(900, Math.ceil(delaySeconds)) : 0;
      queued.push({ message: { ...message }, visible_at: clock.now() + delay * 1_000, n: sent });
    },
    sent: () => sent,
    async drainMessages() {
      const now = clock.now();
      const visible = queued
        .filter((q) => q.visible_at <= now)
        .sort((a, b) => a.visible_at - b.visible_at || a.n - b.n);
      queued = queued.filter((q) => q.visible_at > now);
      return visible.map((q) => q.message.run_id);
    },
    pending: () => queued.map(({ message, visible_at }) => ({ message: { ...message }, visible_at })),
  };
}
