/**
 * Forking a run from one of its checkpoints, pure: whether a checkpoint can be forked from, and
 * the new run it gives. The fork is its caller's (`principal`) with the original's reducer (pinned to
 * the same artifact), executor config and objective; what core owns is restored from the
 * checkpoint's copy (the pending operation, open requests, queued steers, counters, turn,
 * unanswered calls, undelivered events), with ids re-keyed to the new run; usage starts at zero
 * and the budgets are the checkpoint's unless given. Its log is its own `run_started` (seq 1,
 * with the origin), then events 2..cutoff read through from the original, then its own events:
 * so the reducer's state, which names seqs, stays true, and its model turns see the original's
 * transcript up to the checkpoint. The reducer does not receive the fork's run_started: it
 * continues from the checkpoint's state (or the edited one).
 * docs/contracts/run-lifecycle.md, "Checkpoints", "Budgets".
 */

import { z } from 'zod';
import {
  Budgets,
  type Checkpoint,
  Counters,
  EMPTY_USAGE,
  type ForkOrigin,
  isTerminalStatus,
  NO_COUNTERS,
  type OnExceeded,
  OpenRequest,
  Operation,
  type Principal,
  QueuedSteer,
  type ReducerBinding,
  type RiskTier,
  RunStatus,
  type Subject,
} from '../contracts/index.ts';
import { type Ok, type Rejected, seal } from './run-machine.ts';

/** The checkpoint's copy of what core owns, as a fork reads it (fields a checkpoint may lack default). */
const CoreCopy = z.object({
  status: RunStatus,
  open_requests: z.array(OpenRequest).default([]),
  queued_steers: z.array(QueuedSteer).default([]),
  counters: Counters.default({ ...NO_COUNTERS }),
  operation: Operation.nullable().default(null),
  turn: z.number().int().nonnegative().default(0),
  unanswered_calls: z.array(z.string()).default([]),
  inbox: z.array(z.number().int().positive()).default([]),
  compaction: z.unknown().optional(),
  budgets: Budgets.optional(),
});

/**
 * Whether `checkpoint` can be forked from: null when it can, else why not
 * (`checkpoint_not_forkable`): its run had ended, it waits on external results (their resume
 * keys belong to the original run), or its copy of core does not parse.
 */
export function unforkable(checkpoint: Checkpoint): string | null {
  const core = CoreCopy.safeParse(checkpoint.core);
  if (!core.success) return `checkpoint ${checkpoint.n} does not hold what a fork restores`;
  if (isTerminalStatus(core.data.status)) return `checkpoint ${checkpoint.n} was written after its run ended`;
  if (core.data.open_requests.some((r) => r.kind === 'result')) {
    return `checkpoint ${checkpoint.n} waits on external results, which belong to the original run`;
  }
  return null;
}

export interface ForkParams {
  run_id: string;
  /** Whom the fork acts as: the caller who forks (the original's principal when it forks its own run). */
  principal: Principal;
  /** The original run's record (principal, reducer, executor config, objective, budgets). */
  original: {
    run_id: string;
    principal: Principal;
    subject: Subject;
    reducer: ReducerBinding | null;
    executor_config: Record<string, unknown>;
    objective?: string | undefined;
    budgets: Budgets;
    on_exceeded: OnExceeded;
  };
  checkpoint: Checkpoint;
  /** The original's run_started data (input, objective?, context?). */
  run_started: Record<string, unknown>;
  /** The state the fork starts from, and whether it was edited (then at the checkpoint's revision + 1). */
  state: { value: unknown; edited: boolean };
  /** sha256 of the canonical JSON of the checkpoint's state, and of the edited one. */
  state_digest: string;
  forked_state_digest?: string;
  /** The fork's run_started input instead of the original's. */
  input?: { value: unknown };
  budgets?: Budgets | undefined;
  on_exceeded?: OnExceeded | undefined;
  subject?: Subject | undefined;
  capability_hash: string;
  /** The fork's risk tier (admission decides: the original's, raised to the deployment's floor). */
  risk_tier: RiskTier;
  /** The live-run quota slot admission gave the fork, when live runs are limited. */
  quota_slot?: number;
}

/** `id` with the original run's prefix `{original}/` replaced by the fork's. */
function rekey(id: string, original: string, fork: string): string {
  return id.startsWith(`${original}/`) ? `${fork}/${id.slice(original.length + 1)}` : id;
}

/**
 * The fork of `p.original` at `p.checkpoint`: a queued run (it settles waiting when open
 * requests hold it) whose record and seq-1 run_started are returned; events 2..cutoff are the
 * original's (the store links them). Rejected `checkpoint_not_forkable` (unforkable's reasons).
 */
export function forkRun(p: ForkParams, now: number): Ok | Rejected {
  const why = unforkable(p.checkpoint);
  if (why !== null) return { ok: false, code: 'checkpoint_not_forkable', message: why };
  const core = CoreCopy.parse(p.checkpoint.core);
  const cutoff = p.checkpoint.transcript_cutoff_seq;
  const from = p.original.run_id;
  const op = core.operation;
  // Neither a grant nor the provider calls of the original's turn carry over (a fresh retry budget).
  const {
    approved_digest: _granted,
    provider_calls: _made,
    provider_failures: _failed,
    ...kept
  } = op ?? { approved_digest: undefined };
  const origin: ForkOrigin = {
    run_id: from,
    checkpoint_no: p.checkpoint.n,
    transcript_cutoff_seq: cutoff,
    state_rev: p.checkpoint.state_rev,
    state_digest: p.state_digest,
    state_edited: p.state.edited,
    input_edited: p.input !== undefined,
    ...(p.forked_state_digest !== undefined ? { forked_state_digest: p.forked_state_digest } : {}),
  };
  const inbox = core.inbox.filter((seq) => seq <= cutoff);
  const draft = {
    run_id: p.run_id,
    version: 0,
    created_at: now,
    updated_at: now,
    principal: p.principal,
    subject: p.subject ?? p.original.subject,
    reducer: p.original.reducer,
    executor_config: p.original.executor_config,
    objective: p.original.objective,
    budgets: p.budgets ?? core.budgets ?? p.original.budgets,
    on_exceeded: p.on_exceeded ?? p.original.on_exceeded,
    usage: { ...EMPTY_USAGE },
    counters: { ...core.counters, consecutive_op_failures: 0, children: 0 },
    epoch: 0,
    last_seq: cutoff,
    reduced_seq: inbox.length > 0 ? (inbox[0] as number) - 1 : cutoff,
    inbox,
    turn: core.turn,
    state_rev: p.checkpoint.state_rev + (p.state.edited ? 1 : 0),
    projection: null,
    unanswered_calls: core.unanswered_calls,
    queued_steers: core.queued_steers.map((s) => ({ ...s, steer_id: rekey(s.steer_id, from, p.run_id) })),
    depth: 0,
    live_children: [],
    capability_hash: p.capability_hash,
    risk_tier: p.risk_tier,
    ...(p.quota_slot !== undefined ? { quota_slot: p.quota_slot } : {}),
    wake_at: now,
    status: 'queued',
    lease: null,
    operation:
      op === null ? null : { ...kept, op_id: rekey(op.op_id, from, p.run_id), attempt: 1, started_at: null },
    open_requests: core.open_requests.map((r) => ({ ...r, request_id: rekey(r.request_id, from, p.run_id) })),
    ...(core.compaction !== undefined ? { compaction: core.compaction } : {}),
    ...(p.checkpoint.large_results !== undefined ? { large_results: p.checkpoint.large_results } : {}),
    origin,
  };
  const data: Record<string, unknown> = {
    ...p.run_started,
    input: p.input !== undefined ? p.input.value : (p.run_started.input ?? null),
    origin,
  };
  return { ok: true, record: seal(draft), events: [{ seq: 1, kind: 'run_started', at: now, data }] };
}
