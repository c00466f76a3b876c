/**
 * Lambda: the table's DynamoDB stream (run record changes only; the event source mapping
 * filters on the sort key) → lib/handlers/stream-batch.ts (wired by lib/handlers/live-config.ts):
 * a lifecycle notification per status change to EventBridge, and the live fan-out to the run's
 * WebSocket subscribers. Partial batch failures are reported, so Lambda retries from the first
 * failed record. docs/architecture.md, "The seams of a step" (notifications go through an outbox:
 * no writer knows who listens).
 */
import { lambdaContainer } from '../lib/handlers/container.ts';
import { streamBatchFromEnv } from '../lib/handlers/live-config.ts';
import type { StreamBatchHandler } from '../lib/handlers/stream-batch.ts';

const container = lambdaContainer('agent-runs-stream');
let stream: StreamBatchHandler | undefined;

export const handler: StreamBatchHandler = (event, context) => {
  stream ??= streamBatchFromEnv(container(), process.env);
  return stream(event, context);
};
