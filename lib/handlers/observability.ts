/**
 * Logging, metrics and tracing of the Lambda handlers, on AWS Lambda Powertools: a structured
 * JSON Logger (run_id, op_id, epoch as attributes where known), Metrics in the `AgentRuns`
 * namespace (CloudWatch embedded metric format on stdout), and a Tracer that captures the AWS
 * SDK clients (active only inside Lambda with tracing on; a no-op elsewhere). The Powertools
 * classes themselves are made in powertools.ts, which only the Lambda containers import: the
 * Tracer loads the X-Ray SDK, whose automatic mode installs an async hook on every promise of
 * the process (cls-hooked), a cost the local stack and the tests must not pay for tracing they
 * never do.
 *
 * The handler logic depends on the narrow {@link LogSink} and {@link MetricSink} ports, which
 * the Powertools classes satisfy, so the local stack and the tests can plug in their own.
 * docs/architecture.md, "Bird's-eye view".
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';

/** The CloudWatch namespace of every metric the handlers emit. */
export const METRICS_NAMESPACE = 'AgentRuns';

/**
 * Metric names (unit Count). Each counts something observed, never estimated:
 * - Steps: stepRun calls that returned an outcome (one per distinct run in a batch).
 * - StepFailures: stepRun calls that threw (their messages are reported as batch item failures).
 * - Operations: operations executed, summed from `progressed` step outcomes.
 * - CommitConflicts: transactions the store retried after a TransactionConflict or throttling
 *   (RunStore.metrics.transactionRetries, as a delta) plus steps that ended `fenced`.
 * - ReducerRefusals: reducer responses refused by contract validation (the engine's
 *   `reducer response refused` log entry).
 * - MalformedStepMessages: step messages acknowledged because their body is not a StepMessage.
 * - Takeovers, Woken, Expired, Finalized, HandedBack, ChildrenStopped: the sweeper's SweepReport,
 *   summed over its passes.
 */
export const METRIC = {
  steps: 'Steps',
  stepFailures: 'StepFailures',
  operations: 'Operations',
  commitConflicts: 'CommitConflicts',
  reducerRefusals: 'ReducerRefusals',
  malformedStepMessages: 'MalformedStepMessages',
  takeovers: 'Takeovers',
  woken: 'Woken',
  expired: 'Expired',
  finalized: 'Finalized',
  handedBack: 'HandedBack',
  childrenStopped: 'ChildrenStopped',
} as const;
export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** The engine's log message for a refused reducer response (lib/engine/engine.ts). */
export const REDUCER_REFUSED_MESSAGE = 'reducer response refused';

/**
 * Where the handlers log: the four levels of the Powertools Logger, a message plus attribute
 * objects (the handlers pass exactly one).
 */
export interface LogSink {
  debug(message: string, ...attributes: Record<string, unknown>[]): void;
  info(message: string, ...attributes: Record<string, unknown>[]): void;
  warn(message: string, ...attributes: Record<string, unknown>[]): void;
  error(message: string, ...attributes: Record<string, unknown>[]): void;
}

/** Where the handlers count: the subset of the Powertools Metrics class they use. */
export interface MetricSink {
  addMetric(name: string, unit: typeof MetricUnit.Count, value: number): unknown;
  /** Flushes the buffered metrics (EMF on stdout). */
  publishStoredMetrics(): unknown;
  /** Whether anything is buffered (absent: assume so). */
  hasStoredMetrics?(): boolean;
}

/** Publishes at the end of an invocation, unless nothing was counted (Powertools warns on an empty flush). */
export function flush(metrics: MetricSink): void {
  if (metrics.hasStoredMetrics?.() ?? true) metrics.publishStoredMetrics();
}

/** A sink that drops everything (quiet local runs, tests that do not look at logs). */
export const SILENT_LOG: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

/** Adds `value` (if > 0) to a Count metric. */
export function count(metrics: MetricSink, name: MetricName, value = 1): void {
  if (value > 0) metrics.addMetric(name, MetricUnit.Count, value);
}

/**
 * The `log` function handed to createRuntime: writes each engine entry `{level, message, ...}`
 * through the sink at its level (unknown levels log as info), keeping run_id, op_id, epoch and
 * the rest as attributes, and counts what the entries show (ReducerRefusals).
 */
export function engineLog(logger: LogSink, metrics: MetricSink): (entry: Record<string, unknown>) => void {
  return (entry) => {
    const { level, message, ...attributes } = entry;
    const text = typeof message === 'string' ? message : 'engine';
    if (text === REDUCER_REFUSED_MESSAGE) count(metrics, METRIC.reducerRefusals);
    switch (level) {
      case 'debug':
        logger.debug(text, attributes);
        return;
      case 'warn':
        logger.warn(text, attributes);
        return;
      case 'error':
        logger.error(text, attributes);
        return;
      default:
        logger.info(text, attributes);
    }
  };
}

/** `String(err)` plus the stable code and name an error carries, for log attributes. */
export function describeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: String(err) };
  const code = (err as { code?: unknown }).code ?? (err as { reason?: unknown }).reason;
  return {
    error: err.message,
    error_name: err.name,
    ...(typeof code === 'string' ? { error_code: code } : {}),
  };
}

/** A MetricSink that keeps running totals in memory (the local stack, tests). */
export interface CountingMetrics extends MetricSink {
  /** Totals by metric name since creation (published or not). */
  readonly totals: Record<string, number>;
  /** Number of publishStoredMetrics calls (one per handler invocation). */
  readonly flushes: () => number;
}

export function createCountingMetrics(): CountingMetrics {
  const totals: Record<string, number> = {};
  let flushes = 0;
  return {
    totals,
    flushes: () => flushes,
    addMetric(name, _unit, value) {
      totals[name] = (totals[name] ?? 0) + value;
    },
    publishStoredMetrics() {
      flushes += 1;
    },
  };
}
