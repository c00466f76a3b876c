/**
 * What a run's log shows of each effect beyond its id and kind: `reducer_answered` records only
 * `{effect_id, kind}`, but applying an effect writes events that carry its fields (core's
 * reducer-answer.ts): a request_opened (the approval's subject, the question, its choices,
 * schema and expiry), a capability_gap (the gap), an operation_started (the tool a call_tool
 * names), the run_completed or run_failed of complete / fail, the checkpoint_written of a
 * checkpoint, the request_closed of a withdraw_request. The check compares these fields too, so
 * a changed summary or question is a divergence. Fields the log does not hold (a tool's args, a
 * model turn's request, the projection) are not compared.
 */
import type { Effect, RunEvent } from '../../contracts/index.ts';

/** The fields of one effect the log can show, by kind (absent when none). */
export type EffectDetail = Record<string, unknown>;

/** The detail of an effect as the new artifact wrote it (the fields the log would show). */
export function detailOfEffect(effect: Effect): EffectDetail | undefined {
  switch (effect.kind) {
    case 'complete':
      return { outcome: effect.outcome, summary: effect.summary ?? null };
    case 'fail':
      return { code: effect.code, message: effect.message };
    case 'request_approval':
      return withExpiry({ subject: effect.subject }, effect.expires_in_ms);
    case 'ask_user':
      return withExpiry(
        {
          question: effect.question,
          ...(effect.choices !== undefined ? { choices: effect.choices } : {}),
          ...(effect.schema !== undefined ? { schema: effect.schema } : {}),
        },
        effect.expires_in_ms,
      );
    case 'checkpoint':
      return {
        reason: effect.reason ?? 'reducer',
        ...(effect.summary !== undefined ? { summary: effect.summary } : {}),
      };
    case 'capability_gap':
      return { gap: effect.gap };
    case 'call_tool':
      return { tool: effect.tool };
    case 'withdraw_request':
      return { request_id: effect.request_id };
    case 'request_model_turn':
      return undefined;
  }
}

function withExpiry(detail: EffectDetail, expiresInMs: number | undefined): EffectDetail {
  return expiresInMs !== undefined ? { ...detail, expires_in_ms: expiresInMs } : detail;
}

/**
 * The details the log recorded for the effects of the answer at index `answerAt` of `events`
 * (a `reducer_answered`), by effect id; an effect whose events are not in the log (an operation
 * that never started, a withdrawal of a request already closed, a compaction checkpoint) has none.
 */
export function recordedDetails(
  events: readonly RunEvent[],
  answerAt: number,
  effects: readonly { effect_id: string; kind: string }[],
): Map<string, EffectDetail> {
  const out = new Map<string, EffectDetail>();
  // The answer's own commit: the events after it up to the next answer.
  const next = events.findIndex((e, i) => i > answerAt && e.kind === 'reducer_answered');
  const own = events.slice(answerAt + 1, next === -1 ? events.length : next);
  // Checkpoints and withdrawals are matched in order, only when each wrote its event (a
  // compaction asked for while the run lives, or a withdrawal of a closed request, writes none).
  const inOrder = (kind: string, written: RunEvent[]) =>
    effects.filter((e) => e.kind === kind).length === written.length ? written : [];
  const checkpoints = inOrder(
    'checkpoint',
    own.filter((e) => e.kind === 'checkpoint_written' && e.data.reason !== 'paused'),
  );
  const withdrawals = inOrder(
    'withdraw_request',
    own.filter((e) => e.kind === 'request_closed' && e.data.reason === 'withdrawn'),
  );
  let checkpointIndex = 0;
  let withdrawalIndex = 0;
  for (const effect of effects) {
    const byId = (kind: string) => events.find((e) => e.kind === kind && e.effect_id === effect.effect_id);
    let detail: EffectDetail | undefined;
    switch (effect.kind) {
      case 'complete': {
        const done = own.find((e) => e.kind === 'run_completed');
        if (done !== undefined) detail = { outcome: done.data.outcome, summary: done.data.summary ?? null };
        break;
      }
      case 'fail': {
        const failed = own.find((e) => e.kind === 'run_failed');
        if (failed !== undefined) detail = { code: failed.data.code, message: failed.data.message };
        break;
      }
      case 'request_approval':
      case 'ask_user': {
        const opened = byId('request_opened');
        if (opened !== undefined) detail = requestDetail(opened);
        break;
      }
      case 'checkpoint': {
        const written = checkpoints[checkpointIndex];
        checkpointIndex += 1;
        if (written !== undefined) {
          const summary = written.data.summary;
          detail = { reason: written.data.reason, ...(summary !== undefined ? { summary } : {}) };
        }
        break;
      }
      case 'capability_gap': {
        const gap = byId('capability_gap');
        if (gap !== undefined) detail = { gap: gap.data.gap };
        break;
      }
      case 'call_tool': {
        const started = byId('operation_started');
        if (started !== undefined) detail = { tool: started.data.tool };
        break;
      }
      case 'withdraw_request': {
        const closed = withdrawals[withdrawalIndex];
        withdrawalIndex += 1;
        if (closed !== undefined) detail = { request_id: closed.data.request_id };
        break;
      }
    }
    if (detail !== undefined) out.set(effect.effect_id, detail);
  }
  return out;
}

/** The fields of a request_opened an approval or a question effect wrote. */
function requestDetail(opened: RunEvent): EffectDetail {
  const d = opened.data;
  const base: EffectDetail =
    d.kind === 'approval'
      ? { subject: d.subject }
      : {
          question: d.question,
          ...(d.choices !== undefined ? { choices: d.choices } : {}),
          ...(d.schema !== undefined ? { schema: d.schema } : {}),
        };
  return typeof d.expires_at === 'number' && typeof d.opened_at === 'number'
    ? { ...base, expires_in_ms: d.expires_at - d.opened_at }
    : base;
}
