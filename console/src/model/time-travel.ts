/**
 * The console's time travel: which seq a run page shows the past at (the
 * `?at=SEQ` of its address), and the reading of `GET /runs/{id}/at/{seq}` the past view draws:
 * the state, the effective projection and the open requests as they stood at that seq, each
 * parsed with the contract's own schema. Pure: no fetch, no DOM.
 */
import { OpenRequest, Projection, type RunAtSeq } from '../../../lib/contracts/index.ts';

/** The search parameter that names the seq a run page shows the past at. */
export const AT_PARAM = 'at';

/**
 * The seq named by `search` (a location's search string, with or without its `?`): a whole
 * number from 1, else null (the page shows now). Whether the run has that seq is the API's to
 * say (`seq_not_found`).
 */
export function travelSeq(search: string): number | null {
  const raw = new URLSearchParams(search).get(AT_PARAM);
  if (raw === null || !/^[1-9][0-9]{0,15}$/.test(raw)) return null;
  const seq = Number(raw);
  return Number.isSafeInteger(seq) ? seq : null;
}

/** `search` with its `at` set to `seq`, or removed for null; other parameters kept. "" or "?...". */
export function travelSearch(search: string, seq: number | null): string {
  const params = new URLSearchParams(search);
  if (seq === null) params.delete(AT_PARAM);
  else params.set(AT_PARAM, String(seq));
  const q = params.toString();
  return q === '' ? '' : `?${q}`;
}

/**
 * The hint beside the status then: it is read from the log, whose reading does not always tell
 * running from waiting, so "running" there may have been a wait (for an external result, say).
 */
export const PAST_STATUS_HINT =
  'Read from the log, which does not always tell running from waiting: "running" here may have been a wait (for a result from outside, say).';

/** The hint above the state then: whose state it is. */
export const PAST_STATE_HINT = "The agent's own state at that revision, as its reducer stored it.";

/** What the past view draws of a run at one seq. */
export interface PastView {
  seq: number;
  /** The run's last seq when the view was read (the present). */
  currentSeq: number;
  status: string;
  turn: number;
  stateRev: number;
  /** The domain state of `stateRev`; undefined when the store no longer holds it. */
  state: { known: true; value: unknown } | { known: false };
  /** The effective projection then; null when the reducer had projected none; undefined when unknown. */
  projection: Projection | null | undefined;
  /** Why the state or the projection is unknown. */
  unknownReason: string | undefined;
  openRequests: OpenRequest[];
  /** Requests the contract's schema did not read (drawn as raw JSON). */
  unreadRequests: unknown[];
  unansweredCalls: string[];
  modelCalls: number;
  toolCalls: number;
  checkpoint: { n: number; reason: string; state_rev: number } | null;
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** The past view of one `GET /runs/{id}/at/{seq}` answer. A projection the schema refuses is unknown. */
export function pastView(at: RunAtSeq): PastView {
  const openRequests: OpenRequest[] = [];
  const unreadRequests: unknown[] = [];
  for (const r of at.open_requests) {
    const parsed = OpenRequest.safeParse(r);
    if (parsed.success) openRequests.push(parsed.data);
    else unreadRequests.push(r);
  }
  let projection: Projection | null | undefined;
  let unknownReason = at.unknown_reason;
  if (!at.projection_known) projection = undefined;
  else if (at.projection === null) projection = null;
  else {
    const parsed = Projection.safeParse(at.projection);
    projection = parsed.success ? parsed.data : undefined;
    if (!parsed.success) unknownReason ??= 'the projection then does not read as a projection';
  }
  return {
    seq: at.seq,
    currentSeq: at.current_seq,
    status: at.status,
    turn: at.turn,
    stateRev: at.state_rev,
    state: at.state_known ? { known: true, value: at.state } : { known: false },
    projection,
    unknownReason,
    openRequests,
    unreadRequests,
    unansweredCalls: at.unanswered_calls,
    modelCalls: count(at.usage.model_calls),
    toolCalls: count(at.usage.tool_calls),
    checkpoint: at.checkpoint,
  };
}

/** One line naming an open request then: what it asked. */
export function requestLine(request: OpenRequest): string {
  switch (request.kind) {
    case 'approval':
      return `approval: ${request.subject.summary}`;
    case 'input':
      return `question: ${request.question}${request.choices !== undefined ? ` (${request.choices.join(' / ')})` : ''}`;
    case 'result':
      return `result of ${request.tool} (delivery key ${request.resume_key})`;
  }
}
