/**
 * Forking a run from one of its checkpoints (`POST /runs/{id}/fork`): read the original (as any
 * read: core/authority.ts's accessOf must let the caller see it), its checkpoint and the state
 * it references, admit the fork as a create of the caller (core/admission.ts: quotas, risk
 * tier), let core build it (lib/core/fork.ts), and create it in one transaction: the record, its
 * run_started (seq 1, with the origin), the domain state it starts from, a link page standing
 * for events 2..cutoff of the original (read through, never copied), the subject, create-key
 * and quota items. The original is not written to. A server-driven fork is then woken.
 * docs/contracts/run-lifecycle.md, "Checkpoints", "Subject, principal and admission", "Budgets".
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { type Checkpoint, ForkRunInput, MAX_STATE_BYTES, type RunRecord } from '../contracts/index.ts';
import { admit, type QuotaUsage, quotaWindowOf } from '../core/admission.ts';
import { type Caller, capabilityHash } from '../core/authority.ts';
import { canonicalByteLength, digestOf } from '../core/canonical.ts';
import { forkRun as forkRecord, unforkable } from '../core/fork.ts';
import { principalKeyOf, quotaKeyOf } from '../core/principal.ts';
import { type Decision, readDecideCommit } from './commit-loop.ts';
import type { CreateRunOutput } from './create-run.ts';
import { type EngineDeps, wake } from './deps.ts';
import { EngineError } from './errors.ts';
import { CommitRejected } from './ports.ts';
import { readRun, runView } from './reads.ts';
import { admitWorkspace } from './workspace-admission.ts';

/** A validation error naming `field` of the fork request. */
function invalid(field: string, message: string): EngineError {
  return new EngineError('validation_failed', `invalid fork request: ${message}`, {
    issues: [{ path: [field], code: 'custom', message }],
  });
}

/** What a fork is made from: the original, its checkpoint, the state there and its run_started data. */
interface ForkSource {
  original: RunRecord;
  checkpoint: Checkpoint;
  state: unknown;
  runStarted: Record<string, unknown>;
}

/**
 * Reads what forking `runId` at checkpoint `n` needs. Throws EngineError checkpoint_not_found,
 * checkpoint_not_forkable (core's unforkable, or its state revision is not stored),
 * reducer_not_found (the original's reducer is gone).
 */
async function readSource(deps: EngineDeps, original: RunRecord, n: number): Promise<ForkSource> {
  const runId = original.run_id;
  const checkpoint = await deps.store.getCheckpoint(runId, n);
  if (checkpoint === null) {
    throw new EngineError('checkpoint_not_found', `checkpoint ${n} of run ${runId} not found`, {
      run_id: runId,
      n,
    });
  }
  const why = unforkable(checkpoint);
  if (why !== null) throw new EngineError('checkpoint_not_forkable', why, { run_id: runId, n });
  let state: unknown;
  try {
    state = await deps.store.getState(runId, checkpoint.state_rev, checkpoint.state_at);
  } catch (err) {
    throw new EngineError(
      'checkpoint_not_forkable',
      `the state revision ${checkpoint.state_rev} checkpoint ${n} references is not stored`,
      { run_id: runId, n },
      { cause: err },
    );
  }
  if (original.reducer !== null && (await deps.reducers.resolve(original.reducer)) === null) {
    throw new EngineError('reducer_not_found', `no reducer at ${original.reducer.function_path}`, {
      function_path: original.reducer.function_path,
    });
  }
  const [started] = await deps.store.readEvents(runId, 0, 1);
  const data = started?.kind === 'run_started' ? started.data : null;
  return { original, checkpoint, state, runStarted: data !== null ? { ...data } : { input: null } };
}

/** A fork decided up to its admission: what `decideFork` builds the new run from. */
interface ForkPlan {
  runId: string;
  forkId: string;
  caller: Caller;
  input: ReturnType<typeof ForkRunInput.parse>;
  source: ForkSource;
  secret: string;
  principalKey: string;
  /** Where the caller's quota items live (an agent's count against the user it acts for). */
  quotaKey: string;
  requestDigest: string;
  quotaLimited: boolean;
}

/**
 * Admits the fork of `plan` for the caller holding `usage` and lets core build it: the commit
 * (record, run_started, state, event link, quota and create-key items). Throws EngineError
 * quota_exceeded, checkpoint_not_forkable.
 */
function decideFork(deps: EngineDeps, plan: ForkPlan, usage: QuotaUsage): Decision<CreateRunOutput> {
  const { input, source, principalKey, quotaKey, quotaLimited } = plan;
  const now = deps.clock.now();
  // A random free slot, as a create takes: concurrent creates of the caller rarely collide.
  const spread = randomInt(1 << 30);
  const admitted = admit(deps.admission, usage, source.original.risk_tier, now, !quotaLimited, spread);
  if (!admitted.ok) {
    const { ok: _ok, code, message, ...details } = admitted;
    throw new EngineError(code, message, details, { retryable: admitted.retry_after_s !== undefined });
  }
  const edited = input.state !== undefined;
  const startState = edited ? input.state : source.state;
  const decided = forkRecord(
    {
      run_id: plan.forkId,
      principal: plan.caller.principal,
      original: source.original,
      checkpoint: source.checkpoint,
      run_started: source.runStarted,
      state: { value: startState, edited },
      state_digest: digestOf(source.state ?? null),
      ...(edited ? { forked_state_digest: digestOf(startState ?? null) } : {}),
      ...(input.input !== undefined ? { input: { value: input.input } } : {}),
      budgets: input.budgets,
      on_exceeded: input.on_exceeded,
      subject: input.subject,
      capability_hash: capabilityHash(plan.secret),
      risk_tier: admitted.risk_tier,
      ...(admitted.slot !== undefined ? { quota_slot: admitted.slot } : {}),
    },
    now,
  );
  if (!decided.ok) throw new EngineError('checkpoint_not_forkable', decided.message, { run_id: plan.runId });
  const record = decided.record;
  const cutoff = source.checkpoint.transcript_cutoff_seq;
  const window = admitted.window;
  return {
    commit: {
      record,
      expectedVersion: null,
      events: decided.events,
      ...(record.state_rev > 0 ? { state: { rev: record.state_rev, value: startState ?? null } } : {}),
      ...(cutoff >= 2 ? { eventLink: { run_id: plan.runId, first_seq: 2, last_seq: cutoff } } : {}),
      ...(quotaLimited
        ? { quota: { principalKey: quotaKey, ...(window !== undefined ? { window } : {}) } }
        : {}),
      ...(input.create_key !== undefined
        ? { createKey: { principalKey, key: input.create_key, request_digest: plan.requestDigest } }
        : {}),
    },
    async after(stored: RunRecord): Promise<CreateRunOutput> {
      if (stored.reducer !== null) await wake(deps, stored.run_id);
      return { run: runView(stored, deps.prices), created: true, control_capability: plan.secret };
    },
  };
}

/**
 * Forks `runId` at the checkpoint the request names. The fork is the caller's: its principal is
 * the caller's (the original's when its principal forks it), it is admitted as the caller's
 * create (quotas; the original's risk tier, raised to the deployment's floor), its create key is
 * scoped to the caller and bound to the request. Returns the new run (`created: false` with the
 * run a replayed create_key names). Throws EngineError validation_failed (the body; `state`
 * above 256 KiB), run_not_found / capability_invalid (readRun: accessOf decides),
 * create_key_reused (the key named another request), quota_exceeded, readSource's errors,
 * subject_taken (another run lives on the fork's subject: the original's, while it lives; give
 * `subject`). A refused fork writes nothing.
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
  // The fork is the caller's run: its workspace must be granted to the caller, as for a create.
  await admitWorkspace(deps, caller.principal, caller, (input.subject ?? original.subject).workspace);
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
    const run = await readRun(deps, byKey.run_id, { principal: caller.principal });
    return { run: runView(run, deps.prices), created: false };
  };
  const earlier = await replayed();
  if (earlier !== null) return earlier;
  const plan: ForkPlan = {
    runId,
    forkId: `run_${randomUUID().replaceAll('-', '')}`,
    caller,
    input,
    source: await readSource(deps, original, input.checkpoint),
    secret: randomBytes(32).toString('base64url'),
    principalKey,
    quotaKey: quotaKeyOf(caller.principal),
    requestDigest,
    // System callers are the operators: quotas bound users and agents (as for a create).
    quotaLimited:
      caller.principal.kind !== 'system' &&
      (deps.admission.max_live_runs !== undefined || deps.admission.max_creates_per_minute !== undefined),
  };
  try {
    return await readDecideCommit<{ replay: CreateRunOutput | null; usage?: QuotaUsage }, CreateRunOutput>(
      deps,
      {
        async read() {
          const replay = await replayed();
          if (replay !== null || !plan.quotaLimited) return { replay };
          return {
            replay,
            usage: await deps.store.readQuota(plan.quotaKey, quotaWindowOf(deps.clock.now())),
          };
        },
        decide: ({ replay, usage }) =>
          replay !== null
            ? { done: replay }
            : decideFork(deps, plan, usage ?? { held_slots: [], window_count: 0 }),
        // The same key used meanwhile: read again and answer with that fork. Another create of the
        // caller took the quota slot or window count: read again.
        retryOn: ['create_key_taken', 'quota_moved'],
        attempts: plan.quotaLimited ? 8 : 3,
        jitter: plan.quotaLimited,
      },
    );
  } catch (err) {
    if (err instanceof CommitRejected && err.code === 'subject_taken') {
      throw new EngineError(
        'subject_taken',
        'another run lives on the fork subject (the original, while it lives): give the fork another subject',
        { subject: input.subject ?? original.subject },
      );
    }
    throw err;
  }
}
