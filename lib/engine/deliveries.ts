/**
 * Delivered results: an external result for a parked tool call, by its resume_key. Decided by
 * core from what the key holds (core/run-machine/deliveries.ts): applied to the wait in one
 * commit (result_delivered + the call's tool_result), held by the key when it arrived before
 * the wait was recorded (the step worker applies it in the wait's own commit), or answered as a
 * duplicate when its delivery_id was seen. A refused envelope records nothing.
 * docs/contracts/run-lifecycle.md, "Operations" (waiting with a resume_key).
 */
import { childOfResumeKey, type RunRecord } from '../contracts/index.ts';
import { accessOf, type Caller } from '../core/authority.ts';
import { digestOf } from '../core/canonical.ts';
import {
  type DeliveryDecision,
  decideDelivery,
  deliverResult as deliverResultTransition,
  type ResumeKeyEntry,
} from '../core/run-machine.ts';
import { type EnvelopeRefusal, normalizeToolResult } from '../core/tool-result-validation.ts';
import { type Decision, readDecideCommit } from './commit-loop.ts';
import { commitOf, type EngineContext, needsStep, wake } from './deps.ts';
import { EngineError } from './errors.ts';
import { CommitTooLarge } from './ports.ts';
import { accessError } from './reads.ts';

/**
 * The answer to a delivery: applied (the seq of the tool_result), duplicate (a delivery_id
 * already applied: the seq its first delivery was answered with; or still held: `held`), or
 * held (no wait yet: kept by the key until `expires_at`, ms epoch).
 */
export type DeliveryAck =
  | { ack: 'applied'; run_id: string; seq: number }
  | { ack: 'duplicate'; original_seq: number }
  | { ack: 'duplicate'; held: true; expires_at: number }
  | { ack: 'held'; resume_key: string; expires_at: number };

/** How many times a delivery re-reads a key that changed under it (a wait or a hold landed). */
const KEY_RACE_ATTEMPTS = 4;

/**
 * Delivers `raw` for `resumeKey`, optionally under the caller's `deliveryId`. Returns the
 * DeliveryAck. Throws EngineError validation_failed (an envelope raisin.tool-result/1 refuses:
 * names the field and the refusal code; nothing is recorded, the request stays open),
 * unauthorized (a `child:` key: hand-backs are the runtime's), resume_key_not_found (the key's
 * request is closed, or the caller may not see its run), result_already_delivered /
 * result_already_held (another delivery took the key), delivery_id_reused (the delivery_id
 * applied or held on the key came with another body), run_terminal, payload_too_large (an
 * early result above EARLY_RESULT_LIMIT), store_unavailable.
 *
 * No oracle: the caller's authority over the key's run is checked before any answer that
 * depends on the key's state, so a caller who may not see that run gets resume_key_not_found
 * (the same error as for an unknown key) whether the key is unused, used or holds an early
 * result, after the same store reads (the key, then one run), and its envelope is not validated. A key no run waits on yet (nothing, or a held
 * result) names no run: only a system caller learns anything of it (held, duplicate_held,
 * result_already_held).
 */
export async function deliverResult(
  ctx: EngineContext,
  resumeKey: string,
  raw: unknown,
  caller: Caller,
  deliveryId?: string,
): Promise<DeliveryAck> {
  if (childOfResumeKey(resumeKey) !== null && caller.principal.kind !== 'system') {
    // A child's end is delivered by the runtime (the hand-back), never by a client.
    throw new EngineError('unauthorized', 'child:{run_id} results are delivered by the child run itself', {
      resume_key: resumeKey,
    });
  }
  const mayHold = caller.principal.kind === 'system';
  const bodyDigest = bodyDigestOf(raw);
  for (let attempt = 0; attempt < KEY_RACE_ATTEMPTS; attempt += 1) {
    const entry = await ctx.store.readResumeKey(resumeKey, ctx.clock.now());
    // Authority before any answer that depends on the key. A key no run waits on (nothing, or
    // a held result: only system callers have results held) names no run, so it is unknown to
    // anyone else; a wait's run is read and checked. Every answer a non-system caller gets costs
    // one key read and one run read, so that its timing does not tell key states apart either.
    let known: { record: RunRecord; entry: ResumeKeyEntry } | undefined;
    if (!mayHold) {
      const record = await ctx.store.getRun(entry?.kind === 'wait' ? entry.run_id : NO_SUCH_RUN);
      if (entry?.kind !== 'wait') throw keyNotFound(resumeKey);
      known = { record: mayDeliverTo(record, entry.run_id, resumeKey, caller), entry };
    }
    const decision = decideDelivery(entry, deliveryId, mayHold, bodyDigest);
    // A system caller sees every run, but a capability it presents must still match.
    if (mayHold && (decision.kind === 'duplicate' || decision.kind === 'refused') && entry?.kind === 'wait') {
      mayDeliverTo(await ctx.store.getRun(entry.run_id), entry.run_id, resumeKey, caller);
    }
    switch (decision.kind) {
      case 'unknown_key':
        throw keyNotFound(resumeKey);
      case 'duplicate':
        return { ack: 'duplicate', original_seq: decision.original_seq };
      case 'duplicate_held':
        return { ack: 'duplicate', held: true, expires_at: decision.expires_at };
      case 'refused':
        throw new EngineError(decision.code, refusedMessage(decision), { resume_key: resumeKey });
      case 'hold': {
        const held = await hold(ctx, resumeKey, raw, deliveryId);
        if (held !== null) return held;
        continue; // a wait or another hold took the key meanwhile: decide again
      }
      case 'deliver':
        return applyToWait(ctx, resumeKey, raw, caller, { deliveryId, bodyDigest }, decision, known);
    }
  }
  throw new EngineError(
    'store_unavailable',
    'the resume key kept changing; retry',
    { resume_key: resumeKey },
    {
      retryable: true,
    },
  );
}

/**
 * The answer for a key no run waits on, and for a key whose run the caller may not see: the
 * same error (code, message, details) for both, so that nothing of another user's key shows.
 */
function keyNotFound(resumeKey: string): EngineError {
  return new EngineError('resume_key_not_found', 'no run waits for that resume_key', {
    resume_key: resumeKey,
  });
}

/** The run id read for a key that names none: no run has it (run ids are the runtime's). */
const NO_SUCH_RUN = 'no-such-run';

/**
 * `record` (the run `runId` of the key, null when gone) when `caller` may see it, and so
 * deliver to it; else throws keyNotFound, or capability_invalid when a caller who may see it
 * presented a wrong capability.
 */
function mayDeliverTo(record: RunRecord | null, runId: string, resumeKey: string, caller: Caller): RunRecord {
  const access = accessOf(record, caller);
  if (access.ok && record !== null) return record;
  if (!access.ok && access.code === 'capability_invalid') throw accessError(access.code, runId);
  throw keyNotFound(resumeKey);
}

function refusedMessage(decision: Extract<DeliveryDecision, { kind: 'refused' }>): string {
  switch (decision.code) {
    case 'result_already_delivered':
      return 'a result with another delivery_id was already delivered for this resume_key';
    case 'result_already_held':
      return 'another result is already held for this resume_key';
    case 'delivery_id_reused':
      return 'this delivery_id was already used with another body for this resume_key';
  }
}

/**
 * The `digestOf` the body, binding a delivery_id to what it delivered; a body that is not
 * canonical JSON (a lone surrogate, a number out of range) gets a digest of its plain JSON text,
 * so that the envelope check, not the digest, refuses it.
 */
function bodyDigestOf(raw: unknown): string {
  try {
    return digestOf(raw);
  } catch {
    return digestOf(JSON.stringify(raw) ?? null);
  }
}

/** The EngineError of a refused envelope: names the field and the refusal code. */
function refusalError(refusal: EnvelopeRefusal): EngineError {
  return new EngineError('validation_failed', `invalid result: ${refusal.message}`, {
    issues: [
      {
        path: refusal.path === '' ? [] : refusal.path.split('.'),
        code: refusal.code,
        message: refusal.message,
      },
    ],
    refusal: refusal.code,
    field: refusal.path,
  });
}

/**
 * Holds a result no wait holds yet (validated now, so that a refusal reaches its sender).
 * Null when the key was taken meanwhile.
 */
async function hold(
  ctx: EngineContext,
  resumeKey: string,
  raw: unknown,
  deliveryId: string | undefined,
): Promise<DeliveryAck | null> {
  const { refusal } = normalizeToolResult(raw, 'early');
  if (refusal !== undefined) throw refusalError(refusal);
  const now = ctx.clock.now();
  const expiresAt = now + ctx.earlyResultTtlMs;
  let held: boolean;
  try {
    held = await ctx.store.holdEarlyResult({
      resume_key: resumeKey,
      body: JSON.stringify(raw),
      ...(deliveryId !== undefined ? { delivery_id: deliveryId } : {}),
      received_at: now,
      expires_at: expiresAt,
    });
  } catch (err) {
    if (err instanceof CommitTooLarge)
      throw new EngineError('payload_too_large', err.message, { resume_key: resumeKey });
    throw err;
  }
  return held ? { ack: 'held', resume_key: resumeKey, expires_at: expiresAt } : null;
}

/**
 * Applies the delivery to the run waiting on the key, in one commit; `known`: the key and run
 * already read and checked for this caller (used by the first attempt only).
 */
async function applyToWait(
  ctx: EngineContext,
  resumeKey: string,
  raw: unknown,
  caller: Caller,
  sent: { deliveryId: string | undefined; bodyDigest: string },
  wait: { run_id: string; op_id: string },
  known?: { record: RunRecord; entry: ResumeKeyEntry },
): Promise<DeliveryAck> {
  const notFound = () => keyNotFound(resumeKey);
  // What the caller's check read (the key, then the run) serves the first attempt.
  let first = known;
  return readDecideCommit(ctx, {
    async read(): Promise<{ record: RunRecord; entry: ResumeKeyEntry | null }> {
      if (first !== undefined) {
        const read = first;
        first = undefined;
        return read;
      }
      // The key first: a concurrent repeat of this delivery that won shows as applied there.
      const entry = await ctx.store.readResumeKey(resumeKey, ctx.clock.now());
      const record = await ctx.store.getRun(wait.run_id);
      const access = accessOf(record, caller);
      if (access.ok && record !== null) return { record, entry };
      if (!access.ok && access.code === 'capability_invalid') throw accessError(access.code, wait.run_id);
      // A caller who may not see the run learns nothing: the key is unknown to it.
      throw notFound();
    },
    decide({ record, entry }): Decision<DeliveryAck> {
      const { deliveryId, bodyDigest } = sent;
      const again = decideDelivery(entry, deliveryId, false, bodyDigest);
      if (again.kind === 'duplicate') return { done: { ack: 'duplicate', original_seq: again.original_seq } };
      if (again.kind === 'refused')
        throw new EngineError(again.code, refusedMessage(again), { resume_key: resumeKey });
      // Validated only once the caller may deliver: a refusal to anyone else would show the key
      // is in use. A refused envelope is the deliverer's to fix: nothing is recorded, the
      // request stays open.
      const { envelope, refusal } = normalizeToolResult(raw, wait.op_id);
      if (refusal !== undefined) throw refusalError(refusal);
      const result = deliverResultTransition(record, resumeKey, envelope, ctx.clock.now(), {
        ...(deliveryId !== undefined ? { delivery_id: deliveryId, body_digest: bodyDigest } : {}),
      });
      if (!result.ok) {
        if (result.code === 'run_terminal')
          throw new EngineError('run_terminal', result.message, { run_id: record.run_id });
        throw notFound();
      }
      return {
        commit: commitOf(result, record.version),
        async after(stored) {
          if (needsStep(stored)) await wake(ctx, stored.run_id);
          return {
            ack: 'applied',
            run_id: stored.run_id,
            seq: result.events[result.events.length - 1]?.seq ?? stored.last_seq,
          };
        },
      };
    },
    runId: wait.run_id,
  });
}
