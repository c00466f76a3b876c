/**
 * Results that arrived before their wait was recorded: held by their resume_key (see
 * deliveries.ts), and applied by the step worker in the wait's own commit when that commit is
 * refused `early_result_held`. docs/contracts/run-lifecycle.md, "Operations" (waiting with a
 * resume_key): no wake-up is lost.
 */
import type { RunEvent, RunRecord } from '../contracts/index.ts';
import { deliverResult, heldBodyDigest, type TransitionResult } from '../core/run-machine.ts';
import { normalizeToolResult } from '../core/tool-result-validation.ts';
import type { EngineDeps } from './deps.ts';

/**
 * The moves that deliver the early results held for the waits `events` open: one per result
 * request whose key holds a live early result, in event order. Each is core's deliverResult
 * marked `early` (and with the held delivery_id), so that the commit releases the held item
 * on the condition that it is still there: applied exactly once.
 */
export async function earlyDeliveries(
  deps: EngineDeps,
  events: RunEvent[],
): Promise<((record: RunRecord) => TransitionResult)[]> {
  const moves: ((record: RunRecord) => TransitionResult)[] = [];
  for (const event of events) {
    const key = event.data.resume_key;
    if (event.kind !== 'request_opened' || event.data.kind !== 'result' || typeof key !== 'string') continue;
    const entry = await deps.store.readResumeKey(key, deps.clock.now());
    if (entry?.kind !== 'early') continue;
    // Validated when it arrived; normalized again now that the operation is known.
    const { envelope } = normalizeToolResult(JSON.parse(entry.body) as unknown, String(event.data.op_id));
    const at = deps.clock.now();
    const digest = heldBodyDigest(entry.body);
    const mark = {
      early: true,
      ...(entry.delivery_id !== undefined ? { delivery_id: entry.delivery_id } : {}),
      ...(digest !== null ? { body_digest: digest } : {}),
    };
    moves.push((record) => deliverResult(record, key, envelope, at, mark));
  }
  return moves;
}
