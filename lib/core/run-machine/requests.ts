/**
 * Steers and requests between operations: consuming a steer, the policy gate's approval,
 * expiring requests, delivering an external result. docs/contracts/run-lifecycle.md, "Controls"
 * (steer), "Operations" (waiting with a resume_key), sweeper ("closes requests past their expiry").
 */
import {
  isTerminalStatus,
  type NewRunEvent,
  type OpenRequest,
  type RunEvent,
  type RunRecord,
  type ToolResultEnvelope,
} from '../../contracts/index.ts';
import {
  append,
  type Draft,
  dropGatedOperation,
  ev,
  finish,
  reject,
  settleIdle,
  type TransitionResult,
} from './draft.ts';

/**
 * Queues a steer (event steer_queued): it reaches the reducer as `user_input` at the next boundary
 * between operations; a waiting run is queued to take it. Used by the steer control and by the
 * delegation mailbox (a background child's hand-back). docs/contracts/run-lifecycle.md, "Controls"
 * (steer).
 */
export function queueSteer(
  draft: Draft,
  controlId: string,
  input: unknown,
  now: number,
): { draft: Draft; events: RunEvent[] } {
  const n = draft.counters.next_steer + 1;
  const steer_id = `${draft.run_id}/steer/${n}`;
  const counted = { ...draft, counters: { ...draft.counters, next_steer: n } } as Draft;
  const appended = append(
    counted,
    [ev('steer_queued', now, { steer_id, control_id: controlId, input })],
    now,
  );
  const seq = appended.events[0]?.seq ?? 0;
  let next = {
    ...appended.draft,
    queued_steers: [...draft.queued_steers, { steer_id, control_id: controlId, input, seq }],
  } as Draft;
  if (next.status === 'waiting') next = { ...next, status: 'queued', wake_at: now } as Draft;
  return { draft: next, events: appended.events };
}

/** Consumes the oldest queued steer between operations (event steer_consumed → user_input). */
export function consumeSteer(record: RunRecord, now: number): TransitionResult {
  const steer = record.queued_steers[0];
  if (steer === undefined) return reject('no_steer', 'no queued steer');
  if (record.operation !== null && record.operation.started_at !== null) {
    return reject('invalid_state', 'steers are consumed only between operations');
  }
  const draft = { ...record, queued_steers: record.queued_steers.slice(1) } as Draft;
  const appended = append(
    draft,
    [ev('steer_consumed', now, { steer_id: steer.steer_id, input: steer.input })],
    now,
  );
  return finish(appended.draft, appended.events);
}

/** Opens the approval the policy gate requires before a pending tool operation runs. */
export function gateOperation(
  record: RunRecord,
  subject: { digest: string; summary: string; tool: string; tool_version: string },
  now: number,
  expiresInMs?: number,
): TransitionResult {
  const op = record.operation;
  if (op === null || op.started_at !== null) return reject('no_operation', 'no pending operation');
  const n = record.counters.next_req + 1;
  const request: OpenRequest = {
    kind: 'approval',
    request_id: `${record.run_id}/req/${n}`,
    effect_id: op.effect_id,
    subject: {
      kind: 'tool_call',
      digest: subject.digest,
      digest_alg: 'sha256:rfc8785',
      summary: subject.summary,
      changes: {
        tool: subject.tool,
        version: subject.tool_version,
        args: op.effect.kind === 'call_tool' ? op.effect.args : {},
      },
    },
    opened_at: now,
    expires_at: expiresInMs !== undefined ? now + expiresInMs : null,
  };
  return openRequestAs(
    record,
    request,
    n,
    now,
    { ...request, gate: true },
    {
      operation_id: op.op_id,
      effect_id: op.effect_id,
    },
  );
}

/**
 * Opens `request`, the run's request number `n` (counters.next_req): it joins the open requests
 * and request_opened is appended with `data` and `refs` (effect_id, operation_id). Every opened
 * request, the gate's and a client's, goes through here.
 */
export function openRequestAs(
  record: RunRecord,
  request: OpenRequest,
  n: number,
  now: number,
  data: Record<string, unknown>,
  refs: Partial<NewRunEvent>,
): TransitionResult {
  const draft = {
    ...record,
    open_requests: [...record.open_requests, request],
    counters: { ...record.counters, next_req: n },
  } as Draft;
  const appended = append(draft, [ev('request_opened', now, data, refs)], now);
  return finish(appended.draft, appended.events);
}

/**
 * Closes open requests past their expiry (request_closed reason expired); a gated operation whose
 * approval expired is dropped. docs/contracts/run-lifecycle.md, "Leases, recovery and the sweeper"
 * (expiry of requests).
 */
export function expireRequests(record: RunRecord, now: number): TransitionResult {
  const expired = record.open_requests.filter((r) => r.expires_at !== null && r.expires_at <= now);
  if (expired.length === 0) return reject('nothing_to_do', 'no expired request');
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  let draft = { ...record, open_requests: record.open_requests.filter((r) => !expired.includes(r)) } as Draft;
  for (const r of expired) draft = dropGatedOperation(draft, r);
  const appended = append(
    draft,
    expired.map((r) =>
      ev('request_closed', now, { request_id: r.request_id, reason: 'expired' }, { effect_id: r.effect_id }),
    ),
    now,
  );
  return finish(settleIdle(appended.draft, now), appended.events);
}

/** How a result was delivered: the caller's delivery_id, and whether it was held before the wait. */
export interface DeliveryMark {
  delivery_id?: string;
  /** `digestOf` the delivered body: a repeat of the delivery_id with another body is refused. */
  body_digest?: string;
  /** The result arrived before the wait was recorded, was held by its resume_key, and is applied now. */
  early?: boolean;
}

/**
 * Delivers an external result for a parked tool call by its resume_key: the result request
 * closes and the tool_result reaches the reducer. `mark` is recorded on result_delivered
 * ({request_id, resume_key, delivery_id?, body_digest?, early?}). Rejected `request_not_found` when no open
 * result request has that key. docs/contracts/run-lifecycle.md, "Operations" (waiting with a
 * resume_key).
 */
export function deliverResult(
  record: RunRecord,
  resumeKey: string,
  envelope: ToolResultEnvelope,
  now: number,
  mark: DeliveryMark = {},
): TransitionResult {
  if (isTerminalStatus(record.status)) return reject('run_terminal', 'run already ended');
  const request = record.open_requests.find((r) => r.kind === 'result' && r.resume_key === resumeKey);
  if (request === undefined || request.kind !== 'result')
    return reject('request_not_found', 'no open result request for that resume_key');
  const draft = { ...record, open_requests: record.open_requests.filter((r) => r !== request) } as Draft;
  const appended = append(
    draft,
    [
      ev('result_delivered', now, {
        request_id: request.request_id,
        resume_key: resumeKey,
        ...(mark.delivery_id !== undefined ? { delivery_id: mark.delivery_id } : {}),
        ...(mark.body_digest !== undefined ? { body_digest: mark.body_digest } : {}),
        ...(mark.early === true ? { early: true } : {}),
      }),
      ev(
        'tool_result',
        now,
        {
          ...(request.call_id !== undefined ? { call_id: request.call_id } : {}),
          tool: request.tool,
          envelope,
        },
        { operation_id: request.op_id, effect_id: request.effect_id },
      ),
    ],
    now,
  );
  return finish(settleIdle(appended.draft, now), appended.events);
}
