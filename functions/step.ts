/**
 * Lambda: SQS step queue → engine.stepRun per run, partial batch failures reported.
 * Logic in lib/handlers/step-batch.ts; runtime created once per container. docs/architecture.md,
 * "The step".
 */
import { lambdaContainer } from '../lib/handlers/container.ts';
import { createStepBatchHandler } from '../lib/handlers/step-batch.ts';

const container = lambdaContainer('agent-runs-step');

export const handler = createStepBatchHandler(() => {
  const { runtime, logger, metrics } = container();
  return { engine: runtime.engine, logger, metrics, storeMetrics: runtime.store.metrics };
});
