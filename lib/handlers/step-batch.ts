/**
 * The logic behind `functions/step.ts`: one SQS batch of step messages `{run_id}` → one
 * `engine.stepRun` per distinct run, with partial batch failures reported through
 * `@aws-lambda-powertools/batch` (BatchProcessor + processPartialResponse, EventType.SQS).
 * A message is acknowledged only when its outcome is committed. docs/architecture.md, "The step",
 * "Conventions".
 *
 * Per record:
 * - the body is parsed with the StepMessage zod schema. A body that does not parse can never
 *   succeed, so it is ACKNOWLEDGED (not redelivered five times into the DLQ) and logged at
 *   error level with `code: 'malformed_step_message'` and counted (MalformedStepMessages);
 * - stepRun returned an outcome (progressed, nothing_to_do, busy, fenced, not_found): the
 *   engine committed whatever it did (or had nothing to commit), so the record is acknowledged;
 * - stepRun threw (DynamoDB/S3 unreachable, an exhausted conflict, a bug): nothing about the
 *   outcome is known to be committed, so the record is a batch item failure and SQS redelivers
 *   it after the visibility timeout (after 5 receives the redrive policy moves it to the DLQ);
 * - two records for the same run in one batch: the run is stepped once and both records share
 *   that step's fate (both acknowledged, or both reported failed).
 * When every record fails, processPartialResponse throws FullBatchFailureError (Powertools'
 * default), so the invocation counts as a Lambda error and the whole batch is retried.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { z } from 'zod';
import type { Engine, StepOutcome } from '../engine/engine.ts';
import type { StoreMetrics } from '../engine/ports.ts';
import { StepMessage } from '../queue/step-queue.ts';
import { flushTraces } from '../telemetry/otel.ts';
import { count, describeError, flush, type LogSink, METRIC, type MetricSink } from './observability.ts';

/** What the step handler needs; built once per container (functions/step.ts) or per local stack. */
export interface StepBatchDeps {
  engine: Pick<Engine, 'stepRun'>;
  logger: LogSink;
  metrics: MetricSink;
  /** The store's request counters; their transactionRetries feed CommitConflicts. */
  storeMetrics?: Pick<StoreMetrics, 'transactionRetries'>;
}

/** An SQS batch handler with partial batch responses (ReportBatchItemFailures). */
export type StepBatchHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/** The stable code logged for a record whose body is not a StepMessage. */
export const MALFORMED_STEP_MESSAGE = 'malformed_step_message';

/** Parses an SQS body as a StepMessage: `{ok, message}` or `{ok: false, reason}`. Never throws. */
export function parseStepMessage(
  body: string,
): { ok: true; message: z.infer<typeof StepMessage> } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (err) {
    return { ok: false, reason: `body is not JSON: ${String(err)}` };
  }
  const parsed = StepMessage.safeParse(json);
  if (!parsed.success) return { ok: false, reason: parsed.error.issues.map((i) => i.message).join('; ') };
  return { ok: true, message: parsed.data };
}

/**
 * Creates the batch handler. `deps` may be a function, called on each invocation, so that the
 * runtime is created lazily on the first one and reused by the container afterwards.
 */
export function createStepBatchHandler(deps: StepBatchDeps | (() => StepBatchDeps)): StepBatchHandler {
  const resolve = typeof deps === 'function' ? deps : () => deps;
  let retriesSeen: number | undefined;

  return async (event, context) => {
    const { engine, logger, metrics, storeMetrics } = resolve();
    retriesSeen ??= storeMetrics?.transactionRetries ?? 0;
    // The processor keeps per-batch state: one per invocation, so concurrent batches never mix.
    const processor = new BatchProcessor(EventType.SQS);
    const steps = new Map<string, Promise<StepOutcome>>();

    const stepOnce = async (runId: string, messageId: string): Promise<StepOutcome> => {
      const started = performance.now();
      try {
        const outcome = await engine.stepRun(runId);
        count(metrics, METRIC.steps);
        if (outcome.kind === 'progressed') count(metrics, METRIC.operations, outcome.operations);
        if (outcome.kind === 'fenced') count(metrics, METRIC.commitConflicts);
        logger.info('step', {
          run_id: runId,
          message_id: messageId,
          outcome: outcome.kind,
          ...('status' in outcome ? { status: outcome.status } : {}),
          ...(outcome.kind === 'progressed' ? { operations: outcome.operations } : {}),
          duration_ms: Math.round(performance.now() - started),
        });
        return outcome;
      } catch (err) {
        count(metrics, METRIC.stepFailures);
        logger.error('step failed; the message stays on the queue and is redelivered', {
          run_id: runId,
          message_id: messageId,
          ...describeError(err),
          duration_ms: Math.round(performance.now() - started),
        });
        throw err;
      }
    };

    const recordHandler = async (record: SQSRecord): Promise<void> => {
      const parsed = parseStepMessage(record.body);
      if (!parsed.ok) {
        count(metrics, METRIC.malformedStepMessages);
        logger.error('malformed step message acknowledged: it can never succeed', {
          code: MALFORMED_STEP_MESSAGE,
          message_id: record.messageId,
          reason: parsed.reason,
          body_preview: record.body.slice(0, 200),
        });
        return;
      }
      const runId = parsed.message.run_id;
      let step = steps.get(runId);
      if (step === undefined) {
        step = stepOnce(runId, record.messageId);
        steps.set(runId, step);
      } else {
        logger.debug('duplicate step message in the batch: sharing the step', {
          run_id: runId,
          message_id: record.messageId,
        });
      }
      await step;
    };

    try {
      return await processPartialResponse(event, recordHandler, processor, {
        ...(context !== undefined ? { context } : {}),
      });
    } finally {
      if (storeMetrics !== undefined) {
        const now = storeMetrics.transactionRetries;
        count(metrics, METRIC.commitConflicts, now - retriesSeen);
        retriesSeen = now;
      }
      flush(metrics);
      await flushTraces(); // the spans of this invocation, before Lambda freezes the container
    }
  };
}
