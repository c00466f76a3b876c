/**
 * The response builder: the reduction of one event (what the handlers read and write), effect
 * ids, and the three answers a request gets: changed (state_rev + 1, effects, projection),
 * unchanged (same state and state_rev, diagnostics only) and refused. docs/contracts/reducer.md
 * (response fields, effect ids `${state_rev}:${i}`), "Validation".
 */
import type { z } from 'zod';
import type { Effect, Projection, REDUCER_CONTRACT } from '../../contracts/index.ts';
import { isInt, isObject, type JsonRecord } from './json.ts';
import { project } from './projection.ts';
import { type AgentLoopState, STATE_VERSION } from './state.ts';

/** The contract this reducer speaks (the literal type ties it to lib/contracts). */
export const CONTRACT: typeof REDUCER_CONTRACT = 'raisin.agent-run.reducer/1';

/** An effect as the reducer writes it (the wire form: core fills the defaults when it parses). */
export type ReducerEffect = z.input<typeof Effect>;
/** An effect before `emit` gives it its id. */
export type EffectDraft = ReducerEffect extends infer E
  ? E extends unknown
    ? Omit<E, 'effect_id'>
    : never
  : never;

/** A diagnostic entry of the response. */
export interface AgentLoopDiagnostic {
  code: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  seq: number;
}

/** The response, as the reducer writes it (core validates it). */
export interface AgentLoopAnswer {
  contract: typeof REDUCER_CONTRACT;
  state: unknown;
  state_rev: number;
  effects: ReducerEffect[];
  projection: Projection | null;
  diagnostics: AgentLoopDiagnostic[];
  refused: { code: string; message: string } | null;
}

/** The event being reduced: an object with a seq and a kind, the rest unchecked. */
export type AgentLoopEvent = JsonRecord & { seq: number; kind: string };

/** True for an object with an integer seq >= 0 and a string kind. */
export function isEvent(value: unknown): value is AgentLoopEvent {
  return isObject(value) && typeof value.kind === 'string' && isInt(value.seq);
}

/** The reduction of one event: what the handlers read (request, event, run) and write. */
export interface Reduction {
  request: JsonRecord;
  event: AgentLoopEvent;
  /** `event.data`, or {} when it is not an object. */
  data: JsonRecord;
  /** `request.run`, or {} when it is not an object. */
  run: JsonRecord;
  /** A copy of the previous state, changed in place. */
  state: AgentLoopState;
  /** The state_rev of the answer: the request's + 1. */
  rev: number;
  effects: ReducerEffect[];
  diagnostics: AgentLoopDiagnostic[];
}

/** A handler's answer when the event changes nothing (the response keeps state and state_rev). */
export const IGNORED = 'ignored';
/** What a handler returns: IGNORED, or nothing when it changed the state. */
export type HandlerResult = typeof IGNORED | undefined;

/** A state this reducer wrote (core hands it back as it was stored; only the version is checked). */
export function isAgentLoopState(value: unknown): value is AgentLoopState {
  return isObject(value) && value.v === STATE_VERSION;
}

export function newReduction(
  request: JsonRecord,
  event: AgentLoopEvent,
  state: AgentLoopState,
  diagnostics: AgentLoopDiagnostic[] = [],
): Reduction {
  const rev = isInt(request.state_rev) ? request.state_rev : 0;
  return {
    request,
    event,
    data: eventData(event),
    run: isObject(request.run) ? request.run : {},
    state,
    rev: rev + 1,
    effects: [],
    diagnostics,
  };
}

/** `event.data`, or {} when it is not an object. */
export function eventData(event: AgentLoopEvent): JsonRecord {
  return isObject(event.data) ? event.data : {};
}

/** Pushes an effect with the id `${rev}:${i}` and returns the id. */
export function emit(ctx: Reduction, effect: EffectDraft): string {
  const id = `${ctx.rev}:${ctx.effects.length}`;
  ctx.effects.push({ effect_id: id, ...effect });
  return id;
}

/** The answer to an event that changed the state: state_rev + 1, the effects, the projection. */
export function changed(ctx: Reduction): AgentLoopAnswer {
  ctx.state.last_event_seq = ctx.event.seq;
  return {
    contract: CONTRACT,
    state: ctx.state,
    state_rev: ctx.rev,
    effects: ctx.effects,
    projection: project(ctx.state),
    diagnostics: ctx.diagnostics,
    refused: null,
  };
}

/** The answer to an event that changes nothing: the same state and state_rev, no effects. */
export function unchanged(request: JsonRecord, diagnostics: AgentLoopDiagnostic[]): AgentLoopAnswer {
  const state = request.state === undefined ? null : request.state;
  return {
    contract: CONTRACT,
    state,
    state_rev: isInt(request.state_rev) ? request.state_rev : 0,
    effects: [],
    projection: isAgentLoopState(state) ? project(state) : null,
    diagnostics,
    refused: null,
  };
}

/** A refusal `{code, message}` (core fails the run with `reducer_refused:<code>`). */
export function refusal(request: unknown, code: string, message: string): AgentLoopAnswer {
  const state = isObject(request) && request.state !== undefined ? request.state : null;
  return {
    contract: CONTRACT,
    state,
    state_rev: isObject(request) && isInt(request.state_rev) ? request.state_rev : 0,
    effects: [],
    projection: null,
    diagnostics: [],
    refused: { code, message },
  };
}

export function diag(
  code: string,
  severity: AgentLoopDiagnostic['severity'],
  message: string,
  event: AgentLoopEvent,
): AgentLoopDiagnostic {
  return { code, severity, message, seq: event.seq };
}

/** Records a warning and answers IGNORED. */
export function ignore(ctx: Reduction, code: string, message: string): typeof IGNORED {
  ctx.diagnostics.push(diag(code, 'warning', message, ctx.event));
  return IGNORED;
}

/** The event is for the effect the reducer waits for: effect_id equal, or absent and `fallback` holds. */
export function isAwaited(ctx: Reduction, fallback: boolean): boolean {
  const effectId = ctx.event.effect_id;
  if (typeof effectId === 'string') return effectId === ctx.state.awaiting;
  return fallback;
}

/** Ignores an event that is not for the awaited effect, with an `unexpected_effect` warning. */
export function notAwaited(ctx: Reduction): typeof IGNORED {
  const effectId = ctx.event.effect_id;
  const got = typeof effectId === 'string' ? `effect ${effectId}` : 'no effect_id';
  const want = ctx.state.awaiting ? `effect ${ctx.state.awaiting}` : 'nothing';
  return ignore(
    ctx,
    'unexpected_effect',
    `${ctx.event.kind} for ${got} ignored: waiting for ${want} (phase ${ctx.state.phase})`,
  );
}
