/**
 * Parsing a run record by the closed schema (run.ts RunRecord), status first: the union tries
 * its shapes in order and parses the whole record against each shape whose status differs
 * before it reaches the right one; this goes to the shapes of the value's `status` first, and
 * only a value none of them accepts is parsed by the union (so a refusal reads exactly as the
 * union's). The run machine seals every record it builds, several times per step.
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

/** The shapes a record of each status may take, in RunRecord's order. */
const SHAPES_BY_STATUS: Readonly<Record<RunStatus, readonly z.ZodType<RunRecord>[]>> = {
  queued: [QueuedRun],
  running: [RunningWithOperation, RunningBetweenOperations],
  waiting: [WaitingRun],
  paused: [PausedRun],
  cancelling: [CancellingRun],
  completed: [CompletedRun],
  failed: [FailedRun],
  stopped: [StoppedRun],
};

/** The records safeParseRunRecord produced (its own parsed copies, never the value it was given). */
const ACCEPTED = new WeakSet<object>();

/** `RunRecord.safeParse`, with the same answer, parsing against the value's own status first. */
export function safeParseRunRecord(value: unknown): ReturnType<typeof RunRecord.safeParse> {
  const status = typeof value === 'object' && value !== null ? (value as { status?: unknown }).status : null;
  const shapes = typeof status === 'string' ? SHAPES_BY_STATUS[status as RunStatus] : undefined;
  for (const shape of shapes ?? []) {
    const parsed = shape.safeParse(value);
    if (parsed.success) {
      ACCEPTED.add(parsed.data);
      return parsed;
    }
  }
  return RunRecord.safeParse(value);
}

/**
 * Whether `record` is an object safeParseRunRecord itself produced: a record the closed schema
 * accepted, as it left the parse. Records are never mutated in place (every transition builds a
 * new object), so the commit path need not parse such a record again.
 */
export function isAcceptedRunRecord(record: unknown): boolean {
  return typeof record === 'object' && record !== null && ACCEPTED.has(record);
}
