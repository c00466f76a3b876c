/**
 * The parts the local stack (stack.ts) is assembled from: the runtime over the local resources,
 * the control handler (the same HTTP app as functions/control.ts), the step queue's poller (as the
 * SQS event source mapping), the sweeper's timer (as the EventBridge schedule) and the console
 * site. Each is built here from the options it needs; stack.ts starts and stops them in order.
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import type { APIGatewayProxyResultV2 } from 'aws-lambda';
import { handle } from 'hono/aws-lambda';
import type { CountingMetrics, LogSink } from '../handlers/observability.ts';
import { createStepBatchHandler } from '../handlers/step-batch.ts';
import { createSweeperHandler } from '../handlers/sweeper.ts';
import type { ConsoleSite } from '../http/console.ts';
import type { ConsoleConfigInput } from '../http/console-config.ts';
import { createHttpApp, jwtClaimsAuth, keepEmptyLastEventId, maxOpenWaitsFromEnv } from '../http/index.ts';
import { builtInFunctions, createRuntime, type Runtime, type RuntimeConfig } from '../runtime.ts';
import { createSandboxReducerHost, type SandboxLimits, type SandboxReducerHost } from '../sandbox/index.ts';
import { storedFunctionRegistryFor } from '../sandbox/stored-registry.ts';
import type { ApiHandler } from './gateway.ts';
import { type Poller, startPoller } from './poller.ts';
import type { LocalResources } from './resources.ts';

/** What the runtime takes from the stack's options. */
export type RuntimeOptions = Partial<
  Pick<
    RuntimeConfig,
    | 'registerTools'
    | 'modelFunctions'
    | 'toolPolicy'
    | 'faults'
    | 'wrapQueue'
    | 'leaseTtlMs'
    | 'clockSkewMs'
    | 'heartbeatMs'
    | 'wakeGraceMs'
    | 'workerSlot'
  >
> & { sandboxLimits?: Partial<SandboxLimits> };

/** The stack options the console and the poller read. */
export interface LocalStackParts {
  consoleAuth?: ConsoleConfigInput['auth'];
  heartbeatMs?: number;
  pollerConcurrency?: number;
  pollIntervalMs?: number;
}

/** The runtime over the local resources, with artifacts stored in the table and bucket as in AWS. */
export async function runtimeOf(
  config: Pick<RuntimeConfig, 'endpoints' | 'tableName' | 'queueUrl' | 'bucketName'>,
  options: RuntimeOptions,
  log: (entry: Record<string, unknown>) => void,
): Promise<{ runtime: Runtime; reducers: SandboxReducerHost }> {
  const functions = storedFunctionRegistryFor(config, builtInFunctions());
  const reducers = createSandboxReducerHost({
    registry: functions,
    ...(options.sandboxLimits !== undefined ? { limits: options.sandboxLimits } : {}),
  });
  // Throws what registerTools throws (e.g. ToolRegistrationError): the caller's own error.
  let runtime: Runtime;
  try {
    runtime = createRuntime({
      ...config,
      functions,
      reducers,
      log,
      ...pick(options, [
        'registerTools',
        'modelFunctions',
        'toolPolicy',
        'faults',
        'wrapQueue',
        'leaseTtlMs',
        'clockSkewMs',
        'heartbeatMs',
        'wakeGraceMs',
        'workerSlot',
      ]),
    });
  } catch (err) {
    await reducers.close();
    throw err;
  }
  return { runtime, reducers };
}

/** The console served at /console (undefined: not served), signing in as `options.consoleAuth` says and following runs over `liveUrl` (the live WebSocket). */
export function consoleSiteOf(
  consoleDir: string | false,
  options: Pick<LocalStackParts, 'consoleAuth' | 'heartbeatMs'>,
  sweepIntervalMs: number,
  liveUrl?: string,
): ConsoleSite | undefined {
  if (consoleDir === false) return undefined;
  return {
    assetsDir: consoleDir,
    config: {
      auth: options.consoleAuth ?? {
        kind: 'token',
        hint: 'npm start prints a console link that signs you in.',
      },
      ...(sweepIntervalMs > 0 ? { sweep_interval_ms: sweepIntervalMs } : {}),
      ...(options.heartbeatMs !== undefined ? { heartbeat_ms: options.heartbeatMs } : {}),
      ...(liveUrl !== undefined ? { live_url: liveUrl } : {}),
      environment: 'local',
    },
  };
}

/** The step queue's poller, as the SQS event source mapping invokes the step function (none when pollerConcurrency is 0). */
export function stepPollerOf(
  runtime: Runtime,
  resources: LocalResources,
  region: string,
  options: Pick<LocalStackParts, 'pollerConcurrency' | 'pollIntervalMs'>,
  run: { visibility: number; logger: LogSink; metrics: CountingMetrics },
): Poller {
  if (options.pollerConcurrency === 0) {
    return { stats: { batches: 0, received: 0, deleted: 0, failed: 0, errors: 0 }, stop: async () => {} };
  }
  return startPoller({
    sqs: runtime.clients.sqs,
    queueUrl: resources.queueUrl,
    queueArn: resources.queueArn,
    region,
    handler: createStepBatchHandler({
      engine: runtime.engine,
      logger: run.logger,
      metrics: run.metrics,
      storeMetrics: runtime.store.metrics,
    }),
    visibilityTimeoutSeconds: run.visibility,
    waitTimeSeconds: Math.min(20, Math.max(1, Math.ceil((options.pollIntervalMs ?? 1_000) / 1_000))),
    concurrency: options.pollerConcurrency ?? 4,
    functionTimeoutMs: run.visibility * 1_000,
    logger: run.logger,
  });
}

/**
 * The HTTP API handler over the stack's runtime, reading the caller from the JWT authorizer's
 * claims as functions/control.ts does in Lambda (withJwtAuthorizer fills them). It is the same app.
 * `sweepIntervalMs` is the stack's sweeper timer, reported by `GET /config`.
 */
export function controlHandler(
  runtime: Runtime,
  log: (entry: Record<string, unknown>) => void,
  site: ConsoleSite | undefined,
  sweepIntervalMs = 0,
): ApiHandler {
  const app = createHttpApp({
    ...runtime,
    // The stack's own sweeper timer (none when 0: the runtime's default is reported then).
    timings: { ...runtime.timings, ...(sweepIntervalMs > 0 ? { sweep_interval_ms: sweepIntervalMs } : {}) },
    auth: jwtClaimsAuth(),
    maxOpenWaits: maxOpenWaitsFromEnv(process.env),
    log,
    ...(site !== undefined ? { console: site } : {}),
  });
  const lambda = handle(app);
  // hono declares its own (narrower) copy of the aws-lambda event types.
  type HonoEvent = Parameters<typeof lambda>[0];
  return async (given, context, signal) => {
    const event = keepEmptyLastEventId(given);
    if (signal === undefined)
      return (await lambda(event as unknown as HonoEvent, context)) as APIGatewayProxyResultV2;
    // The adapter builds a Request without a signal: this one carries the gateway's (the
    // client went away), which ends a long poll's store polling at once (lib/engine/reads.ts).
    const withSignal = handle({
      fetch: (req: Request, env: unknown) => app.fetch(new Request(req, { signal }), env as never),
    } as unknown as typeof app);
    return (await withSignal(event as unknown as HonoEvent, context)) as APIGatewayProxyResultV2;
  };
}

/** Runs one sweeper pass every `intervalMs`, never two at once; stop() waits for the pass in flight. */
export function startSweeperTimer(
  runtime: Runtime,
  logger: LogSink,
  metrics: CountingMetrics,
  intervalMs: number,
): { stop(): Promise<void> } {
  if (intervalMs <= 0) return { stop: async () => {} };
  const abort = new AbortController();
  const sweeper = createSweeperHandler({
    engine: runtime.engine,
    logger,
    metrics,
    passes: 1,
    signal: abort.signal,
  });
  let running: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    running = sweeper({}).catch((err: unknown) =>
      logger.error('sweeper pass failed; retrying at the next tick', { error: String(err) }),
    );
    void running.then(() => {
      if (!abort.signal.aborted) timer = setTimeout(tick, intervalMs);
    });
  };
  timer = setTimeout(tick, intervalMs);
  return {
    async stop() {
      abort.abort();
      clearTimeout(timer);
      await running;
    },
  };
}

function pick<T extends object, K extends keyof T>(source: T, keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (source[k] !== undefined) out[k] = source[k];
  return out;
}
