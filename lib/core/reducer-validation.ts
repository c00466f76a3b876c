/**
 * Validation of a reducer's answer before core applies it.
 * docs/contracts/reducer.md → "Response" and "Validation".
 */
import { z } from 'zod';
import {
  EFFECT_KINDS,
  Effect,
  MAX_STATE_BYTES,
  OPERATION_EFFECT_KINDS,
  overLimitMessage,
  Projection,
  type ReducerRequest,
  ReducerResponse,
  type ReducerValidationCode,
  TERMINAL_STATUSES,
} from '../contracts/index.ts';
import { CanonicalJsonError, canonicalByteLength, describeJsonKind, isPlainObject } from './canonical.ts';

/** The answer passed every rule; `response` is the decoded answer (defaults applied, unknown fields dropped). */
export type ReducerValidationOk = { ok: true; response: ReducerResponse };

/**
 * The first rule the answer violates. `path` is the dotted location of the offending value
 * (`effects.1.kind`, `state_rev`, `projection.items.0.status`) when one can be named.
 * The engine fails the run with `reducer_refused:<code>`.
 */
export type ReducerValidationFailure = {
  ok: false;
  code: ReducerValidationCode;
  message: string;
  path?: string;
};

export type ReducerValidationResult = ReducerValidationOk | ReducerValidationFailure;

/**
 * The parts of the request the rules read: what the answer must agree with. A full
 * ReducerRequest fits; the fixture checker passes a minimal one.
 */
export type ValidatedAgainst = Pick<ReducerRequest, 'accept' | 'state_rev'> & {
  run: Pick<ReducerRequest['run'], 'status' | 'open_requests' | 'unanswered_calls'>;
  event: Pick<ReducerRequest['event'], 'kind'>;
};

/** The response without the two parts checked under their own codes (effects, projection). */
const ResponseFrame = ReducerResponse.omit({ effects: true, projection: true });

const EFFECT_KIND_SET: ReadonlySet<string> = new Set(EFFECT_KINDS);
const OPERATION_KIND_SET: ReadonlySet<string> = new Set(OPERATION_EFFECT_KINDS);
const TERMINAL_STATUS_SET: ReadonlySet<string> = new Set(TERMINAL_STATUSES);

/**
 * Checks a reducer's raw answer against `request` and returns the decoded response, or the
 * first violated rule. Never throws. `request` is trusted (core built it). Unknown fields
 * anywhere are ignored (growth rule). A `refused: {code, message}` answer that is otherwise
 * valid is returned ok: turning it into `reducer_refused:<code>` is the engine's job.
 *
 * Rules are checked in this order; the first violation wins:
 *  1. contract_mismatch: `raw` is not an object; `contract` is not in `request.accept`; the answer does not decode apart from effects/projection (state_rev not a non-negative integer, state absent or not JSON, malformed diagnostics/refused).
 *  2. unknown_effect_kind: `effects` (absent or null: none) is not an array of objects, or some effect's kind is outside the 9 (checked over the whole list first); then a known kind with bad fields → contract_mismatch with its path.
 *  3. state_rev_regressed: `state_rev` is neither `request.state_rev` nor `request.state_rev + 1`.
 *  4. effect_id_mismatch: effect i's `effect_id` is not `${state_rev}:${i}`.
 *  5. effects_without_state_change: effects are non-empty while `state_rev == request.state_rev` (a duplicate-event answer, same state_rev and no effects, is valid).
 *  6. multiple_operations: more than one of call_tool, request_model_turn, request_approval, ask_user.
 *  7. terminal_not_exclusive: complete or fail together with an operation effect, or more than one of complete/fail.
 *  8. gap_without_follow_up: a capability_gap not followed later in the list by complete{outcome: "blocked"} or ask_user.
 *  9. effects_after_terminal: `request.run.status` is completed/failed/stopped, or the event is `stopped`, and some effect is not a checkpoint.
 * 10. open_requests_unresolved: on user_input with open requests, the answer starts an operation without a withdraw_request for every open request_id.
 * 11. unanswered_tool_calls: a request_model_turn whose tool_results do not cover every id of `run.unanswered_calls`, or a call_tool whose for_call_id is not among them.
 * 12. projection_invalid: `projection` is present, not null, and not `{items: [{key, title, status (8 values), detail?}], summary?}`.
 * 13. state_too_large: the canonical JSON of `state` exceeds MAX_STATE_BYTES (256 KiB, UTF-8 bytes).
 */
export function validateReducerResponse(request: ValidatedAgainst, raw: unknown): ReducerValidationResult {
  const framed = checkFrame(request, raw);
  if (!framed.ok) return framed;
  const { frame, stateBytes } = framed;
  const parsed = checkEffectKinds(raw as Record<string, unknown>);
  if (!parsed.ok) return parsed;
  const { effects } = parsed;
  const stateRev = frame.state_rev;
  const failure =
    checkRevisions(request, stateRev, effects) ?? checkOperations(effects) ?? checkRunState(request, effects);
  if (failure !== null) return failure;
  // 12. projection_invalid
  const projection = OptionalProjection.safeParse((raw as Record<string, unknown>).projection);
  if (!projection.success) return fromZod('projection_invalid', projection.error, ['projection']);

  // 13. state_too_large
  if (stateBytes > MAX_STATE_BYTES) {
    return fail('state_too_large', overLimitMessage('canonical state', MAX_STATE_BYTES, stateBytes), 'state');
  }

  const response: ReducerResponse = { ...frame, effects, projection: projection.data };
  return { ok: true, response };
}

/** A response's projection: absent, null, or one (built once: a zod schema costs to construct). */
const OptionalProjection = Projection.nullable().optional();

/** Rule 1, contract_mismatch: an object of an accepted contract, a frame that parses, a JSON state. */
function checkFrame(
  request: ValidatedAgainst,
  raw: unknown,
): ReducerValidationFailure | { ok: true; frame: z.infer<typeof ResponseFrame>; stateBytes: number } {
  // 1. contract_mismatch
  if (!isPlainObject(raw)) {
    return fail('contract_mismatch', `response is not a JSON object (got ${describeJsonKind(raw)})`);
  }
  const contract = raw.contract;
  if (typeof contract !== 'string' || !request.accept.includes(contract)) {
    return fail(
      'contract_mismatch',
      `contract ${JSON.stringify(contract)} is not one the request accepted (${request.accept.join(', ')})`,
      'contract',
    );
  }
  const frame = ResponseFrame.safeParse(raw);
  if (!frame.success) return fromZod('contract_mismatch', frame.error);
  if (raw.state === undefined) return fail('contract_mismatch', 'response has no state', 'state');
  let stateBytes: number;
  try {
    stateBytes = canonicalByteLength(frame.data.state);
  } catch (error) {
    if (!(error instanceof CanonicalJsonError)) throw error;
    return fail('contract_mismatch', `state is not a JSON value: ${error.message}`, 'state');
  }

  return { ok: true, frame: frame.data, stateBytes };
}

/** Rule 2, unknown_effect_kind, then the fields of known kinds (contract_mismatch). */
function checkEffectKinds(
  raw: Record<string, unknown>,
): ReducerValidationFailure | { ok: true; effects: Effect[] } {
  // 2. unknown_effect_kind, then the fields of known kinds (contract_mismatch)
  const rawEffects = raw.effects === undefined || raw.effects === null ? [] : raw.effects;
  if (!Array.isArray(rawEffects)) {
    return fail(
      'unknown_effect_kind',
      `effects is not an array (got ${describeJsonKind(rawEffects)})`,
      'effects',
    );
  }
  for (const [i, item] of rawEffects.entries()) {
    if (!isPlainObject(item)) {
      return fail(
        'unknown_effect_kind',
        `effect ${i} is not an object (got ${describeJsonKind(item)})`,
        `effects.${i}`,
      );
    }
    if (typeof item.kind !== 'string' || !EFFECT_KIND_SET.has(item.kind)) {
      return fail(
        'unknown_effect_kind',
        `effect ${i} has kind ${JSON.stringify(item.kind)}, not one of ${EFFECT_KINDS.join(', ')}`,
        `effects.${i}.kind`,
      );
    }
  }
  const effects: Effect[] = [];
  for (const [i, item] of rawEffects.entries()) {
    const parsed = Effect.safeParse(item);
    if (!parsed.success) return fromZod('contract_mismatch', parsed.error, ['effects', i]);
    effects.push(parsed.data);
  }

  return { ok: true, effects };
}

/** Rules 3 to 5: state_rev_regressed, effect_id_mismatch, effects_without_state_change. */
function checkRevisions(
  request: ValidatedAgainst,
  stateRev: number,
  effects: Effect[],
): ReducerValidationFailure | null {
  // 3. state_rev_regressed
  if (stateRev !== request.state_rev && stateRev !== request.state_rev + 1) {
    return fail(
      'state_rev_regressed',
      `state_rev ${stateRev} is neither the request's ${request.state_rev} nor ${request.state_rev + 1}`,
      'state_rev',
    );
  }

  // 4. effect_id_mismatch
  for (const [i, effect] of effects.entries()) {
    const expected = `${stateRev}:${i}`;
    if (effect.effect_id !== expected) {
      return fail(
        'effect_id_mismatch',
        `effect ${i} has effect_id ${JSON.stringify(effect.effect_id)}, expected "${expected}"`,
        `effects.${i}.effect_id`,
      );
    }
  }

  // 5. effects_without_state_change
  if (effects.length > 0 && stateRev === request.state_rev) {
    return fail(
      'effects_without_state_change',
      `${effects.length} effect(s) returned without a state revision bump (state_rev stayed ${stateRev})`,
      'state_rev',
    );
  }

  return null;
}

/** Rules 6 to 8: multiple_operations, terminal_not_exclusive, gap_without_follow_up. */
function checkOperations(effects: Effect[]): ReducerValidationFailure | null {
  // 6. multiple_operations
  const operationIndexes = indexesOf(effects, (effect) => OPERATION_KIND_SET.has(effect.kind));
  const operations = operationIndexes.flatMap((i) => effects.slice(i, i + 1));
  if (operations.length > 1) {
    return fail(
      'multiple_operations',
      `more than one operation effect: ${operations.map((effect) => effect.kind).join(', ')}`,
      `effects.${operationIndexes[1]}`,
    );
  }

  // 7. terminal_not_exclusive
  const terminalIndexes = indexesOf(
    effects,
    (effect) => effect.kind === 'complete' || effect.kind === 'fail',
  );
  const firstTerminal = terminalIndexes[0];
  if (firstTerminal !== undefined && (operations.length > 0 || terminalIndexes.length > 1)) {
    const others =
      operations.length > 0 ? operations.map((effect) => effect.kind) : ['another terminal effect'];
    return fail(
      'terminal_not_exclusive',
      `${effects[firstTerminal]?.kind} is returned together with ${others.join(', ')}`,
      `effects.${firstTerminal}`,
    );
  }

  // 8. gap_without_follow_up
  for (const [i, effect] of effects.entries()) {
    if (effect.kind !== 'capability_gap') continue;
    const followed = effects
      .slice(i + 1)
      .some(
        (later) => later.kind === 'ask_user' || (later.kind === 'complete' && later.outcome === 'blocked'),
      );
    if (!followed) {
      return fail(
        'gap_without_follow_up',
        `capability_gap at effect ${i} is not followed by complete{outcome: "blocked"} or ask_user`,
        `effects.${i}`,
      );
    }
  }

  return null;
}

/** Rules 9 to 11: effects_after_terminal, open_requests_unresolved, unanswered_tool_calls. */
function checkRunState(request: ValidatedAgainst, effects: Effect[]): ReducerValidationFailure | null {
  const operationIndexes = indexesOf(effects, (effect) => OPERATION_KIND_SET.has(effect.kind));
  const operations = operationIndexes.flatMap((i) => effects.slice(i, i + 1));
  // 9. effects_after_terminal
  const ended = TERMINAL_STATUS_SET.has(request.run.status);
  if (ended || request.event.kind === 'stopped') {
    const index = effects.findIndex((effect) => effect.kind !== 'checkpoint');
    if (index >= 0) {
      const why = ended ? `the run is ${request.run.status}` : 'the event is stopped';
      return fail(
        'effects_after_terminal',
        `${effects[index]?.kind} is not allowed because ${why}: only checkpoint effects are`,
        `effects.${index}`,
      );
    }
  }

  // 10. open_requests_unresolved
  const operation = operations[0];
  const operationPath = `effects.${operationIndexes[0]}`;
  if (
    operation !== undefined &&
    request.event.kind === 'user_input' &&
    request.run.open_requests.length > 0
  ) {
    const withdrawn = new Set(
      effects.flatMap((effect) => (effect.kind === 'withdraw_request' ? [effect.request_id] : [])),
    );
    const unresolved = request.run.open_requests
      .map((open) => open.request_id)
      .filter((id) => !withdrawn.has(id));
    if (unresolved.length > 0) {
      return fail(
        'open_requests_unresolved',
        `${operation.kind} starts an operation on user_input while request(s) ${unresolved.join(', ')} stay open: withdraw them all or start no operation`,
        operationPath,
      );
    }
  }

  // 11. unanswered_tool_calls
  if (operation?.kind === 'request_model_turn') {
    const answered = new Set((operation.tool_results ?? []).map((result) => result.call_id));
    const missing = request.run.unanswered_calls.filter((callId) => !answered.has(callId));
    if (missing.length > 0) {
      return fail(
        'unanswered_tool_calls',
        `request_model_turn does not answer tool call(s) ${missing.join(', ')} in tool_results`,
        `${operationPath}.tool_results`,
      );
    }
  }
  if (operation?.kind === 'call_tool' && operation.for_call_id !== undefined) {
    if (!request.run.unanswered_calls.includes(operation.for_call_id)) {
      return fail(
        'unanswered_tool_calls',
        `call_tool.for_call_id ${JSON.stringify(operation.for_call_id)} names no unanswered call (${request.run.unanswered_calls.join(', ') || 'none'})`,
        `${operationPath}.for_call_id`,
      );
    }
  }

  return null;
}

function fail(code: ReducerValidationCode, message: string, path?: string): ReducerValidationFailure {
  return path === undefined ? { ok: false, code, message } : { ok: false, code, message, path };
}

/** A failure from the first zod issue, its path prefixed with `prefix`. */
function fromZod(
  code: ReducerValidationCode,
  error: z.ZodError,
  prefix: readonly (string | number)[] = [],
): ReducerValidationFailure {
  const issue = error.issues[0];
  const segments = [...prefix, ...(issue?.path ?? [])].map((segment) => String(segment));
  const path = segments.join('.');
  const message = `${path || 'response'}: ${issue?.message ?? z.prettifyError(error)}`;
  return fail(code, message, path === '' ? undefined : path);
}

function indexesOf<T>(items: readonly T[], predicate: (item: T) => boolean): number[] {
  return items.flatMap((item, i) => (predicate(item) ? [i] : []));
}
