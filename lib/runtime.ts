/**
 * The composition root: wires the adapters (DynamoDB store, S3 blobs, SQS queue, QuickJS /
 * WebAssembly / Starlark reducer sandbox, imported on the first reducer call, tool dispatcher,
 * model-turn functions) into one engine. The Lambda handlers, the local stack and the tests build their runtime here, so every entry point
 * runs the same code. docs/architecture.md, "Bird's-eye view", "Code map".
 */
import type { AwsClients, AwsEndpoints } from './aws-clients.ts';
import { createAwsClients } from './aws-clients.ts';
import { createS3BlobStore } from './blobs/blob-store.ts';
import { admissionFromEnv, configFromEnv, ENV, required } from './config.ts';
import { DEFAULT_MODEL_TURN_FUNCTION } from './contracts/index.ts';
import { resolveTimings, type Timings } from './contracts/timings.ts';
import type { AdmissionConfig } from './core/admission.ts';
import { DEFAULT_PRICES, withConfiguredModels } from './core/prices.ts';
import { type CrashPoint, createEngine, type Engine } from './engine/engine.ts';
import type {
  Clock,
  ModelHost,
  ReducerHost,
  RegistryStore,
  RunStore,
  StepQueue,
  ToolHost,
} from './engine/ports.ts';
import { type ConfiguredModel, modelsFromEnv } from './models/configured.ts';
import { createModelHost, type ModelRetryPolicy } from './models/host.ts';
import type { ModelTurnFunction } from './models/types.ts';
import { createSqsStepQueue } from './queue/step-queue.ts';
import { AGENT_LOOP_PATH, readAgentLoopSource } from './reducers/artifact.ts';
import { type FunctionRegistry, InMemoryFunctionRegistry } from './sandbox/function-registry.ts';
import { createLazyReducerHost } from './sandbox/lazy-host.ts';
import { createDynamoRegistryStore } from './store/dynamo-registry-store.ts';
import { createDynamoRunStore } from './store/dynamo-run-store.ts';
import { tracingConfigFromEnv } from './telemetry/otel.ts';
import { createAuditLog } from './tools/audit-log.ts';
import { createCatalogueToolHost } from './tools/catalogue-host.ts';
import type { PolicyRule } from './tools/policy-gate.ts';
import { createToolRegistry, type ToolRegistry } from './tools/registry.ts';
import { powertoolsSecrets, type SecretResolver } from './tools/secrets.ts';

export interface RuntimeConfig {
  endpoints?: AwsEndpoints;
  tableName: string;
  queueUrl: string;
  bucketName: string;
  /** Registers the deployment's tools (called once, before the registry is sealed). */
  registerTools?: (registry: ToolRegistry) => void;
  /** The in-code policy: the default rule set, in force until a policy is published as data. */
  toolPolicy?: readonly PolicyRule[];
  /** Reads the secrets of tools registered as data (default: Powertools Parameters, cached 300 s). */
  secrets?: SecretResolver;
  /** Model-turn functions by path, besides the ones the environment configures (lib/models/configured.ts). */
  modelFunctions?: Record<string, ModelTurnFunction>;
  /** How a retryable provider fault is retried inside one turn (default DEFAULT_MODEL_RETRY: 3 calls). */
  modelRetry?: Partial<ModelRetryPolicy>;
  /** The function used when a run names none (default: the environment's default model, else the contract's default path). */
  defaultModelFunction?: string;
  /** Where the model configuration and AGENT_RUNS_ENVIRONMENT (the policy's environment) are read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Replaces the function registry (tests); default: built-in artifacts in memory. */
  functions?: FunctionRegistry;
  /** Replaces the reducer host (tests). */
  reducers?: ReducerHost;
  /** Wraps the step queue (chaos: duplicated and delayed messages). */
  wrapQueue?: (queue: StepQueue) => StepQueue;
  clock?: Clock;
  workerId?: string;
  /** The worker slot this process alone fills (EngineOptions.workerSlot); default none. */
  workerSlot?: string;
  leaseTtlMs?: number;
  heartbeatMs?: number;
  /** Clock-skew allowance of lease takeover (ms; default a third of the lease, 30 000 with the default lease). */
  clockSkewMs?: number;
  /** How often an interruptible operation reads its run's status to see a stop (ms, default 2 000). */
  stopPollMs?: number;
  /** How often the deployment's sweeper passes (ms, default 60 000): reported by `GET /config`, not used to sweep. */
  sweepIntervalMs?: number;
  wakeGraceMs?: number;
  /** Admission quotas and risk tier floor; default: read from `env` (see admissionFromEnv). */
  admission?: AdmissionConfig;
  faults?: (point: CrashPoint, runId: string) => void | Promise<void>;
  log?: (entry: Record<string, unknown>) => void;
  /** Audit events of tool invocations (never payloads); default: into `log`. */
  audit?: (event: Record<string, unknown>) => void;
}

export interface Runtime {
  engine: Engine;
  store: RunStore;
  /** The registries (tools, policy, agents as data) in the same table. */
  registries: RegistryStore;
  queue: StepQueue;
  clients: AwsClients;
  functions: FunctionRegistry;
  tools: ToolHost;
  models: ModelHost;
  /** The model-turn functions the environment configured, and the path a run gets when it names none. */
  modelCatalog: { models: ConfiguredModel[]; defaultPath: string };
  /** The timings the engine runs with (lib/contracts/timings.ts), as `GET /config` reports them. */
  timings: Timings;
  close(): void;
}

/** The built-in reducer artifacts shipped with the package. */
export function builtInFunctions(): InMemoryFunctionRegistry {
  return new InMemoryFunctionRegistry([
    { function_path: AGENT_LOOP_PATH, kind: 'js', bytes: new TextEncoder().encode(readAgentLoopSource()) },
  ]);
}

/** Builds one runtime. Creates clients and adapters but does no I/O. */
export function createRuntime(config: RuntimeConfig): Runtime {
  const clients = createAwsClients(config.endpoints ?? {});
  const blobs = createS3BlobStore(clients.s3, config.bucketName);
  const store = createDynamoRunStore({ doc: clients.doc, tableName: config.tableName, blobs });
  const sqsQueue = createSqsStepQueue(clients.sqs, config.queueUrl);
  const queue = config.wrapQueue ? config.wrapQueue(sqsQueue) : sqsQueue;
  const clock = config.clock ?? { now: () => Date.now() };
  const log = config.log ?? (() => {});
  const functions = config.functions ?? builtInFunctions();
  // The sandbox is imported on the first reducer call (lib/sandbox/lazy-host.ts): a function
  // that runs no reducer neither loads nor, bundled, carries it.
  const reducers = config.reducers ?? createLazyReducerHost({ registry: functions });
  const registries = createDynamoRegistryStore({ doc: clients.doc, tableName: config.tableName });
  const registry = createToolRegistry();
  config.registerTools?.(registry);
  const audit =
    config.audit ??
    ((event: Record<string, unknown>) => log({ level: 'info', message: 'tool audit', ...event }));
  const env = config.env ?? process.env;
  const settings = configFromEnv(env); // a bad variable fails the container at start (ConfigError)
  const environment = settings.AGENT_RUNS_ENVIRONMENT?.trim();
  const tools = createCatalogueToolHost({
    code: registry,
    codePolicy: config.toolPolicy ?? [],
    registries,
    secrets: config.secrets ?? powertoolsSecrets(),
    // The Lambda package is imported on the first Lambda tool call (lib/aws-clients.ts).
    lambdaClient: { send: async (command, options) => (await clients.lambda.get()).send(command, options) },
    audit: createAuditLog((event) => audit({ ...event })),
    clock,
    ...(environment ? { environment } : {}),
  });
  const configured = modelsFromEnv(env);
  tracingConfigFromEnv(env); // a wrong tracing variable fails the container at start (TracingConfigError)
  const defaultPath = config.defaultModelFunction ?? configured.defaultPath ?? DEFAULT_MODEL_TURN_FUNCTION;
  const models = createModelHost({
    functions: { ...configured.functions, ...(config.modelFunctions ?? {}) },
    default: defaultPath,
    ...(config.modelRetry !== undefined ? { retry: config.modelRetry } : {}),
  });
  const engine = createEngine({
    store,
    queue,
    clock,
    reducers,
    tools,
    models,
    registries,
    log,
    ...(config.workerId !== undefined ? { workerId: config.workerId } : {}),
    ...(config.workerSlot !== undefined ? { workerSlot: config.workerSlot } : {}),
    ...(config.leaseTtlMs !== undefined ? { leaseTtlMs: config.leaseTtlMs } : {}),
    ...(config.heartbeatMs !== undefined ? { heartbeatMs: config.heartbeatMs } : {}),
    ...(config.stopPollMs !== undefined ? { stopPollMs: config.stopPollMs } : {}),
    ...(config.clockSkewMs !== undefined ? { clockSkewMs: config.clockSkewMs } : {}),
    ...(config.wakeGraceMs !== undefined ? { wakeGraceMs: config.wakeGraceMs } : {}),
    admission: config.admission ?? admissionFromEnv(env),
    // Accept with evidence: a resume accepting a reducer change needs a passing check.
    requireReducerCheck: settings.AGENT_RUNS_REQUIRE_REDUCER_CHECK === 'true',
    // Costs at the default tables, with the configured model functions priced as their models;
    // the step's duration at the function's memory (Lambda sets the variable).
    prices: withConfiguredModels(DEFAULT_PRICES, configured.models, defaultPath),
    ...(settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE !== undefined
      ? { lambdaMemoryMb: settings.AWS_LAMBDA_FUNCTION_MEMORY_SIZE }
      : {}),
    ...(config.faults !== undefined ? { faults: config.faults } : {}),
  });
  return {
    engine,
    store,
    registries,
    queue,
    clients,
    functions,
    tools,
    models,
    modelCatalog: { models: configured.models, defaultPath },
    timings: resolveTimings(config),
    close: () => clients.destroy(),
  };
}

/**
 * The runtime configuration a Lambda function reads from its environment (set by the CDK
 * stack; lib/config.ts): TABLE_NAME, STEP_QUEUE_URL, PAYLOAD_BUCKET, and the timings when set
 * (AGENT_RUNS_LEASE_TTL_MS, _HEARTBEAT_MS, _CLOCK_SKEW_MS, _STOP_POLL_MS, _SWEEP_INTERVAL_MS).
 * Throws ConfigError naming the first missing or bad variable. The SDK's own endpoint overrides
 * AWS_ENDPOINT_URL_DYNAMODB, _SQS, _S3 and _LAMBDA, when set (never in AWS; the bundle tests
 * point them at DynamoDB Local and fauxqs), become explicit endpoints, so an overridden S3
 * endpoint is also addressed path-style.
 */
export function runtimeConfigFromEnv(env: NodeJS.ProcessEnv): RuntimeConfig {
  const c = configFromEnv(env);
  const endpoints: AwsEndpoints = {
    dynamoEndpoint: c.AWS_ENDPOINT_URL_DYNAMODB,
    sqsEndpoint: c.AWS_ENDPOINT_URL_SQS,
    s3Endpoint: c.AWS_ENDPOINT_URL_S3,
    lambdaEndpoint: c.AWS_ENDPOINT_URL_LAMBDA,
  };
  const overridden = Object.values(endpoints).some((v) => v !== undefined);
  return {
    tableName: required(c, ENV.TABLE_NAME),
    queueUrl: required(c, ENV.STEP_QUEUE_URL),
    bucketName: required(c, ENV.PAYLOAD_BUCKET),
    leaseTtlMs: c.AGENT_RUNS_LEASE_TTL_MS,
    heartbeatMs: c.AGENT_RUNS_HEARTBEAT_MS,
    stopPollMs: c.AGENT_RUNS_STOP_POLL_MS,
    sweepIntervalMs: c.AGENT_RUNS_SWEEP_INTERVAL_MS,
    ...(c.AGENT_RUNS_CLOCK_SKEW_MS !== undefined ? { clockSkewMs: c.AGENT_RUNS_CLOCK_SKEW_MS } : {}),
    ...(overridden ? { endpoints } : {}),
  };
}
