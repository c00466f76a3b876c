/**
 * The OpenTelemetry SDK side of tracing, loaded only when an OTLP endpoint is configured
 * (lib/telemetry/otel.ts imports this file lazily): a NodeTracerProvider with a batch span
 * processor and the OTLP/HTTP (JSON) trace exporter, which reads the standard OTEL_EXPORTER_OTLP_*
 * variables itself (endpoint, headers, timeout). Registered globally, so that spans a tool's or a
 * model's own code starts nest under our operation spans.
 */
import {
  type Attributes,
  type Context,
  context,
  type Link,
  type Span,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type IdGenerator,
  NodeTracerProvider,
  RandomIdGenerator,
} from '@opentelemetry/sdk-trace-node';
import { ENV } from '../config.ts';
import type { RunSpanPlan, SpanEnd, SpanPlan } from './span-attributes.ts';

/** A run's trace: its trace id and the span id of its run span (both derived from the run id). */
export interface RunTraceIds {
  traceId: string;
  spanId: string;
}

/** What otel.ts asks of the SDK. */
export interface Tracing {
  /**
   * Runs `fn` inside a span of the run of `run`: a child of the active span when `nested` and
   * that span is in the run's trace (an operation in its step), else of the run span. `end` maps
   * fn's value to the span's last attributes. A throw from fn is recorded as `error.type` (its
   * name, never its message) and rethrown.
   */
  within<T>(
    run: RunTraceIds,
    nested: boolean,
    plan: SpanPlan,
    fn: () => Promise<T>,
    end: (value: T) => SpanEnd,
  ): Promise<T>;
  /** Adds attributes (and a new name) to the active span, if any. */
  note(attributes: Attributes, name?: string): void;
  /** Emits a run's span with its own derived ids, from `plan.startMs` to `plan.endMs`. */
  endRun(ids: RunTraceIds, plan: RunSpanPlan, parent: RunTraceIds | null): void;
  /** Exports every span ended so far (Lambda: before the invocation returns). */
  flush(): Promise<void>;
  /** Flushes and stops the provider. */
  shutdown(): Promise<void>;
}

/** Random ids, except for the one span whose ids are forced (the run span: derived from the run id). */
class RunSpanIds implements IdGenerator {
  readonly random = new RandomIdGenerator();
  forced: RunTraceIds | undefined;
  generateTraceId(): string {
    return this.forced?.traceId ?? this.random.generateTraceId();
  }
  generateSpanId(): string {
    return this.forced?.spanId ?? this.random.generateSpanId();
  }
}

/** A remote, sampled parent: the run span, which may be emitted by another invocation. */
function runParent(ids: RunTraceIds): Context {
  return trace.setSpanContext(context.active(), {
    traceId: ids.traceId,
    spanId: ids.spanId,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

function finish(span: Span, end: SpanEnd): void {
  span.setAttributes(end.attributes);
  if (end.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: end.error });
  span.end();
}

/** In a Lambda function: the resource attributes naming it (faas.name, cloud.region). */
function lambdaResource(env: NodeJS.ProcessEnv): Attributes {
  const name = env[ENV.AWS_LAMBDA_FUNCTION_NAME];
  if (name === undefined) return {};
  return {
    'cloud.provider': 'aws',
    'cloud.platform': 'aws_lambda',
    'faas.name': name,
    ...(env[ENV.AWS_REGION] !== undefined ? { 'cloud.region': env[ENV.AWS_REGION] } : {}),
  };
}

/**
 * Starts the provider. `serviceName`: the resource's service.name (OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES, read by the SDK's env detector, take precedence).
 */
export function createTracing(serviceName: string): Tracing {
  const ids = new RunSpanIds();
  const resource = resourceFromAttributes({
    'service.name': serviceName,
    ...lambdaResource(process.env),
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  const tracer = provider.getTracer('agent-runs');

  return {
    async within(run, nested, plan, fn, end) {
      const active = trace.getSpan(context.active())?.spanContext();
      const ctx = nested && active?.traceId === run.traceId ? context.active() : runParent(run);
      const span = tracer.startSpan(plan.name, { attributes: plan.attributes }, ctx);
      let value: Awaited<ReturnType<typeof fn>>;
      try {
        value = await context.with(trace.setSpan(ctx, span), fn);
      } catch (err) {
        const type = err instanceof Error ? err.name : 'unknown';
        finish(span, { attributes: { 'error.type': type }, error: type });
        throw err;
      }
      finish(span, end(value));
      return value;
    },
    note(attributes, name) {
      const span = trace.getActiveSpan();
      if (span === undefined) return;
      span.setAttributes(attributes);
      if (name !== undefined) span.updateName(name);
    },
    endRun(runIds, plan, parent) {
      const links: Link[] =
        parent === null ? [] : [{ context: { ...parent, traceFlags: TraceFlags.SAMPLED } }];
      ids.forced = runIds;
      let span: Span;
      try {
        span = tracer.startSpan(plan.name, {
          root: true,
          attributes: plan.attributes,
          links,
          startTime: new Date(plan.startMs),
        });
      } finally {
        ids.forced = undefined;
      }
      if (plan.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: plan.error });
      span.end(new Date(plan.endMs));
    },
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}
