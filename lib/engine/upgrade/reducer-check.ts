/**
 * Checking a reducer upgrade against recorded runs: every delivery in a run's log is sent to
 * the new artifact as the engine sent it (core's `reducerRequestFor` over the run as it stood,
 * the recorded state of that revision, the sandbox host under its default limits, core's
 * `validateAnswer`), and each answer is compared with the recorded one. Per decision, not per
 * run: each delivery gets the state the old artifact wrote, so a run can be taken over at any
 * point. Result per run: identical, or the first divergent delivery with both answers and a
 * short diff. docs/guides/upgrading-a-reducer.md.
 */
import type { ReducerBinding, ReducerRequest } from '../../contracts/index.ts';
import { canonicalJson } from '../../core/canonical.ts';
import { reducerRequestFor, validateAnswer } from '../../core/reducer-outcome.ts';
import type { ReducerHost } from '../ports.ts';
import { detailOfEffect, type EffectDetail, recordedDetails } from './effect-details.ts';
import { type Delivery, deliveriesOf, type RunSummary } from './run-at-delivery.ts';
import type { RunLog } from './run-log.ts';

/**
 * One answer as a run records it: applied (`state_rev`, effect ids and kinds, diagnostics when
 * any, and the new state when its revision moved and the state is known), or refused with the
 * code the run failed or paused with (`reducer_refused:<code>`, `reducer_unavailable`).
 */
export type ComparedAnswer =
  | {
      outcome: 'answered';
      state_rev: number;
      /** Each effect's id and kind, and `detail`: its fields the log shows (effect-details.ts). */
      effects: { effect_id: string; kind: string; detail?: EffectDetail }[];
      diagnostics?: unknown[];
      state?: unknown;
    }
  | { outcome: 'refused'; code: string };

/** The check of one run. `deliveries`: how many were compared (up to the first divergence). */
export type RunCheck =
  | { run_id: string; result: 'identical'; deliveries: number }
  | {
      run_id: string;
      result: 'diverged';
      deliveries: number;
      /** Seq of the delivered event the answers differ on. */
      event_seq: number;
      /** Seq of the recorded answer (`reducer_answered`, or the refusal's event). */
      answer_seq: number;
      old: ComparedAnswer;
      new: ComparedAnswer;
      /** What differs, one line per difference (path: old → new), at most 5. */
      diff: string[];
      /** Why the new artifact did not answer validly (the sandbox's or the validation's message), when it did not. */
      reason?: string;
    }
  /** Not checkable: a fork (its reducer starts from a checkpoint's state), or no reducer bound. */
  | { run_id: string; result: 'skipped'; deliveries: 0; reason: string };

/** The binding a check host serves its one artifact at. */
/** Where a check host (lib/sandbox/check-host.ts) serves the artifact it checks. */
export const CHECK_PATH = '/check/artifact';

/** The recorded answer of a delivery, with the stored state of its revision when known. */
function recordedAnswer(d: Delivery, log: RunLog, states: ReadonlyMap<number, unknown>): ComparedAnswer {
  if (d.recorded.kind === 'refused') return { outcome: 'refused', code: d.recorded.code };
  const data = d.recorded.data;
  const stateRev = Number(data.state_rev);
  const effects = (Array.isArray(data.effects) ? data.effects : []) as { effect_id: string; kind: string }[];
  // parseRunLog checked that seqs run from 1: the answer is at index seq - 1.
  const details = recordedDetails(log.events, d.recorded.seq - 1, effects);
  return {
    outcome: 'answered',
    state_rev: stateRev,
    effects: effects.map((e) => {
      const detail = details.get(e.effect_id);
      return { effect_id: e.effect_id, kind: e.kind, ...(detail !== undefined ? { detail } : {}) };
    }),
    ...(Array.isArray(data.diagnostics) && data.diagnostics.length > 0
      ? { diagnostics: data.diagnostics }
      : {}),
    ...(stateRev !== d.state_rev && states.has(stateRev) ? { state: states.get(stateRev) } : {}),
  };
}

/**
 * The new artifact's answer as the run would record it (core's applyReducerOutcome): after the
 * end only checkpoint effects apply and a refusal is recorded as an empty answer.
 */
async function newAnswer(
  host: ReducerHost,
  binding: ReducerBinding,
  request: ReducerRequest,
  ended: boolean,
): Promise<{ answer: ComparedAnswer; state?: unknown; reason?: string }> {
  const res = await host.reduce(binding, request);
  const empty: ComparedAnswer = { outcome: 'answered', state_rev: request.state_rev, effects: [] };
  let refused: string;
  let reason: string;
  if (res.kind === 'unavailable' || res.kind === 'changed') {
    refused = 'reducer_unavailable';
    reason = res.kind === 'unavailable' ? res.reason : 'the artifact changed';
  } else if (res.kind === 'threw') {
    refused = `reducer_refused:${res.code}`;
    reason = res.message;
  } else {
    const v = validateAnswer(request, res.response);
    if (!v.ok) {
      refused = `reducer_refused:${v.code}`;
      reason = `${v.path !== undefined ? `${v.path}: ` : ''}${v.message}`;
    } else if (v.response.refused !== null) {
      refused = `reducer_refused:${v.response.refused.code}`;
      reason = v.response.refused.message;
    } else {
      const r = v.response;
      const effects = ended ? r.effects.filter((e) => e.kind === 'checkpoint') : r.effects;
      const moved = r.state_rev !== request.state_rev;
      return {
        answer: {
          outcome: 'answered',
          state_rev: r.state_rev,
          effects: effects.map((e) => {
            const detail = detailOfEffect(e);
            return { effect_id: e.effect_id, kind: e.kind, ...(detail !== undefined ? { detail } : {}) };
          }),
          ...(r.diagnostics.length > 0 ? { diagnostics: r.diagnostics } : {}),
          ...(moved ? { state: r.state } : {}),
        },
        ...(moved ? { state: r.state } : {}),
      };
    }
  }
  return { answer: ended ? empty : { outcome: 'refused', code: refused }, reason };
}

/** Up to `max` differences between two JSON values, as `path: old → new` lines. */
export function jsonDiff(a: unknown, b: unknown, path = '', max = 5): string[] {
  const out: string[] = [];
  const walk = (x: unknown, y: unknown, at: string): void => {
    if (out.length >= max || canonicalJson(x ?? null) === canonicalJson(y ?? null)) return;
    const bothObjects =
      typeof x === 'object' &&
      x !== null &&
      typeof y === 'object' &&
      y !== null &&
      Array.isArray(x) === Array.isArray(y);
    if (!bothObjects) {
      out.push(`${at || '(answer)'}: ${short(x)} → ${short(y)}`);
      return;
    }
    const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
    for (const k of [...keys].sort()) {
      walk((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], at ? `${at}.${k}` : k);
    }
  };
  walk(a, b, path);
  return out;
}

function short(value: unknown): string {
  if (value === undefined) return '(absent)';
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * The new answer with what the log does not know of the old one left out: the state when its
 * revision is not stored, an effect's detail when its events are not in the log.
 */
function comparable(old: ComparedAnswer, fresh: ComparedAnswer): [ComparedAnswer, ComparedAnswer] {
  if (old.outcome !== 'answered' || fresh.outcome !== 'answered') return [old, fresh];
  const { state, ...rest } = fresh;
  const effects = fresh.effects.map((e, i) => {
    const recorded = old.effects[i];
    if (recorded === undefined || recorded.detail !== undefined || e.detail === undefined) return e;
    const { detail: _unknown, ...bare } = e;
    return bare;
  });
  return [old, { ...rest, effects, ...('state' in old ? { state } : {}) }];
}

/**
 * Checks one run's log against the artifact `host` serves (see createCheckHost). Never throws
 * for a reducer fault (it is an answer to compare); rejects only when `host` does (its registry
 * unreachable). The handler is the run's binding's (default `reduce`). `functionPath`: the path
 * `host` serves the artifact at (default: a check host's, createCheckHost); the engine's own host
 * is given the run's path, unpinned, so that it serves the artifact published now.
 */
export async function checkRunLog(
  host: ReducerHost,
  log: RunLog,
  functionPath: string = CHECK_PATH,
): Promise<RunCheck> {
  const runId = log.run.run_id;
  if (log.run.reducer === null)
    return { run_id: runId, result: 'skipped', deliveries: 0, reason: 'no reducer' };
  if (log.run.origin !== undefined)
    return {
      run_id: runId,
      result: 'skipped',
      deliveries: 0,
      reason: 'a fork: its reducer starts from a checkpoint',
    };
  const binding: ReducerBinding = {
    function_path: functionPath,
    ...(log.run.reducer.handler !== undefined ? { handler: log.run.reducer.handler } : {}),
  };
  const states = new Map<number, unknown>([
    [0, null],
    ...log.states.map((s) => [s.state_rev, s.state] as const),
  ]);
  let count = 0;
  for (const d of deliveriesOf(log.run, log.events)) {
    // A revision replaced inside one commit was never stored: the new answer that wrote it stands in.
    const state = states.get(d.state_rev);
    const request = reducerRequestFor(asRecord(d.run, d.state_rev), state ?? null, d.event);
    if (request === null) continue;
    const ended = d.run.status === 'completed' || d.run.status === 'failed' || d.run.status === 'stopped';
    const fresh = await newAnswer(host, binding, request, ended);
    count += 1;
    const [old, got] = comparable(recordedAnswer(d, log, states), fresh.answer);
    if (canonicalJson(old) !== canonicalJson(got)) {
      return {
        run_id: runId,
        result: 'diverged',
        deliveries: count,
        event_seq: d.event.seq,
        answer_seq: d.recorded.seq,
        old,
        new: got,
        diff: jsonDiff(old, got),
        ...(fresh.reason !== undefined ? { reason: fresh.reason } : {}),
      };
    }
    if (got.outcome === 'answered' && !states.has(got.state_rev)) states.set(got.state_rev, fresh.state);
  }
  return { run_id: runId, result: 'identical', deliveries: count };
}

/**
 * The summary as the record core's request builder reads (it reads only the summary's fields
 * and `state_rev`; the other record fields are not part of a request).
 */
function asRecord(run: RunSummary, stateRev: number): Parameters<typeof reducerRequestFor>[0] {
  return { ...run, state_rev: stateRev } as unknown as Parameters<typeof reducerRequestFor>[0];
}

/** Totals over many runs' checks. */
export function checkTotals(checks: readonly RunCheck[]): {
  runs: number;
  identical: number;
  diverged: number;
  skipped: number;
  deliveries: number;
} {
  return {
    runs: checks.length,
    identical: checks.filter((c) => c.result === 'identical').length,
    diverged: checks.filter((c) => c.result === 'diverged').length,
    skipped: checks.filter((c) => c.result === 'skipped').length,
    deliveries: checks.reduce((n, c) => n + c.deliveries, 0),
  };
}
