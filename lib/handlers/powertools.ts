/**
 * The Powertools Logger, Metrics and Tracer of a Lambda container. Apart from observability.ts
 * (the ports and helpers every handler and the local stack use) because importing the Tracer
 * loads the AWS X-Ray SDK, which in its automatic mode installs an async_hooks hook (cls-hooked)
 * that runs on every promise the process creates: only the Lambda containers
 * (lib/handlers/container.ts) import this module. docs/architecture.md, "Bird's-eye view".
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { AwsClients } from '../aws-clients.ts';
import { METRICS_NAMESPACE } from './observability.ts';

/** The logger, metrics and tracer of one Lambda container. */
export interface Observability {
  logger: Logger;
  metrics: Metrics;
  tracer: Tracer;
}

/**
 * Creates the Powertools utilities for one handler. The log level comes from
 * POWERTOOLS_LOG_LEVEL (default INFO); metrics can be turned off with
 * POWERTOOLS_METRICS_DISABLED=true; tracing is on only inside Lambda (POWERTOOLS_TRACE_ENABLED).
 */
export function createObservability(serviceName: string): Observability {
  return {
    logger: new Logger({ serviceName }),
    metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName }),
    tracer: new Tracer({ serviceName }),
  };
}

/**
 * Captures the SDK clients of a runtime in X-Ray subsegments (a no-op when tracing is off): the
 * lazy ones (S3, Lambda) when they are built.
 */
export function traceClients(tracer: Tracer, clients: AwsClients): void {
  tracer.captureAWSv3Client(clients.dynamo);
  tracer.captureAWSv3Client(clients.sqs);
  clients.s3.onBuilt((c) => tracer.captureAWSv3Client(c));
  clients.lambda.onBuilt((c) => tracer.captureAWSv3Client(c));
}
