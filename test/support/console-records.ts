/**
 * A run record for the console's unit tests: a queued client-driven run of alice's at T0, as
 * the closed schema parses it, with `patch` over it (any field, any status's shape).
 */
import { type RunRecord, RunRecord as RunRecordSchema } from '../../lib/contracts/index.ts';

/** The fixture records' created_at and updated_at (ms). */
export const T0 = 1_800_000_000_000;

export function consoleRecord(patch: Record<string, unknown> = {}): RunRecord {
  return RunRecordSchema.parse({
    run_id: 'run_1',
    version: 3,
    created_at: T0,
    updated_at: T0,
    principal: { kind: 'user', id: 'alice' },
    subject: { workspace: 'ws', path: '/tickets/7' },
    reducer: null,
    budgets: {},
    on_exceeded: 'pause',
    usage: {},
    counters: {},
    epoch: 1,
    last_seq: 4,
    reduced_seq: 4,
    inbox: [],
    turn: 1,
    state_rev: 1,
    projection: null,
    unanswered_calls: [],
    queued_steers: [],
    wake_at: null,
    status: 'queued',
    lease: null,
    operation: null,
    open_requests: [],
    ...patch,
  });
}
