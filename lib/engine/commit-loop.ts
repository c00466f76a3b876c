/**
 * The one read → decide → commit loop of the engine's use cases (create, controls, delivered
 * results, hand-backs, owed duties): read what the decision needs, let core decide, commit,
 * and on a refusal that means "someone committed first" (stale_version by default) read again
 * after a short jittered pause and decide again; give up after a bounded number of attempts
 * with a stable, retryable code. docs/architecture.md, "The commit".
 */
import type { RunRecord } from '../contracts/index.ts';
import { type CommitParts, commitRun, type EngineDeps } from './deps.ts';
import { EngineError } from './errors.ts';
import { type CommitFailure, CommitRejected } from './ports.ts';

/** Attempts of a use case that keeps losing the record to concurrent commits. */
export const CONTENDED_ATTEMPTS = 16;

/** What the decision says: done without a commit, or commit this, then answer with `after`. */
export type Decision<T> = { done: T } | { commit: CommitParts; after: (stored: RunRecord) => T | Promise<T> };

export interface CommitLoop<S, T> {
  /** Reads what the decision needs (the run record, its ack, ...). */
  read(): Promise<S>;
  /** Decides from what was read; core's transitions do the deciding. */
  decide(read: S): Decision<T> | Promise<Decision<T>>;
  /** Refusals after which the loop reads and decides again (default: stale_version). */
  retryOn?: readonly CommitFailure[];
  /** Attempts before giving up (default CONTENDED_ATTEMPTS). */
  attempts?: number;
  /** Whether to pause (full jitter, 5 ms doubling to 250 ms) before reading again (default true). */
  jitter?: boolean;
  /** The answer when every attempt lost; default: throws EngineError store_unavailable (retryable). */
  exhausted?: () => T;
  /** Names the run in the default give-up error. */
  runId?: string;
}

/**
 * A short random pause after a commit lost to a concurrent one (full jitter, 5 ms doubling to a
 * 250 ms cap), so that many writers of one run spread out instead of colliding again.
 */
export function contentionPause(attempt: number): Promise<void> {
  const cap = Math.min(250, 5 * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
}

/** Runs `loop` to its answer. Throws what the read, decide or commit throws besides the retried refusals. */
export async function readDecideCommit<S, T>(deps: EngineDeps, loop: CommitLoop<S, T>): Promise<T> {
  const retryOn = loop.retryOn ?? ['stale_version'];
  const attempts = loop.attempts ?? CONTENDED_ATTEMPTS;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const decision = await loop.decide(await loop.read());
    if ('done' in decision) return decision.done;
    let stored: RunRecord;
    try {
      stored = await commitRun(deps, decision.commit);
    } catch (err) {
      if (err instanceof CommitRejected && retryOn.includes(err.code)) {
        if (loop.jitter !== false) await contentionPause(attempt);
        continue;
      }
      throw err;
    }
    return decision.after(stored);
  }
  if (loop.exhausted !== undefined) return loop.exhausted();
  throw new EngineError(
    'store_unavailable',
    'the run is too busy to take this now; retry',
    loop.runId !== undefined ? { run_id: loop.runId } : {},
    { retryable: true },
  );
}
