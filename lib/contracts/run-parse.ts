/**
 * Parsing a run record by the closed schema (run.ts RunRecord) at the cost of what changed. The
 * run machine seals every record it builds, several times per step, and a record is about forty
 * fields of which a transition changes a handful: the rest are the very objects an earlier parse
 * produced. A field value that is an object a parse produced under a field schema is taken as
 * that schema's output again (records and their parts are never changed in place: every
 * transition builds new objects), so only the other fields are parsed, by zod, with zod's own
 * rules for absent keys and defaults. The answer is the one `RunRecord.safeParse` gives, the
 * same values in the same key order; a refusal is always the union's own. Under vitest
 * (`AGENT_RUNS_SEAL_CHECK=1`) every answer is compared with a whole parse.
 * docs/contracts/run-lifecycle.md, "Lifecycle"; docs/architecture.md, "Invariants".
 */
import type { z } from 'zod';
import {
  CancellingRun,
  CompletedRun,
  FailedRun,
  PausedRun,
  QueuedRun,
  RunningBetweenOperations,
  RunningWithOperation,
  RunRecord,
  type RunStatus,
  StoppedRun,
  WaitingRun,
} from './run.ts';

type Shape = z.ZodObject<Record<string, z.ZodType>>;
type Parsed = ReturnType<typeof RunRecord.safeParse>;

/** The shapes a record of each status may take, in RunRecord's order. */
const SHAPES_BY_STATUS: Readonly<Record<RunStatus, readonly Shape[]>> = {
  queued: [QueuedRun],
  running: [RunningWithOperation, RunningBetweenOperations],
  waiting: [WaitingRun],
  paused: [PausedRun],
  cancelling: [CancellingRun],
  completed: [CompletedRun],
  failed: [FailedRun],
  stopped: [StoppedRun],
} as unknown as Record<RunStatus, readonly Shape[]>;

/** The records safeParseRunRecord produced (its own parsed copies, never the value it was given). */
const ACCEPTED = new WeakSet<object>();

/** Each object a record parse produced as a field's value, with the field schema that produced it. */
const PRODUCED_BY = new WeakMap<object, z.ZodType>();

/** Per shape, its sub-schemas of the fields to parse (a `pick`), by the fields' names joined. */
const PICKS = new WeakMap<Shape, Map<string, Shape>>();
/** Distinct field sets kept per shape: transitions change a few dozen sets; past this, none is kept. */
const MAX_PICKS_PER_SHAPE = 256;

/**
 * Per run id, the newest record this module accepted and the shape that accepted it: the next
 * record of a run is built from it, so a field holding the very value it held there (a string, a
 * number, or the same object) under the same field schema is that schema's output again.
 */
const LAST_BY_RUN = new Map<string, { shape: Shape; out: Record<string, unknown> }>();
/** Runs remembered at once, newest kept (a worker steps a few runs at a time). */
const MAX_RUNS_REMEMBERED = 256;

// Read through globalThis: the installable client bundles this module for browsers, which have no process.
const SEAL_CHECK = globalThis.process?.env?.AGENT_RUNS_SEAL_CHECK === '1';

function pickOf(shape: Shape, keys: string[]): Shape {
  let picks = PICKS.get(shape);
  if (picks === undefined) {
    picks = new Map();
    PICKS.set(shape, picks);
  }
  const name = keys.join(',');
  let pick = picks.get(name);
  if (pick === undefined) {
    const mask: Record<string, true> = Object.fromEntries(keys.map((k) => [k, true] as const));
    pick = shape.pick(mask as never) as unknown as Shape;
    if (picks.size < MAX_PICKS_PER_SHAPE) picks.set(name, pick);
  }
  return pick;
}

/**
 * `value` parsed by `shape` parsing only the fields no earlier parse produced, or null when
 * the shape refuses it. The output has the shape's keys in its order, as zod's own.
 */
function parseChanged(shape: Shape, value: Record<string, unknown>): Record<string, unknown> | null {
  const fields = shape.shape;
  const keys = Object.keys(fields);
  const last = typeof value.run_id === 'string' ? LAST_BY_RUN.get(value.run_id) : undefined;
  const changed = keys.filter((k) => {
    const v = value[k];
    if (
      last !== undefined &&
      last.shape.shape[k] === fields[k] &&
      k in value &&
      k in last.out &&
      last.out[k] === v
    )
      return false;
    return typeof v !== 'object' || v === null || PRODUCED_BY.get(v) !== fields[k];
  });
  const parsed = pickOf(shape, changed).safeParse(value);
  if (!parsed.success) return null;
  const fresh = parsed.data as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    if (k in fresh) out[k] = fresh[k];
    else if (!changed.includes(k)) out[k] = value[k];
  }
  return out;
}

/** Keeps `out` as its run's newest accepted record, forgetting the longest-unseen run past the bound. */
function remember(shape: Shape, out: Record<string, unknown>): void {
  const runId = out.run_id as string;
  LAST_BY_RUN.delete(runId);
  LAST_BY_RUN.set(runId, { shape, out });
  if (LAST_BY_RUN.size > MAX_RUNS_REMEMBERED) LAST_BY_RUN.delete(LAST_BY_RUN.keys().next().value as string);
}

/** Notes the record's object fields as produced by the shape's field schemas. */
function noteProduced(shape: Shape, record: Record<string, unknown>): void {
  const fields = shape.shape;
  for (const k in record) {
    const v = record[k];
    const field = fields[k];
    if (typeof v === 'object' && v !== null && field !== undefined) PRODUCED_BY.set(v, field);
  }
}

/**
 * `RunRecord.safeParse`, with the same answer, at the cost of the fields that changed: the
 * shapes of the value's `status` are tried in the union's order, each parsing only the fields
 * that are not an earlier parse's output; a value none of them accepts is parsed by the union
 * itself, so that a refusal reads exactly as the union's.
 */
export function safeParseRunRecord(value: unknown): Parsed {
  const status = typeof value === 'object' && value !== null ? (value as { status?: unknown }).status : null;
  const shapes = typeof status === 'string' ? SHAPES_BY_STATUS[status as RunStatus] : undefined;
  for (const shape of shapes ?? []) {
    const out = parseChanged(shape, value as Record<string, unknown>);
    if (out === null) continue;
    if (SEAL_CHECK) checkAgainstWhole(value, out);
    noteProduced(shape, out);
    remember(shape, out);
    ACCEPTED.add(out);
    return { success: true, data: out as RunRecord } as Parsed;
  }
  return RunRecord.safeParse(value);
}

/** The shadow check: the answer is the whole union parse's, value for value and key for key. */
function checkAgainstWhole(value: unknown, out: Record<string, unknown>): void {
  const whole = RunRecord.safeParse(value);
  if (!whole.success || !sameInOrder(whole.data, out))
    throw new Error(`safeParseRunRecord differs from RunRecord.safeParse for ${JSON.stringify(value)}`);
}

/** Whether two parsed JSON values are equal, with every object's keys in the same order. */
function sameInOrder(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  return keysA.every((key, i) => key === keysB[i] && sameInOrder(left[key], right[key]));
}

/**
 * Whether `record` is an object safeParseRunRecord itself produced: a record the closed schema
 * accepted, as it left the parse. Records are never mutated in place (every transition builds a
 * new object), so the commit path need not parse such a record again.
 */
export function isAcceptedRunRecord(record: unknown): boolean {
  return typeof record === 'object' && record !== null && ACCEPTED.has(record);
}
