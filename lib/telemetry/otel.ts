/**
 * OpenTelemetry traces of runs, behind a few narrow hooks the engine calls.
 *
 * Each run is one trace whose id is derived from the run id (runTraceIds), so the spans of every
 * step invocation, in any process, land in the same trace:
 * - `invoke_agent {agent}`: the run span, emitted once by the commit that ended the run, from
 *   the run's creation to its end (noteCommitted);
 * - `agent_runs.step`: one step invocation, a child of the run span (traceStep);
 * - `chat {model}`, `execute_tool {tool}`, `agent_runs.{kind}`: one operation, a child of its
 *   step (traceOperation; the model is learned from the model host's answer, noteModelCall).
 * Attributes: lib/telemetry/span-attributes.ts.
 *
 * On when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and
 * `OTEL_SDK_DISABLED` is not `true`, `OTEL_TRACES_EXPORTER` not `none`); read on the first hook
 * call. Off, it costs one check per hook and the SDK is never imported (otel-sdk.ts is loaded
 * with a dynamic import only when on). `AGENT_RUNS_OTEL_CAPTURE_CONTENT=true` adds payload
 * text (messages, tool arguments and results) to the spans; by default they carry none.
 * Tracing never fails a run: an SDK that cannot load turns tracing off with a process warning.
 */
import { createHash } from 'node:crypto';
import { ENV } from '../config.ts';
import type { CompiledContext, Operation, RunEvent, RunRecord } from '../contracts/index.ts';
import type { OperationResult } from '../core/run-machine.ts';
import type { RunTraceIds, Tracing } from './otel-sdk.ts';
import {
  callInfo,
  modelCall,
  operationEnd,
  operationSpan,
  runSpan,
  stepEnd,
  stepLeased,
  stepSpan,
} from './span-attributes.ts';

/** The variable that opts in to payload text in spans. */
export const CAPTURE_CONTENT_VARIABLE = ENV.AGENT_RUNS_OTEL_CAPTURE_CONTENT;

/** The service.name of our spans unless OTEL_SERVICE_NAME says otherwise. */
export const DEFAULT_SERVICE_NAME = 'agent-runs';

/** Tracing configuration read from the environment (tracingConfigFromEnv). */
export interface TracingConfig {
  /** The traces endpoint the exporter posts to (for the banner and the docs; the exporter reads the variables itself). */
  endpoint: string;
  captureContent: boolean;
  serviceName: string;
}

/** A tracing variable with a value we do not accept. Code `tracing_config_invalid`. */
export class TracingConfigError extends Error {
  override readonly name = 'TracingConfigError';
  readonly code = 'tracing_config_invalid';
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(message);
    this.variable = variable;
  }
}

/**
 * The tracing configuration of `env`, or null when tracing is off. Throws TracingConfigError
 * when AGENT_RUNS_OTEL_CAPTURE_CONTENT is neither `true` nor `false` (createRuntime calls this
 * at start, so a wrong value fails the container, not a run).
 */
export function tracingConfigFromEnv(env: NodeJS.ProcessEnv): TracingConfig | null {
  const value = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const capture = value(CAPTURE_CONTENT_VARIABLE)?.toLowerCase();
  if (capture !== undefined && capture !== 'true' && capture !== 'false')
    throw new TracingConfigError(
      CAPTURE_CONTENT_VARIABLE,
      `${CAPTURE_CONTENT_VARIABLE} must be true or false`,
    );
  if (value(ENV.OTEL_SDK_DISABLED)?.toLowerCase() === 'true') return null;
  if (value(ENV.OTEL_TRACES_EXPORTER)?.toLowerCase() === 'none') return null;
  const traces = value(ENV.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const base = value(ENV.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (traces === undefined && base === undefined) return null;
  return {
    endpoint: traces ?? `${base?.replace(/\/+$/, '')}/v1/traces`,
    captureContent: capture === 'true',
    serviceName: value(ENV.OTEL_SERVICE_NAME) ?? DEFAULT_SERVICE_NAME,
  };
}

/**
 * The trace id (32 hex) of run `runId` and the span id (16 hex) of its run span: the first 24
 * bytes of SHA-256(`agent_runs.run:` + run id). Any process derives the same ids.
 */
export function runTraceIds(runId: string): RunTraceIds {
  const hex = createHash('sha256').update(`agent_runs.run:${runId}`).digest('hex');
  return { traceId: hex.slice(0, 32), spanId: hex.slice(32, 48) };
}

interface On {
  tracing: Tracing;
  capture: boolean;
}

type State =
  | { kind: 'unread' }
  | { kind: 'off' }
  | { kind: 'loading'; ready: Promise<On | null> }
  | ({ kind: 'on' } & On);

let state: State = { kind: 'unread' };

/** The tracing in use: null when off, a promise while the SDK loads. */
function current(): On | Promise<On | null> | null {
  if (state.kind === 'unread') {
    const config = tracingConfigFromEnv(process.env);
    state = config === null ? { kind: 'off' } : { kind: 'loading', ready: load(config) };
  }
  switch (state.kind) {
    case 'on':
      return state;
    case 'loading':
      return state.ready;
    default:
      return null;
  }
}

async function load(config: TracingConfig): Promise<On | null> {
  try {
    const sdk = await import('./otel-sdk.ts');
    const on: On = { tracing: sdk.createTracing(config.serviceName), capture: config.captureContent };
    state = { kind: 'on', ...on };
    return on;
  } catch (err) {
    process.emitWarning(`OpenTelemetry tracing is off: the SDK did not load (${String(err)})`, {
      code: 'tracing_unavailable',
    });
    state = { kind: 'off' };
    return null;
  }
}

/** Runs `use` with the tracing in use (awaiting the SDK's load), or `fn` alone when off. */
function traced<T>(fn: () => Promise<T>, use: (on: On) => Promise<T>): Promise<T> {
  const on = current();
  if (on === null) return fn();
  if (!(on instanceof Promise)) return use(on);
  return on.then((loaded) => (loaded === null ? fn() : use(loaded)));
}

/** Calls `use` with the tracing in use, now or once the SDK has loaded; not at all when off. */
function whenOn(use: (on: On) => void): void {
  const on = current();
  if (on === null) return;
  if (on instanceof Promise) void on.then((loaded) => loaded !== null && use(loaded));
  else use(on);
}

/**
 * Runs one step invocation of run `runId` in an `agent_runs.step` span (a child of the run
 * span); the span ends with the step's outcome. Returns what `fn` returns; rethrows what it throws.
 */
export function traceStep<T extends { kind: string; status?: string; operations?: number }>(
  runId: string,
  fn: () => Promise<T>,
): Promise<T> {
  return traced(fn, (on) => on.tracing.within(runTraceIds(runId), false, stepSpan(runId), fn, stepEnd));
}

/** Notes on the active step span the lease's epoch and the seq the step starts from. */
export function noteStepLeased(record: Pick<RunRecord, 'epoch' | 'last_seq'>): void {
  if (state.kind === 'on') state.tracing.note(stepLeased(record));
}

/**
 * Runs the execution of operation `op` of `record` in its span (a child of the active step
 * span, else of the run span): `chat`, `execute_tool {tool}` or `agent_runs.{kind}`, ended with
 * the result's outcome, usage and error type.
 */
export function traceOperation(
  record: RunRecord,
  op: Operation,
  fn: () => Promise<OperationResult>,
): Promise<OperationResult> {
  return traced(fn, (on) =>
    on.tracing.within(runTraceIds(record.run_id), true, operationSpan(record, op, on.capture), fn, (r) =>
      operationEnd(r, on.capture),
    ),
  );
}

/**
 * Notes on the active model-turn span the model and provider that answered (`chat {model}`):
 * `out` is the model host's answer, whose growth-rule `call` (ModelTurnResult.call) names them.
 */
export function noteModelCall(out: object, context: CompiledContext): void {
  if (state.kind !== 'on') return;
  const { name, attributes } = modelCall(callInfo(out), context, state.capture);
  state.tracing.note(attributes, name);
}

const ENDING_EVENTS: ReadonlySet<string> = new Set(['run_completed', 'run_failed', 'stopped']);

/**
 * After a commit of `record` with `events`: when the commit ended the run, emits its run span
 * (once: only the ending commit carries an ending event).
 */
export function noteCommitted(record: RunRecord, events: readonly RunEvent[]): void {
  if (state.kind === 'off' || !events.some((e) => ENDING_EVENTS.has(e.kind))) return;
  whenOn((on) => {
    const plan = runSpan(record, on.capture);
    if (plan === null) return;
    const parent = plan.parentRunId !== undefined ? runTraceIds(plan.parentRunId) : null;
    on.tracing.endRun(runTraceIds(record.run_id), plan, parent);
  });
}

/**
 * Exports the spans ended so far (before a Lambda invocation returns; it waits at most the
 * exporter's timeout, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT). A no-op when off. Never throws: an
 * export that failed is a process warning (`tracing_export_failed`), not a failed invocation.
 */
export async function flushTraces(): Promise<void> {
  const on = state.kind === 'on' ? state : state.kind === 'loading' ? await state.ready : null;
  try {
    await on?.tracing.flush();
  } catch (err) {
    process.emitWarning(`spans not exported: ${String(err)}`, { code: 'tracing_export_failed' });
  }
}

/** Flushes and stops tracing; the next hook call reads the environment again (tests). */
export async function shutdownTraces(): Promise<void> {
  const on = state.kind === 'on' ? state : state.kind === 'loading' ? await state.ready : null;
  state = { kind: 'unread' };
  await on?.tracing.shutdown();
}
