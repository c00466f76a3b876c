/**
 * Controls and delivered results: each one commit, decided by core from the run record as read
 * (and, for a control, its stored ack), retried on a concurrent commit. A rejected control is an
 * ack, never an error. Seed: agent-runs, "Controls", "Operations" (waiting with a resume_key);
 * DESIGN section 7.
 */
import { type ControlAck, Control as ControlSchema, childOfResumeKey } from '../contracts/index.ts';
import { accessOf, type Caller } from '../core/authority.ts';
import { controlDigest } from '../core/controls.ts';
import { decideControl, deliverResult as deliverResultTransition } from '../core/run-machine.ts';
import { normalizeToolResult } from '../core/tool-result-validation.ts';
import { type Decision, readDecideCommit } from './commit-loop.ts';
import { afterEnd, commitOf, type EngineContext, needsStep, wake } from './deps.ts';
import { EngineError } from './errors.ts';
import { accessError } from './reads.ts';

/**
 * Applies one control to a run in one commit (its events and its ack `K#{control_id}`). Returns
 * the ack: applied, duplicate (same control_id and command) or rejected (logged as event seq N).
 * Throws EngineError validation_failed (the body), run_not_found, store_unavailable (the run
 * kept losing to concurrent commits: retry with the same control_id). Seed: agent-runs, "Controls".
 */
export async function applyControl(
  ctx: EngineContext,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<ControlAck> {
  const parsed = ControlSchema.safeParse(raw);
  if (!parsed.success)
    throw new EngineError('validation_failed', 'invalid control', { issues: parsed.error.issues });
  const control = parsed.data;
  const digest = controlDigest(control);
  return readDecideCommit(ctx, {
    read: () => ctx.store.getRunAndAck(runId, control.control_id),
    decide({ record, ack }): Decision<ControlAck> {
      // A caller who may not see the run gets the answer of an unknown run, and nothing is written.
      const access = accessOf(record, caller);
      if (!access.ok || record === null) throw accessError(access.ok ? 'run_not_found' : access.code, runId);
      const decision = decideControl(
        record,
        control,
        digest,
        ack === null ? null : { digest: ack.digest, seq: ack.seq },
        ctx.clock.now(),
      );
      if (decision.kind === 'duplicate')
        return { done: { ack: 'duplicate', original_seq: decision.original_seq } };
      const reply: ControlAck =
        decision.kind === 'applied'
          ? { ack: 'applied', seq: decision.seq }
          : { ack: 'rejected', reason: decision.reason, seq: decision.seq };
      // A rejection by a run that ended writes nothing.
      if (decision.events.length === 0) return { done: reply };
      // A reused control id keeps the ack of its first command.
      const storeAck = !(decision.kind === 'rejected' && decision.reason === 'control_id_reused');
      return {
        commit: {
          ...commitOf(decision, record.version),
          ...(storeAck
            ? { controlAck: { control_id: control.control_id, digest, ack: reply, seq: decision.seq } }
            : {}),
        },
        async after(stored) {
          if (needsStep(stored)) await wake(ctx, runId);
          await afterEnd(ctx, stored);
          return reply;
        },
      };
    },
    // A concurrent commit, or a concurrent duplicate of this control: read again.
    retryOn: ['stale_version', 'control_ack_exists'],
    runId,
  });
}

/**
 * Delivers an external result for a parked tool call by its resume_key, in one commit
 * (result_delivered + the call's tool_result). Returns the run and the seq of the tool_result.
 * Throws EngineError validation_failed (an envelope raisin.tool-result/1 refuses: names the field
 * and the refusal code; nothing is recorded), unauthorized (a `child:` key: hand-backs are the
 * runtime's), resume_key_not_found,
 * run_terminal, store_unavailable. Seed: agent-runs, "Operations" (waiting with a resume_key).
 */
export async function deliverResult(
  ctx: EngineContext,
  resumeKey: string,
  raw: unknown,
  caller: Caller,
): Promise<{ run_id: string; seq: number }> {
  if (childOfResumeKey(resumeKey) !== null && caller.principal.kind !== 'system') {
    // A child's end is delivered by the runtime (the hand-back), never by a client.
    throw new EngineError('unauthorized', 'child:{run_id} results are delivered by the child run itself', {
      resume_key: resumeKey,
    });
  }
  const found = await ctx.store.findByResumeKey(resumeKey);
  if (found === null)
    throw new EngineError('resume_key_not_found', 'no run waits for that resume_key', {
      resume_key: resumeKey,
    });
  // A refused envelope is the deliverer's to fix: nothing is recorded, the request stays open.
  const { envelope, refusal } = normalizeToolResult(raw, found.op_id);
  if (refusal !== undefined) {
    throw new EngineError('validation_failed', `invalid result: ${refusal.message}`, {
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
  return readDecideCommit(ctx, {
    async read() {
      const record = await ctx.store.getRun(found.run_id);
      const access = accessOf(record, caller);
      if (access.ok && record !== null) return record;
      if (!access.ok && access.code === 'capability_invalid') throw accessError(access.code, found.run_id);
      // A caller who may not see the run learns nothing: the key is unknown to it.
      throw new EngineError('resume_key_not_found', 'no run waits for that resume_key', {
        resume_key: resumeKey,
      });
    },
    decide(record): Decision<{ run_id: string; seq: number }> {
      const result = deliverResultTransition(record, resumeKey, envelope, ctx.clock.now());
      if (!result.ok) {
        throw new EngineError(
          result.code === 'run_terminal' ? 'run_terminal' : 'resume_key_not_found',
          result.message,
          { run_id: record.run_id },
        );
      }
      return {
        commit: commitOf(result, record.version),
        async after(stored) {
          if (needsStep(stored)) await wake(ctx, stored.run_id);
          return {
            run_id: stored.run_id,
            seq: result.events[result.events.length - 1]?.seq ?? stored.last_seq,
          };
        },
      };
    },
    runId: found.run_id,
  });
}
