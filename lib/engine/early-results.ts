/**
 * Results that arrived before their wait was recorded: held by their resume_key (see
 * deliveries.ts), and applied in the wait's own commit (step worker and client-driven writes
 * alike) when that commit is refused `resume_key_held`. docs/contracts/run-lifecycle.md, "Operations" (waiting with a
 * resume_key): no wake-up is lost.
 */
import {
  childOfResumeKey,
  type RunEvent,
  type RunRecord,
  type ToolResultEnvelope,
} from '../contracts/index.ts';
import { deliverResult, heldBodyDigest, type TransitionResult } from '../core/run-machine.ts';
import { envelopeOf, normalizeToolResult } from '../core/tool-result-validation.ts';
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
  return (await resumeKeyClaims(deps, events)).moves;
}

/**
 * What holds the keys of the waits `events` open, after a commit of them was refused
 * `resume_key_held`: the early results to deliver in the same commit (earlyDeliveries), and
 * the first key another principal's run waits on or used (`inUse`), whose wait is refused.
 */
export async function resumeKeyClaims(
  deps: EngineDeps,
  events: RunEvent[],
): Promise<{ moves: ((record: RunRecord) => TransitionResult)[]; inUse?: string }> {
  const moves: ((record: RunRecord) => TransitionResult)[] = [];
  for (const event of events) {
    const key = event.data.resume_key;
    if (event.kind !== 'request_opened' || event.data.kind !== 'result' || typeof key !== 'string') continue;
    const entry = await deps.store.readResumeKey(key, deps.clock.now());
    if (entry?.kind === 'wait') return { moves, inUse: key };
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
  return { moves };
}

/**
 * The tool result that replaces a waiting one whose resume key another principal holds: failed,
 * not retryable, diagnostic `resume_key_in_use`. The reducer decides what to do (another key).
 */
export function keyInUseEnvelope(operationId: string, key: string): ToolResultEnvelope {
  return envelopeOf('failed', undefined, {
    operation_id: operationId,
    error_class: 'conflict',
    diagnostics: [
      { code: 'resume_key_in_use', severity: 'error', message: `${KEY_IN_USE} ${JSON.stringify(key)}` },
    ],
    retry_policy: { retryable: false },
  });
}

/** Why a wait on a key is refused, for a tool's failed result and a client's 409 alike. */
export const KEY_IN_USE =
  'another run waits on or used the resume key (it belongs to the principal whose run waited first): wait on another key:';

/** The children whose waits a commit's events closed without their result (request_closed). */
export function detachedChildren(before: RunRecord, events: RunEvent[]): string[] {
  const children: string[] = [];
  for (const e of events) {
    if (e.kind !== 'request_closed') continue;
    const request = before.open_requests.find((r) => r.request_id === e.data.request_id);
    const child = request?.kind === 'result' ? childOfResumeKey(request.resume_key) : null;
    if (child !== null) children.push(child);
  }
  return children;
}
