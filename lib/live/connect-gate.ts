/**
 * One process's gate before a principal's socket admissions: the connects of one principal
 * (quota key) are admitted one after another, not side by side, and a principal refused at its
 * bound is refused again without a store read for REFUSAL_MEMO_MS. A flood of connects by one
 * principal thus costs the store a few reads, not one or more per connect (the adversarial pass
 * slowed another user's reads from 85 ms to seconds through the store client's sockets). The
 * table's conditional write still holds the bound across processes (lib/live/ports.ts
 * openConnection).
 */

/** How long (ms) a principal refused at its bound is refused again without a store read. */
export const REFUSAL_MEMO_MS = 1_000;

/** Past this many principals remembered, the gate forgets those whose time has passed. */
const MEMO_SIZE = 10_000;

export interface ConnectGate {
  /** Runs `admit` after every earlier admission of `quotaKey` in this process has ended. */
  serially<T>(quotaKey: string, admit: () => Promise<T>): Promise<T>;
  /** Whether `quotaKey` was refused at its bound less than REFUSAL_MEMO_MS before `nowMs`. */
  refusedRecently(quotaKey: string, nowMs: number): boolean;
  /** Notes a refusal of `quotaKey` at its bound at `nowMs`. */
  noteRefusal(quotaKey: string, nowMs: number): void;
}

export function createConnectGate(): ConnectGate {
  const tails = new Map<string, Promise<unknown>>();
  const refusedUntil = new Map<string, number>();
  return {
    async serially(quotaKey, admit) {
      const before = tails.get(quotaKey) ?? Promise.resolve();
      const run = before.then(admit, admit);
      const tail = run.catch(() => undefined);
      tails.set(quotaKey, tail);
      try {
        return await run;
      } finally {
        if (tails.get(quotaKey) === tail) tails.delete(quotaKey);
      }
    },
    refusedRecently: (quotaKey, nowMs) => (refusedUntil.get(quotaKey) ?? 0) > nowMs,
    noteRefusal(quotaKey, nowMs) {
      if (refusedUntil.size >= MEMO_SIZE)
        for (const [key, until] of refusedUntil) if (until <= nowMs) refusedUntil.delete(key);
      refusedUntil.set(quotaKey, nowMs + REFUSAL_MEMO_MS);
    },
  };
}
