/**
 * Controls: each one commit, decided by core from the run record as read and its stored ack,
 * retried on a concurrent commit. A rejected control is an ack, never an error. Delivered
 * results are in deliveries.ts. docs/contracts/run-lifecycle.md, "Controls".
 */
import { type Budgets, type ControlAck, Control as ControlSchema } from '../contracts/index.ts';
import { accessOf, type Caller } from '../core/authority.ts';
import { budgetIncreaseOverflow } from '../core/budgets.ts';
import { controlDigest } from '../core/controls.ts';
import { decideControl } from '../core/run-machine.ts';
import { type Decision, readDecideCommit } from './commit-loop.ts';
import { afterEnd, commitOf, type EngineContext, needsStep, wake } from './deps.ts';
import { EngineError } from './errors.ts';
import { accessError } from './reads.ts';
import { reducerEvidence } from './reducer-evidence.ts';

/**
 * Applies one control to a run in one commit (its events and its ack `K#{control_id}`). Returns
 * the ack: applied, duplicate (same control_id and command) or rejected (logged as event seq N).
 * Throws EngineError validation_failed (the body; or a resume's budget_increase that would raise a
 * limit past Number.MAX_SAFE_INTEGER, naming `budget_increase.<limit>`, nothing written),
 * run_not_found, store_unavailable (the run
 * kept losing to concurrent commits: retry with the same control_id).
 * docs/contracts/run-lifecycle.md, "Controls".
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
  // Accept with evidence: checked before the commit loop (it reads the whole log once).
  const evidence = await reducerEvidence(ctx, runId, control);
  return readDecideCommit(ctx, {
    read: () => ctx.store.getRunAndAck(runId, control.control_id),
    decide({ record, ack }): Decision<ControlAck> {
      // A caller who may not see the run gets the answer of an unknown run, and nothing is written.
      const access = accessOf(record, caller);
      if (!access.ok || record === null) throw accessError(access.ok ? 'run_not_found' : access.code, runId);
      // A control id seen before is answered by its ack (duplicate, or control_id_reused) as is.
      if (ack === null && control.command === 'resume')
        refuseOverflow(record.budgets, control.budget_increase);
      const decision = decideControl(
        record,
        control,
        digest,
        ack === null ? null : { digest: ack.digest, seq: ack.seq },
        ctx.clock.now(),
        {
          ...(ctx.admission.max_queued_steers !== undefined
            ? { maxQueuedSteers: ctx.admission.max_queued_steers }
            : {}),
          ...(evidence !== undefined ? { reducerCheck: evidence } : {}),
        },
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

/** Throws validation_failed when a resume's budget_increase would raise a limit past a safe integer. */
function refuseOverflow(budgets: Budgets, increase: Budgets | undefined): void {
  const over = increase === undefined ? null : budgetIncreaseOverflow(budgets, increase);
  if (over === null) return;
  const message = `raises ${over.which} from ${over.limit} by ${over.increase}, past ${Number.MAX_SAFE_INTEGER}`;
  throw new EngineError('validation_failed', `invalid control: budget_increase.${over.which} ${message}`, {
    issues: [{ path: ['budget_increase', over.which], code: 'too_big', message }],
  });
}
