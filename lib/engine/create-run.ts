/**
 * Creating a run: parse the request, decide the principal, answer a replayed create key or the
 * subject's live run with `created: false`, resolve and pin the reducer, and commit the new run
 * (record, run_started, subject and create-key index items) in one transaction; a server-driven
 * run is then woken. docs/contracts/run-lifecycle.md, "Subject, principal and admission".
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { CreateRunInput, isTerminalStatus, type RunRecord } from '../contracts/index.ts';
import { admit, type QuotaUsage, quotaWindowOf } from '../core/admission.ts';
import { accessOf, type Caller, capabilityHash } from '../core/authority.ts';
import { digestOf } from '../core/canonical.ts';
import { principalFor, principalKeyOf, quotaKeyOf } from '../core/principal.ts';
import { createRun as createRunRecord } from '../core/run-machine.ts';
import { readDecideCommit } from './commit-loop.ts';
import { commitOf, type EngineDeps, wake } from './deps.ts';
import { EngineError } from './errors.ts';
import { readRun, runView } from './reads.ts';
import { admitRegistries } from './registry-admission.ts';
import { admitWorkspace } from './workspace-admission.ts';

export interface CreateRunOutput {
  run: RunRecord;
  created: boolean;
  /** The control capability secret: returned once, at creation; stored only as a hash. */
  control_capability?: string;
}

/** The binding pinned to the artifact it resolves to now; throws reducer_not_found. */
async function resolveReducer(
  deps: EngineDeps,
  binding: CreateRunInput['reducer'],
): Promise<RunRecord['reducer']> {
  if (binding === undefined || binding === null) return null;
  const resolved = await deps.reducers.resolve(binding);
  if (resolved === null) {
    throw new EngineError('reducer_not_found', `no reducer at ${binding.function_path}`, {
      function_path: binding.function_path,
    });
  }
  return { ...binding, artifact_hash: resolved.artifact_hash };
}

/** What a create found before deciding: a run under its key, else the subject's live run and the quota usage. */
type Found = { existing: string | null; live?: RunRecord | null; usage?: QuotaUsage };

/**
 * Reads what a create must not duplicate: the run its create key names (throws EngineError
 * create_key_reused when the key was used for another request), else the subject's live run,
 * and the quota usage under `quotaKey` (null: not limited).
 */
async function findExisting(
  deps: EngineDeps,
  input: Pick<z.output<typeof CreateRunInput>, 'create_key' | 'subject'>,
  principalKey: string,
  requestDigest: string,
  quotaKey: string | null,
): Promise<Found> {
  const byKey =
    input.create_key === undefined ? null : await deps.store.findByCreateKey(principalKey, input.create_key);
  if (byKey !== null) {
    if (byKey.request_digest !== undefined && byKey.request_digest !== requestDigest) {
      throw new EngineError('create_key_reused', 'the create key was already used for a different request', {
        create_key: input.create_key,
      });
    }
    return { existing: byKey.run_id };
  }
  const [live, usage] = await Promise.all([
    deps.store.findBySubject(input.subject),
    quotaKey !== null ? deps.store.readQuota(quotaKey, quotaWindowOf(deps.clock.now())) : undefined,
  ]);
  const record = live === null ? null : await deps.store.getRun(live);
  return {
    existing: null,
    live: record !== null && !isTerminalStatus(record.status) ? record : null,
    ...(usage !== undefined ? { usage } : {}),
  };
}

/**
 * Creates a run for `caller`, or returns the run a replayed create key or the subject's live run
 * names (`created: false`). Throws EngineError validation_failed (the body), unauthorized
 * (on_behalf_of by a non-system caller), agent_not_allowed (registry-admission.ts), workspace_not_granted (workspace-admission.ts), reducer_not_found; CommitRejected when the store refuses
 * for another reason.
 */
export async function createRun(deps: EngineDeps, raw: unknown, caller: Caller): Promise<CreateRunOutput> {
  const parsed = CreateRunInput.safeParse(raw);
  if (!parsed.success) {
    throw new EngineError('validation_failed', 'invalid create request', { issues: parsed.error.issues });
  }
  const input = parsed.data;
  const decided = principalFor(caller.principal, input.as_agent, input.on_behalf_of);
  if (!decided.ok) throw new EngineError(decided.code, decided.message, {});
  const principal = decided.principal;
  // Both read at once; a refused agent is answered first (the workspace check is the agent's).
  const [registries, workspace] = await Promise.allSettled([
    admitRegistries(deps, principal, caller, input.as_agent !== undefined),
    admitWorkspace(deps, principal, caller, input.subject.workspace),
  ]);
  if (registries.status === 'rejected') throw registries.reason;
  if (workspace.status === 'rejected') throw workspace.reason;
  const pinned = registries.value;
  const principalKey = principalKeyOf(principal);
  const quotaKey = quotaKeyOf(principal);
  // What a replayed create key must match: the request, without the key itself.
  const { create_key: _key, ...request } = input;
  const requestDigest = digestOf(request);
  const secret = randomBytes(32).toString('base64url');
  // System callers are the operators: quotas bound users and agents.
  const exempt = caller.principal.kind === 'system' && input.on_behalf_of === undefined;
  const quotaLimited =
    !exempt &&
    (deps.admission.max_live_runs !== undefined || deps.admission.max_creates_per_minute !== undefined);
  return readDecideCommit<Found, CreateRunOutput>(deps, {
    // What a create must not duplicate: a run under the same create key, the subject's live run.
    read: () => findExisting(deps, input, principalKey, requestDigest, quotaLimited ? quotaKey : null),
    async decide(found) {
      if (found.existing !== null)
        return {
          done: { run: runView(await readRun(deps, found.existing, caller), deps.prices), created: false },
        };
      if (found.live != null) {
        // The subject's live run: the caller may steer it instead, if it may see it at all.
        if (!accessOf(found.live, caller).ok)
          throw new EngineError('subject_busy', 'the subject has a live run', { subject: input.subject });
        return { done: { run: runView(found.live, deps.prices), created: false } };
      }
      const now = deps.clock.now();
      const admitted = admit(
        deps.admission,
        found.usage ?? { held_slots: [], window_count: 0 },
        input.risk_tier,
        now,
        !quotaLimited,
        randomInt(1 << 30),
      );
      if (!admitted.ok) {
        const { ok: _ok, code, message, ...details } = admitted;
        throw new EngineError(code, message, details, { retryable: admitted.retry_after_s !== undefined });
      }
      const reducer = await resolveReducer(deps, input.reducer);
      const created = createRunRecord(
        {
          run_id: `run_${randomUUID().replaceAll('-', '')}`,
          principal,
          subject: input.subject,
          reducer,
          input: input.input,
          ...(input.objective !== undefined ? { objective: input.objective } : {}),
          ...(input.context !== undefined ? { context: input.context } : {}),
          budgets: input.budgets,
          on_exceeded: input.on_exceeded,
          on_provider_outage: input.on_provider_outage,
          executor_config: input.executor_config,
          capability_hash: capabilityHash(secret),
          pinned,
          wake_delay_ms: deps.wakeGraceMs,
          risk_tier: admitted.risk_tier,
          ...(admitted.slot !== undefined ? { quota_slot: admitted.slot } : {}),
        },
        now,
      );
      return {
        commit: {
          ...commitOf(created, null),
          ...(quotaLimited
            ? {
                quota: {
                  // Claimed under the key it is read and released under (the user an agent acts for).
                  principalKey: quotaKey,
                  ...(admitted.window !== undefined ? { window: admitted.window } : {}),
                },
              }
            : {}),
          ...(input.create_key !== undefined
            ? { createKey: { principalKey, key: input.create_key, request_digest: requestDigest } }
            : {}),
        },
        async after(stored: RunRecord): Promise<CreateRunOutput> {
          if (reducer !== null) await wake(deps, stored.run_id);
          return { run: runView(stored, deps.prices), created: true, control_capability: secret };
        },
      };
    },
    // Someone created under the same subject or key first: read again and answer with theirs.
    // Another create of the same principal took the quota slot or window count: read again.
    retryOn: ['subject_taken', 'create_key_taken', 'quota_moved'],
    attempts: quotaLimited ? 8 : 3,
    jitter: quotaLimited,
  });
}
