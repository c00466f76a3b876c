/**
 * Forking a run from one of its checkpoints (`POST /runs/{id}/fork`): read the original (as any
 * read: core/authority.ts's accessOf must let the caller see it), its checkpoint and the state it
 * references,
 * let core build the fork (lib/core/fork.ts), and create it in one transaction: the record, its
 * run_started (seq 1, with the origin), the domain state it starts from, a link page standing
 * for events 2..cutoff of the original (read through, never copied), the subject and create-key
 * index items. The original is not written to. A server-driven fork is then woken.
 * Seed: agent-runs, "Checkpoints", "Subject, principal and admission", "Budgets".
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ForkRunInput, MAX_STATE_BYTES, RunStartedData } from '../contracts/index.ts';
import { type Caller, capabilityHash } from '../core/authority.ts';
import { canonicalByteLength, digestOf } from '../core/canonical.ts';
import { forkRun as forkRecord, unforkable } from '../core/fork.ts';
import { principalKeyOf } from '../core/principal.ts';
import { CommitRejected } from './commit-errors.ts';
import type { CreateRunOutput } from './create-run.ts';
import { commitRun, type EngineDeps, wake } from './deps.ts';
import { EngineError } from './errors.ts';
import { readRun, runView } from './reads.ts';

/** A validation error naming `field` of the fork request. */
function invalid(field: string, message: string): EngineError {
  return new EngineError('validation_failed', `invalid fork request: ${message}`, {
    issues: [{ path: [field], code: 'custom', message }],
  });
}

/**
 * Forks `runId` at the checkpoint the request names. The fork is the caller's: its principal is
 * the caller's (the original's when its principal forks it), its create key is scoped to the
 * caller and bound to the request. Returns the new run (`created: false` with the run a replayed
 * create_key names). Throws EngineError validation_failed (the body; `state` above 256 KiB),
 * run_not_found / capability_invalid (readRun: accessOf decides), create_key_reused (the key
 * named another request),
 * checkpoint_not_found, checkpoint_not_forkable (the run had ended at the checkpoint, it waits
 * on external results, or its state is not stored), reducer_not_found (the original's reducer
 * is gone), subject_taken (another run lives on the fork's subject: the original's, while it
 * lives; give `subject`). A refused fork writes nothing.
 */
export async function forkRun(
  deps: EngineDeps,
  runId: string,
  raw: unknown,
  caller: Caller,
): Promise<CreateRunOutput> {
  const parsed = ForkRunInput.safeParse(raw);
  if (!parsed.success) {
    throw new EngineError('validation_failed', 'invalid fork request', { issues: parsed.error.issues });
  }
  const input = parsed.data;
  if (input.state !== undefined && canonicalByteLength(input.state) > MAX_STATE_BYTES) {
    throw invalid('state', `the state exceeds ${MAX_STATE_BYTES} bytes as canonical JSON`);
  }
  const original = await readRun(deps, runId, caller);
  const principalKey = principalKeyOf(caller.principal);
  // What a replayed create key must match: this fork request, without the key itself.
  const { create_key: _key, ...request } = input;
  const requestDigest = digestOf({ fork_of: runId, ...request });
  const replayed = async (): Promise<CreateRunOutput | null> => {
    if (input.create_key === undefined) return null;
    const byKey = await deps.store.findByCreateKey(principalKey, input.create_key);
    if (byKey === null) return null;
    if (byKey.request_digest !== requestDigest) {
      throw new EngineError('create_key_reused', 'the create key was already used for a different request', {
        create_key: input.create_key,
      });
    }
    // The fork is the caller's own: read it as its principal (a capability presented is the original's).
    return {
      run: runView(await readRun(deps, byKey.run_id, { principal: caller.principal })),
      created: false,
    };
  };
  const earlier = await replayed();
  if (earlier !== null) return earlier;
  const checkpoint = await deps.store.getCheckpoint(runId, input.checkpoint);
  if (checkpoint === null) {
    throw new EngineError(
      'checkpoint_not_found',
      `checkpoint ${input.checkpoint} of run ${runId} not found`,
      {
        run_id: runId,
        n: input.checkpoint,
      },
    );
  }
  const why = unforkable(checkpoint);
  if (why !== null) throw new EngineError('checkpoint_not_forkable', why, { run_id: runId, n: checkpoint.n });
  let state: unknown;
  try {
    state = await deps.store.getState(runId, checkpoint.state_rev, checkpoint.state_at);
  } catch (err) {
    throw new EngineError(
      'checkpoint_not_forkable',
      `the state revision ${checkpoint.state_rev} checkpoint ${checkpoint.n} references is not stored`,
      { run_id: runId, n: checkpoint.n },
      { cause: err },
    );
  }
  if (original.reducer !== null && (await deps.reducers.resolve(original.reducer)) === null) {
    throw new EngineError('reducer_not_found', `no reducer at ${original.reducer.function_path}`, {
      function_path: original.reducer.function_path,
    });
  }
  const [started] = await deps.store.readEvents(runId, 0, 1);
  const startedData = RunStartedData.safeParse(started?.data ?? {});
  const edited = input.state !== undefined;
  const startState = edited ? input.state : state;
  const secret = randomBytes(32).toString('base64url');
  const decided = forkRecord(
    {
      run_id: `run_${randomUUID().replaceAll('-', '')}`,
      principal: caller.principal,
      original,
      checkpoint,
      run_started: startedData.success ? { ...(started?.data ?? {}) } : { input: null },
      state: { value: startState, edited },
      state_digest: digestOf(state ?? null),
      ...(edited ? { forked_state_digest: digestOf(startState ?? null) } : {}),
      ...(input.input !== undefined ? { input: { value: input.input } } : {}),
      budgets: input.budgets,
      on_exceeded: input.on_exceeded,
      subject: input.subject,
      capability_hash: capabilityHash(secret),
    },
    deps.clock.now(),
  );
  if (!decided.ok) throw new EngineError('checkpoint_not_forkable', decided.message, { run_id: runId });
  const record = decided.record;
  const cutoff = checkpoint.transcript_cutoff_seq;
  let stored: typeof record;
  try {
    stored = await commitRun(deps, {
      record,
      expectedVersion: null,
      events: decided.events,
      ...(record.state_rev > 0 ? { state: { rev: record.state_rev, value: startState ?? null } } : {}),
      ...(cutoff >= 2 ? { eventLink: { run_id: runId, first_seq: 2, last_seq: cutoff } } : {}),
      ...(input.create_key !== undefined
        ? { createKey: { principalKey, key: input.create_key, request_digest: requestDigest } }
        : {}),
    });
  } catch (err) {
    if (err instanceof CommitRejected && err.reason === 'subject_taken') {
      throw new EngineError(
        'subject_taken',
        'another run lives on the fork subject (the original, while it lives): give the fork another subject',
        { subject: record.subject },
      );
    }
    if (err instanceof CommitRejected && err.reason === 'create_key_taken') {
      const theirs = await replayed();
      if (theirs !== null) return theirs;
    }
    throw err;
  }
  if (stored.reducer !== null) await wake(deps, stored.run_id);
  return { run: runView(stored), created: true, control_capability: secret };
}
