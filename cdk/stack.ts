/**
 * The deployment: one DynamoDB table (with its stream), the SQS step queue with its DLQ, the S3
 * payload bucket, the Lambda functions (control, step, sweeper; live and stream for the live
 * events and notifications, cdk/live.ts: the WebSocket API and the event bus), the HTTP API in front of control behind
 * a JWT authorizer (a Cognito user pool by default, cdk/auth.ts; optionally a second,
 * IAM-authorized API for service callers), the EventBridge Scheduler schedule that runs the
 * sweeper every minute, the model and tool configuration of the step function (cdk/models.ts,
 * cdk/tools.ts), and the alarms, alarm topic and dashboard (cdk/operations.ts).
 * docs/architecture.md, "Bird's-eye view", "The sweeper", "Runtime versions";
 * docs/reference/storage.md.
 *
 * The table comes from lib/store/table.ts and the queue settings from lib/local/resources.ts,
 * the same definitions the local stack creates, so the two cannot drift apart. The functions
 * read TABLE_NAME, STEP_QUEUE_URL and PAYLOAD_BUCKET (lib/runtime.ts, runtimeConfigFromEnv).
 *
 * The stack is environment-agnostic (no account, region or lookups): `cdk synth` needs no AWS
 * credentials and no network.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnElement, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  HttpStage,
  type IHttpRouteAuthorizer,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Effect, type IGrantable, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  Architecture,
  Function as LambdaFunction,
  LoggingFormat,
  Runtime,
  Tracing,
} from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { ENV } from '../lib/config.ts';
import { SWEEP_INTERVAL_MS } from '../lib/contracts/timings.ts';
import { METRICS_NAMESPACE } from '../lib/handlers/observability.ts';
import type { ConsoleConfigInput } from '../lib/http/console-config.ts';
import { STEP_QUEUE_DEFINITION } from '../lib/local/resources.ts';
import type { AiSdkModelEntry } from '../lib/models/ai-sdk-config.ts';
import { TABLE_DEFINITION } from '../lib/store/table.ts';
import { ApiAuth } from './auth.ts';
import { functionCode, REPO_ROOT } from './bundling.ts';
import { Live } from './live.ts';
import { Models, type OpenAiModelProps } from './models.ts';
import { acknowledge } from './nag.ts';
import { Operations, type OperationsAlarms } from './operations.ts';
import {
  configureTools,
  type DataToolAccess,
  deployToolFunctions,
  grantDataTools,
  type StackTool,
} from './tools.ts';

/**
 * Powertools service name of each function (POWERTOOLS_SERVICE_NAME). The handlers pass the
 * same names to Powertools (functions/*.ts, `lambdaContainer`), and Powertools Metrics adds it
 * to every metric as the dimension `service`, so an alarm on a handler metric must name it.
 */
export const SERVICE_NAMES = {
  control: 'agent-runs-control',
  step: 'agent-runs-step',
  sweeper: 'agent-runs-sweeper',
  live: 'agent-runs-live',
  stream: 'agent-runs-stream',
} as const;
/** Default step function timeout. The step queue's visibility timeout is 6x this. */
export const DEFAULT_STEP_TIMEOUT = Duration.minutes(5);
/** The step queue's visibility timeout as a multiple of the step function timeout (AWS guidance: at least 6). */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
/** Default maximum concurrency of the step event source mapping. */
export const DEFAULT_STEP_MAX_CONCURRENCY = 10;
/** Routes that answer without a JWT even when an authorizer is configured. */
export const PUBLIC_ROUTES = [
  { method: HttpMethod.GET, path: '/health' },
  { method: HttpMethod.GET, path: '/openapi.json' },
] as const;
/**
 * The web console's routes: public like PUBLIC_ROUTES (static assets and config.json, no run
 * data; the console then calls the API with the user's JWT). Served by the control function.
 */
export const CONSOLE_ROUTES = [
  { method: HttpMethod.GET, path: '/console' },
  { method: HttpMethod.GET, path: '/console/{proxy+}' },
] as const;

/**
 * The web console's sign-in through an OAuth 2.0 authorization server with the Cognito hosted
 * UI's paths: the authorization code flow with PKCE, for a public app client (no secret) whose
 * callback URL is `{ApiUrl}/console/callback` (the `ConsoleCallbackUrl` output) and sign-out URL
 * `{ApiUrl}/console/`.
 */
export interface ConsoleOAuthProps {
  /** The tokens' issuer: `https://cognito-idp.{region}.amazonaws.com/{userPoolId}`. */
  readonly issuer: string;
  /** The hosted UI's base URL: `https://{domain}.auth.{region}.amazoncognito.com` (or a custom domain). */
  readonly domainUrl: string;
  readonly clientId: string;
  /** Default `['openid']`. */
  readonly scopes?: readonly string[];
  /** The token the console sends to the API. Default `access`. */
  readonly tokenUse?: 'access' | 'id';
}

export interface AgentRunsStackProps extends StackProps {
  /**
   * Directory holding the Lambda entry points `control.ts`, `step.ts` and `sweeper.ts`, each
   * exporting `handler`. Default: the repository's `functions/`.
   */
  readonly entryDir?: string;
  /** esbuild's working directory, holding `package-lock.json`; `entryDir` must be under it. Default: the repository root. */
  readonly projectRoot?: string;
  /** DynamoDB deletion protection on the table. Default true. */
  readonly deletionProtection?: boolean;
  /** What CloudFormation does with the table and buckets when they leave the stack. Default RETAIN. */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * An existing JWT issuer URL (with `jwtAudience`) instead of the Cognito user pool the stack
   * creates by default. Every route except PUBLIC_ROUTES requires a valid JWT either way.
   */
  readonly jwtIssuer?: string;
  /** Accepted JWT audiences (`aud` claim or, for access tokens, `client_id`). Required with `jwtIssuer`. */
  readonly jwtAudience?: readonly string[];
  /**
   * Also serve the API behind IAM (SigV4) auth, for service callers: a second HTTP API (output
   * `ServiceApiUrl`) whose callers are system callers (lib/http/auth.ts iamCallerAuth), so grant
   * `execute-api:Invoke` on it (`grantServiceInvoke`) only to trusted services. Default false.
   */
  readonly iamAuth?: boolean;
  /** ARN of an SNS topic every alarm notifies (alarm and OK). Default: a topic the stack creates. */
  readonly alarmTopicArn?: string;
  /** An email address the created alarm topic notifies (confirm the subscription mail). */
  readonly alarmEmail?: string;
  /** Age of the oldest step message (s) that raises the queue age alarm. Default 900. */
  readonly queueAgeAlarmSeconds?: number;
  /** Versioning on the payload bucket (noncurrent versions expire after 30 days). Default false. */
  readonly payloadVersioning?: boolean;
  /**
   * Age after which payload objects expire. Default: never, because events and checkpoints that
   * reference a payload live as long as the run's items (their own TTL decides).
   */
  readonly payloadExpiration?: Duration;
  /** Retention of the functions' and the API's log groups. Default one month. */
  readonly logRetention?: RetentionDays;
  /** Step function timeout; the step queue's visibility timeout is 6x this. Default 5 minutes. */
  readonly stepTimeout?: Duration;
  /** Extra environment for all three functions (models and tools have props of their own). */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Bedrock model or inference-profile ids the step function calls (BEDROCK_MODEL_ID; the first
   * is `/lib/models/bedrock` and the default model); IAM allows exactly these. Default none.
   */
  readonly bedrockModelIds?: readonly string[];
  /** Further Bedrock model ARNs the step function may invoke. Default none. */
  readonly bedrockModelArns?: readonly string[];
  /** An OpenAI-compatible endpoint (`/lib/models/openai`), its key in Secrets Manager. Default none. */
  readonly openAi?: OpenAiModelProps;
  /** `bedrock`, `openai` or a model path: the model of a run that names none. Default: Bedrock if configured. */
  readonly defaultModel?: string;
  /** AI SDK models as data (AGENT_RUNS_MODELS, lib/models/ai-sdk-config.ts); IAM for their secrets and Bedrock ids. */
  readonly aiSdkModels?: readonly AiSdkModelEntry[];
  /**
   * Tools registered in every container (AGENT_RUNS_TOOLS); Lambda tools get invoke rights. A
   * Lambda tool with `target.code` (a handler file) gets a function the stack builds from it
   * (`toolFunctions`). Default none.
   */
  readonly tools?: readonly StackTool[];
  /**
   * What tools registered as data (POST /admin/tools) may reach: Lambda function ARNs, functions
   * tagged `agent-runs-tool = <stack name>`, and the secrets / SSM parameters holding HTTP and MCP
   * tool auth. The step function gets exactly these. Default none.
   */
  readonly dataTools?: DataToolAccess;
  /**
   * At most this many step function instances run at once (the event source mapping's maximum
   * concurrency, 2..1000): the bound on concurrent model calls. Default 10.
   */
  readonly stepMaxConcurrency?: number;
  /**
   * Reserved concurrency of the sweeper: 1 (default) keeps one sweeper at a time; `null` reserves
   * none (an account whose concurrency limit is 10 cannot reserve any).
   */
  readonly sweeperReservedConcurrency?: number | null;
  /** Stage throttling of the HTTP API. Default 50 requests/s steady, burst 100. */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** Takeovers (sum over 5 minutes) at or above which the takeover alarm fires. Default 1. */
  readonly takeoverAlarmThreshold?: number;
  /**
   * The web console's sign-in (the console is served at `{ApiUrl}/console`) through an existing
   * hosted UI. Default: sign in by pasting a bearer token (or `consoleDomainPrefix`).
   */
  readonly consoleOAuth?: ConsoleOAuthProps;
  /**
   * With the user pool the stack creates (no `jwtIssuer`) and no `consoleOAuth`: give the pool a
   * Cognito hosted UI at `https://{prefix}.auth.{region}.amazoncognito.com` (the prefix must be
   * free in the region: lowercase letters, digits and hyphens, without `aws`, `amazon` or
   * `cognito`) and an app client for the console, which then signs in through it.
   */
  readonly consoleDomainPrefix?: string;
  /**
   * Admission limits per principal (lib/core/admission.ts), refused with 429 quota_exceeded;
   * system callers are exempt. `null` for a limit turns it off. Default: 100 live runs, 120
   * creates a minute, risk tier floor `standard`.
   */
  readonly admission?: AdmissionProps;
  /**
   * The live socket's bounds (lib/live/limits.ts): sockets per principal, runs per socket,
   * subscribes per socket per minute, catch-up replay bytes per principal per window and that
   * window. Default: the runtime's (8, 16, 60, 4 MiB, 10 000 ms).
   */
  readonly liveBounds?: LiveBoundsProps;
}

/** The live function's AGENT_RUNS_LIVE_* variables (each unset: the runtime's default). */
export interface LiveBoundsProps {
  /** Open live sockets per principal (AGENT_RUNS_LIVE_MAX_CONNECTIONS). */
  readonly maxConnections?: number;
  /** Runs one socket may be subscribed to (AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS). */
  readonly maxSubscriptions?: number;
  /** Subscribe messages per socket per minute (AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE). */
  readonly subscribesPerMinute?: number;
  /** Catch-up replay bytes per principal per window (AGENT_RUNS_LIVE_REPLAY_BYTES). */
  readonly replayBytes?: number;
  /** That window, ms (AGENT_RUNS_LIVE_REPLAY_WINDOW_MS). */
  readonly replayWindowMs?: number;
}

/** The live function's environment for `bounds`. Throws naming the variable of a value that is not a positive integer. */
export function liveBoundsEnvironment(bounds: LiveBoundsProps = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of [
    [ENV.AGENT_RUNS_LIVE_MAX_CONNECTIONS, bounds.maxConnections],
    [ENV.AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS, bounds.maxSubscriptions],
    [ENV.AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE, bounds.subscribesPerMinute],
    [ENV.AGENT_RUNS_LIVE_REPLAY_BYTES, bounds.replayBytes],
    [ENV.AGENT_RUNS_LIVE_REPLAY_WINDOW_MS, bounds.replayWindowMs],
  ] as const) {
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`liveBounds: ${name} must be a positive integer`);
    env[name] = String(value);
  }
  return env;
}

/** A deployment's admission settings (the control function's AGENT_RUNS_* variables). */
export interface AdmissionProps {
  /** Most runs not yet ended per principal. Default 100; null: unlimited. */
  readonly maxLiveRuns?: number | null;
  /** Most creates per principal per clock minute. Default 120; null: unlimited. */
  readonly maxCreatesPerMinute?: number | null;
  /** Lowest risk tier a run gets. Default `standard`. */
  readonly riskTierFloor?: 'low' | 'standard' | 'high';
  /** Most children one run may start (AGENT_RUNS_MAX_CHILDREN_PER_RUN). Default: the runtime's, 16. */
  readonly maxChildrenPerRun?: number;
  /** Deepest a delegation tree may grow, the root being 0 (AGENT_RUNS_MAX_TREE_DEPTH). Default: the runtime's, 4. */
  readonly maxTreeDepth?: number;
  /** Most queued steers one run may hold (AGENT_RUNS_MAX_QUEUED_STEERS). Default: the runtime's, 32. */
  readonly maxQueuedSteers?: number;
}

/** The control and step functions' environment for `admission` (defaults applied). */
export function admissionEnvironment(admission: AdmissionProps = {}): Record<string, string> {
  const env: Record<string, string> = {
    [ENV.AGENT_RUNS_RISK_TIER_FLOOR]: admission.riskTierFloor ?? 'standard',
  };
  const live = admission.maxLiveRuns === undefined ? 100 : admission.maxLiveRuns;
  const rate = admission.maxCreatesPerMinute === undefined ? 120 : admission.maxCreatesPerMinute;
  for (const [name, value] of [
    [ENV.AGENT_RUNS_MAX_LIVE_RUNS, live],
    [ENV.AGENT_RUNS_MAX_CREATES_PER_MINUTE, rate],
    [ENV.AGENT_RUNS_MAX_CHILDREN_PER_RUN, admission.maxChildrenPerRun],
    [ENV.AGENT_RUNS_MAX_TREE_DEPTH, admission.maxTreeDepth],
    [ENV.AGENT_RUNS_MAX_QUEUED_STEERS, admission.maxQueuedSteers],
  ] as const) {
    if (value === null || value === undefined) continue;
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`admission: ${name} must be a positive integer`);
    env[name] = String(value);
  }
  return env;
}

/** Feature flag (aws-cdk-lib cx-api): grant S3 log delivery by bucket policy instead of an ACL. */
const S3_ACCESS_LOGS_USE_BUCKET_POLICY = '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy';

type FunctionName = keyof typeof SERVICE_NAMES;

/**
 * Entry file (in `entryDir`), memory (MB) of each function and whether it runs reducers (its
 * bundle then carries the reducer sandbox, loaded on the first call; cdk/bundling.ts).
 */
const FUNCTIONS: Record<FunctionName, { entry: string; memorySize: number; reducers: boolean }> = {
  // Creates and forks runs, and runs reducers only to check an upgrade (POST /admin/reducers/check,
  // a resume that requires a passing check, time travel's projection): loaded on that first call.
  control: { entry: 'control.ts', memorySize: 512, reducers: true },
  // Runs reducers in QuickJS / WebAssembly and model turns: more memory, which is also more CPU.
  step: { entry: 'step.ts', memorySize: 1024, reducers: true },
  // Delivers what an ended run still owes its reducer (lib/engine/after-end.ts).
  sweeper: { entry: 'sweeper.ts', memorySize: 512, reducers: true },
  live: { entry: 'live.ts', memorySize: 512, reducers: false },
  stream: { entry: 'stream.ts', memorySize: 512, reducers: false },
};
/**
 * Key prefixes in the payload bucket: payloads above the inline limit (lib/blobs/blob-store.ts,
 * `payloads/{sha256}`) and reducer artifacts registered over HTTP (lib/sandbox/stored-registry.ts,
 * `functions/{sha256}`).
 */
export const OBJECT_PREFIXES = { payloads: 'payloads/', functions: 'functions/' } as const;

/** Control: under API Gateway's 30 s integration limit (events long-poll up to 20 s). */
const CONTROL_TIMEOUT = Duration.seconds(29);
/** Sweeper: two passes 30 s apart plus their work; an overlapping invocation is safe (conditional commits). */
const SWEEPER_TIMEOUT = Duration.minutes(2);
/** Live: a connect, a subscribe (catching up one run) or a disconnect; API Gateway waits up to 29 s. */
const LIVE_TIMEOUT = Duration.seconds(29);
/** Stream: one batch of stream records, each a notification and a fan-out to the run's subscribers. */
const STREAM_TIMEOUT = Duration.minutes(1);

/** Step queue → step function: records per invocation, and how long Lambda waits to fill a batch. */
const STEP_BATCH_SIZE = 10;
const STEP_MAX_BATCHING_WINDOW = Duration.seconds(1);

export class AgentRunsStack extends Stack {
  readonly table: Table;
  readonly stepQueue: Queue;
  readonly stepDeadLetterQueue: Queue;
  readonly payloadBucket: Bucket;
  readonly controlFunction: LambdaFunction;
  readonly stepFunction: LambdaFunction;
  readonly sweeperFunction: LambdaFunction;
  readonly liveFunction: LambdaFunction;
  readonly streamFunction: LambdaFunction;
  /** The WebSocket API, the stream consumer and the lifecycle notifications' event bus. */
  readonly live: Live;
  readonly httpApi: HttpApi;
  /** The IAM-authorized API for service callers (`iamAuth`). */
  readonly serviceApi: HttpApi | undefined;
  readonly auth: ApiAuth;
  readonly models: Models;
  /** The functions the stack built for tools that gave their `code`, by tool name. */
  readonly toolFunctions = new Map<string, NodejsFunction>();
  readonly sweeperSchedule: Schedule;
  readonly operations: Operations;
  readonly alarms: OperationsAlarms;

  /**
   * Throws if exactly one of jwtIssuer / jwtAudience is given, or jwtAudience is empty; throws
   * ModelConfigError or ToolConfigError for a model or tool configuration the runtime refuses.
   */
  constructor(scope: Construct, id: string, props: AgentRunsStackProps = {}) {
    super(scope, id, props);
    // Server access logs are delivered under a bucket policy (not the legacy ACL), whatever the
    // app's feature flags: the log bucket enforces bucket-owner object ownership.
    this.node.setContext(S3_ACCESS_LOGS_USE_BUCKET_POLICY, true);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    const stepTimeout = props.stepTimeout ?? DEFAULT_STEP_TIMEOUT;
    const entryDir = props.entryDir ?? fileURLToPath(new URL('functions/', REPO_ROOT));
    const projectRoot = props.projectRoot ?? fileURLToPath(REPO_ROOT);

    this.table = this.createTable(props.deletionProtection ?? true, removalPolicy);
    const queues = this.createQueues(stepTimeout);
    this.stepQueue = queues.queue;
    this.stepDeadLetterQueue = queues.dlq;
    this.payloadBucket = this.createPayloadBucket(props, removalPolicy);

    const makeFunction = (name: FunctionName, timeout: Duration, reserved?: number | null): LambdaFunction =>
      this.createFunction(name, {
        entryDir,
        projectRoot,
        environment: {
          ...(props.environment ?? {}),
          [ENV.TABLE_NAME]: this.table.tableName,
          [ENV.STEP_QUEUE_URL]: this.stepQueue.queueUrl,
          [ENV.PAYLOAD_BUCKET]: this.payloadBucket.bucketName,
          [ENV.POWERTOOLS_SERVICE_NAME]: SERVICE_NAMES[name],
          [ENV.POWERTOOLS_METRICS_NAMESPACE]: METRICS_NAMESPACE,
        },
        logRetention,
        removalPolicy,
        timeout,
        ...(name === 'sweeper' ? { reservedConcurrency: reserved === undefined ? 1 : reserved } : {}),
      });
    this.controlFunction = makeFunction('control', CONTROL_TIMEOUT);
    this.stepFunction = makeFunction('step', stepTimeout);
    // Creates are admitted by the control function, delegated children by the step function.
    for (const [name, value] of Object.entries(admissionEnvironment(props.admission))) {
      this.controlFunction.addEnvironment(name, value);
      this.stepFunction.addEnvironment(name, value);
    }
    this.sweeperFunction = makeFunction('sweeper', SWEEPER_TIMEOUT, props.sweeperReservedConcurrency);

    this.grantRuntimeAccess(this.controlFunction, 'control');
    this.grantRuntimeAccess(this.stepFunction, 'step');
    this.grantRuntimeAccess(this.sweeperFunction, 'sweeper');
    this.liveFunction = makeFunction('live', LIVE_TIMEOUT);
    for (const [name, value] of Object.entries(liveBoundsEnvironment(props.liveBounds)))
      this.liveFunction.addEnvironment(name, value);
    this.streamFunction = makeFunction('stream', STREAM_TIMEOUT);
    this.grantRuntimeAccess(this.liveFunction, 'live');
    this.grantRuntimeAccess(this.streamFunction, 'stream');
    this.stepQueue.grantSendMessages(this.controlFunction);
    this.stepQueue.grantSendMessages(this.sweeperFunction);
    // The step function chains a run by enqueueing its next step.
    this.stepQueue.grantSendMessages(this.stepFunction);
    this.models = new Models(this, 'Models', this.stepFunction, {
      removalPolicy,
      ...(props.bedrockModelIds !== undefined ? { bedrockModelIds: props.bedrockModelIds } : {}),
      ...(props.bedrockModelArns !== undefined ? { bedrockModelArns: props.bedrockModelArns } : {}),
      ...(props.openAi !== undefined ? { openAi: props.openAi } : {}),
      ...(props.defaultModel !== undefined ? { defaultModel: props.defaultModel } : {}),
      ...(props.aiSdkModels !== undefined ? { aiSdkModels: props.aiSdkModels } : {}),
    });
    const tools = deployToolFunctions(this, props.tools ?? [], {
      logRetention,
      removalPolicy,
      functions: this.toolFunctions,
    });
    configureTools(tools, { control: this.controlFunction, step: this.stepFunction });
    grantDataTools(props.dataTools ?? {}, this.stepFunction);

    this.stepFunction.addEventSource(
      new SqsEventSource(this.stepQueue, {
        batchSize: STEP_BATCH_SIZE,
        maxBatchingWindow: STEP_MAX_BATCHING_WINDOW,
        reportBatchItemFailures: true,
        maxConcurrency: props.stepMaxConcurrency ?? DEFAULT_STEP_MAX_CONCURRENCY,
      }),
    );

    this.auth = new ApiAuth(this, 'Auth', {
      jwtIssuer: props.jwtIssuer,
      jwtAudience: props.jwtAudience,
      removalPolicy,
    });
    this.httpApi = this.createHttpApi(props, logRetention, removalPolicy);
    this.controlFunction.addEnvironment(
      ENV.CONSOLE_CONFIG,
      this.toJsonString(consoleConfig(this.consoleSignIn(props))),
    );
    // What `GET /config` reports as the sweeper's period: the schedule's (createSweeperSchedule).
    this.controlFunction.addEnvironment(ENV.AGENT_RUNS_SWEEP_INTERVAL_MS, String(SWEEP_INTERVAL_MS));
    this.serviceApi =
      props.iamAuth === true ? this.createServiceApi(props, logRetention, removalPolicy) : undefined;
    this.live = new Live(this, 'Live', {
      table: this.table,
      liveFunction: this.liveFunction,
      streamFunction: this.streamFunction,
      jwtIssuer: this.auth.issuer,
      jwtAudience: this.auth.audience,
      throttle: props.throttle ?? { rateLimit: 50, burstLimit: 100 },
      logRetention,
      removalPolicy,
    });
    this.sweeperSchedule = this.createSweeperSchedule();
    this.operations = new Operations(this, 'Operations', {
      functions: { control: this.controlFunction, step: this.stepFunction, sweeper: this.sweeperFunction },
      serviceNames: SERVICE_NAMES,
      stepQueue: this.stepQueue,
      deadLetterQueue: this.stepDeadLetterQueue,
      httpApi: this.httpApi,
      alarmTopicArn: props.alarmTopicArn,
      alarmEmail: props.alarmEmail,
      takeoverAlarmThreshold: props.takeoverAlarmThreshold,
      queueAgeAlarmSeconds: props.queueAgeAlarmSeconds,
      removalPolicy,
    });
    this.alarms = this.operations.alarms;

    new CfnOutput(this, 'ApiUrl', {
      value: this.httpApi.apiEndpoint,
      description: 'Base URL of the HTTP API',
    });
    if (this.auth.userPool !== undefined && this.auth.userPoolClient !== undefined) {
      new CfnOutput(this, 'UserPoolId', {
        value: this.auth.userPool.userPoolId,
        description: 'Cognito user pool of the API (create users with aws cognito-idp admin-create-user)',
      });
      new CfnOutput(this, 'UserPoolClientId', {
        value: this.auth.userPoolClient.userPoolClientId,
        description: 'App client for aws cognito-idp initiate-auth (USER_PASSWORD_AUTH)',
      });
    }
    if (this.serviceApi !== undefined) {
      new CfnOutput(this, 'ServiceApiUrl', {
        value: this.serviceApi.apiEndpoint,
        description: 'Base URL of the IAM-authorized API (SigV4, service callers with system rights)',
      });
    }
    new CfnOutput(this, 'LiveUrl', {
      value: this.live.stage.url,
      description: 'The live event WebSocket (wss://; the token in ?token=): agent-runs --ws-url',
    });
    new CfnOutput(this, 'EventBusName', {
      value: this.live.eventBus.eventBusName,
      description: 'Run lifecycle notifications (detail-type Agent Run Status Changed)',
    });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.operations.topic.topicArn });
    new CfnOutput(this, 'DashboardName', { value: this.operations.dashboard.dashboardName });
    new CfnOutput(this, 'ConsoleUrl', {
      value: `${this.httpApi.apiEndpoint}/console/`,
      description: 'The web console (served by the control function)',
    });
    new CfnOutput(this, 'ConsoleCallbackUrl', {
      value: `${this.httpApi.apiEndpoint}/console/callback`,
      description: "The OAuth callback URL to register on the console's app client",
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'StepQueueUrl', { value: this.stepQueue.queueUrl });
    new CfnOutput(this, 'StepDeadLetterQueueUrl', { value: this.stepDeadLetterQueue.queueUrl });
    new CfnOutput(this, 'PayloadBucketName', { value: this.payloadBucket.bucketName });
  }

  /** The one table, from TABLE_DEFINITION: keys, GSIs, TTL; on demand, PITR, AWS-managed KMS key. */
  private createTable(deletionProtection: boolean, removalPolicy: RemovalPolicy): Table {
    const def = TABLE_DEFINITION;
    const table = new Table(this, 'Table', {
      partitionKey: { name: def.partitionKey.name, type: attributeType(def.partitionKey.type) },
      sortKey: { name: def.sortKey.name, type: attributeType(def.sortKey.type) },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: def.timeToLiveAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection,
      encryption: TableEncryption.AWS_MANAGED,
      stream: StreamViewType[def.stream],
      removalPolicy,
    });
    for (const gsi of def.globalSecondaryIndexes) {
      table.addGlobalSecondaryIndex({
        indexName: gsi.indexName,
        partitionKey: { name: gsi.partitionKey.name, type: attributeType(gsi.partitionKey.type) },
        sortKey: { name: gsi.sortKey.name, type: attributeType(gsi.sortKey.type) },
        projectionType: projectionType(gsi.projection),
      });
    }
    return table;
  }

  /** The step queue and its DLQ: redrive after STEP_QUEUE_DEFINITION.maxReceiveCount receives, TLS only, SQS-managed SSE. */
  private createQueues(stepTimeout: Duration): { queue: Queue; dlq: Queue } {
    const dlq = new Queue(this, 'StepDeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.seconds(STEP_QUEUE_DEFINITION.dlqMessageRetentionSeconds),
    });
    const queue = new Queue(this, 'StepQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(stepTimeout.toSeconds() * VISIBILITY_TIMEOUT_FACTOR),
      deadLetterQueue: { queue: dlq, maxReceiveCount: STEP_QUEUE_DEFINITION.maxReceiveCount },
    });
    return { queue, dlq };
  }

  /**
   * The payload bucket (S3-managed encryption, public access blocked, TLS only, lifecycle) and
   * the bucket that receives its server access logs.
   */
  private createPayloadBucket(props: AgentRunsStackProps, removalPolicy: RemovalPolicy): Bucket {
    const versioned = props.payloadVersioning ?? false;
    const accessLogs = new Bucket(this, 'AccessLogsBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(90) }],
      removalPolicy,
    });
    acknowledge(
      accessLogs,
      'AwsSolutions-S1',
      'This bucket is the destination of the payload bucket server access logs; logging it would recurse.',
    );
    return new Bucket(this, 'PayloadBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'payload-bucket/',
      lifecycleRules: [
        {
          id: 'abort-incomplete-uploads',
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        ...(versioned ? [{ id: 'expire-noncurrent', noncurrentVersionExpiration: Duration.days(30) }] : []),
        ...(props.payloadExpiration !== undefined
          ? [{ id: 'expire-payloads', expiration: props.payloadExpiration }]
          : []),
      ],
      removalPolicy,
    });
  }

  /**
   * One function: Node.js 24 on arm64, bundled locally by esbuild (ESM), JSON logs into its own
   * log group, X-Ray active (Powertools Tracer). Its role gets no managed policy: log writes
   * are granted on its own log group only.
   */
  private createFunction(
    name: FunctionName,
    options: {
      entryDir: string;
      projectRoot: string;
      environment: Record<string, string>;
      logRetention: RetentionDays;
      removalPolicy: RemovalPolicy;
      timeout: Duration;
      /** Reserved concurrency; null or absent reserves none. */
      reservedConcurrency?: number | null;
    },
  ): LambdaFunction {
    const spec = FUNCTIONS[name];
    const id = `${capitalize(name)}Function`;
    const logGroup = new LogGroup(this, `${id}Logs`, {
      retention: options.logRetention,
      removalPolicy: options.removalPolicy,
    });
    const role = new Role(this, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the ${name} function`,
    });
    logGroup.grantWrite(role);
    const fn = new LambdaFunction(this, id, {
      code: functionCode({
        entry: join(options.entryDir, spec.entry),
        projectRoot: options.projectRoot,
        withConsole: name === 'control',
        reducers: spec.reducers,
      }),
      handler: 'index.handler',
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: spec.memorySize,
      timeout: options.timeout,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      tracing: Tracing.ACTIVE,
      environment: options.environment,
      // Async invocations (the sweeper's schedule): the next tick replaces a failed one.
      retryAttempts: name === 'sweeper' ? 0 : undefined,
      ...(typeof options.reservedConcurrency === 'number'
        ? { reservedConcurrentExecutions: options.reservedConcurrency }
        : {}),
    });
    acknowledge(
      role,
      'AwsSolutions-IAM5[Resource::*]',
      'X-Ray PutTraceSegments/PutTelemetryRecords (Tracing.ACTIVE, Powertools Tracer) support no resource-level permissions.',
    );
    return fn;
  }

  /**
   * What a function needs to run the engine: item reads and writes on the table and Query on
   * its three (KEYS_ONLY) indexes, named one by one (the engine runs the same store code in all
   * three handlers, so each may reach any index: a narrower split would fail at run time, not
   * at deploy time); payload reads and writes under `payloads/`; reducer artifacts under
   * `functions/`, written only by control (`PUT /functions/...`); ListBucket, so that a missing
   * object reads as 404 NoSuchKey rather than 403 (the stored registry tells the two apart).
   */
  private grantRuntimeAccess(fn: LambdaFunction, name: FunctionName): void {
    const indexArns = TABLE_DEFINITION.globalSecondaryIndexes.map(
      (g) => `${this.table.tableArn}/index/${g.indexName}`,
    );
    fn.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:Query',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
        ],
        resources: [this.table.tableArn],
      }),
    );
    fn.addToRolePolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['dynamodb:Query'], resources: indexArns }),
    );
    fn.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [this.payloadBucket.arnForObjects(`${OBJECT_PREFIXES.payloads}*`)],
      }),
    );
    fn.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: name === 'control' ? ['s3:GetObject', 's3:PutObject'] : ['s3:GetObject'],
        resources: [this.payloadBucket.arnForObjects(`${OBJECT_PREFIXES.functions}*`)],
      }),
    );
    fn.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['s3:ListBucket'],
        resources: [this.payloadBucket.bucketArn],
      }),
    );
    const role = fn.role;
    if (role === undefined) throw new Error(`${fn.node.path} has no role`);
    const bucketArn = `<${this.logicalIdOf(this.payloadBucket)}.Arn>`;
    for (const prefix of Object.values(OBJECT_PREFIXES)) {
      acknowledge(
        role,
        `AwsSolutions-IAM5[Resource::${bucketArn}/${prefix}*]`,
        `Objects under ${prefix} are content-addressed ({sha256}); their keys are not known in advance, so access is scoped to the prefix.`,
      );
    }
  }

  /** The console's hosted-UI sign-in: the one given, the one `consoleDomainPrefix` asks for, or none. */
  private consoleSignIn(props: AgentRunsStackProps): ConsoleOAuthProps | undefined {
    if (props.consoleOAuth !== undefined || props.consoleDomainPrefix === undefined)
      return props.consoleOAuth;
    const signIn = this.auth.addConsoleSignIn(this.httpApi.apiEndpoint, props.consoleDomainPrefix);
    new CfnOutput(this, 'ConsoleSignInUrl', {
      value: signIn.domainUrl,
      description: 'The Cognito hosted UI the console signs in through',
    });
    return signIn;
  }

  /** The HTTP API behind the JWT authorizer of `this.auth` (Cognito by default). */
  private createHttpApi(
    props: AgentRunsStackProps,
    logRetention: RetentionDays,
    removalPolicy: RemovalPolicy,
  ): HttpApi {
    return this.createApi(
      'HttpApi',
      'Agent Runs HTTP API',
      this.auth.authorizer,
      props,
      logRetention,
      removalPolicy,
      true,
    );
  }

  /** The same routes behind IAM (SigV4) auth, for service callers (`iamAuth`). */
  private createServiceApi(
    props: AgentRunsStackProps,
    logRetention: RetentionDays,
    removalPolicy: RemovalPolicy,
  ): HttpApi {
    return this.createApi(
      'ServiceApi',
      'Agent Runs HTTP API for service callers (IAM auth)',
      new HttpIamAuthorizer(),
      props,
      logRetention,
      removalPolicy,
    );
  }

  /**
   * Lets `grantee` call the IAM-authorized API (`iamAuth`), which makes it a system caller.
   * Throws when the stack has no such API.
   */
  grantServiceInvoke(grantee: IGrantable): void {
    if (this.serviceApi === undefined) throw new Error('the stack has no IAM-authorized API (iamAuth)');
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['execute-api:Invoke'],
        resources: [this.serviceApi.arnForExecuteApi()],
      }),
    );
  }

  /**
   * One HTTP API: `ANY /` and `ANY /{proxy+}` to the control function behind `authorizer`;
   * PUBLIC_ROUTES never need one; `withConsole` adds the console's public CONSOLE_ROUTES (the API
   * people use, not the service callers' one). Access logs (JSON) go to their own log group; the
   * $default stage is throttled.
   */
  private createApi(
    id: string,
    description: string,
    authorizer: IHttpRouteAuthorizer,
    props: AgentRunsStackProps,
    logRetention: RetentionDays,
    removalPolicy: RemovalPolicy,
    withConsole = false,
  ): HttpApi {
    const api = new HttpApi(this, id, { description, createDefaultStage: false });
    const accessLogs = new LogGroup(this, `${id}AccessLogs`, { retention: logRetention, removalPolicy });
    const throttle = props.throttle ?? { rateLimit: 50, burstLimit: 100 };
    new HttpStage(this, `${id}DefaultStage`, {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
    });

    const integration = new HttpLambdaIntegration(`${id}ControlIntegration`, this.controlFunction);
    for (const path of ['/', '/{proxy+}']) {
      api.addRoutes({ path, methods: [HttpMethod.ANY], integration, authorizer });
    }
    for (const route of PUBLIC_ROUTES) {
      for (const r of api.addRoutes({ path: route.path, methods: [route.method], integration })) {
        acknowledge(
          r,
          'AwsSolutions-APIG4',
          `${route.method} ${route.path} is public by design (health check, OpenAPI document); it reads no run data.`,
        );
      }
    }
    for (const route of withConsole ? CONSOLE_ROUTES : []) {
      for (const r of api.addRoutes({ path: route.path, methods: [route.method], integration })) {
        acknowledge(
          r,
          'AwsSolutions-APIG4',
          `${route.method} ${route.path} serves the web console's static files and config.json (no secrets, no run data); the console calls the API with the user's JWT.`,
        );
      }
    }
    return api;
  }

  /**
   * EventBridge Scheduler, rate 1 minute, invoking the sweeper asynchronously. A missed tick is
   * replaced by the next one: no retries, events older than a minute are dropped.
   */
  private createSweeperSchedule(): Schedule {
    const role = new Role(this, 'SweeperScheduleRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': this.account } },
      }),
      description: 'Lets EventBridge Scheduler invoke the sweeper function',
    });
    const schedule = new Schedule(this, 'SweeperSchedule', {
      description: 'Runs the sweeper every minute (two passes 30 s apart per invocation).',
      schedule: ScheduleExpression.rate(Duration.millis(SWEEP_INTERVAL_MS)),
      target: new LambdaInvoke(this.sweeperFunction, {
        role,
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    });
    acknowledge(
      role,
      `AwsSolutions-IAM5[Resource::<${this.logicalIdOf(this.sweeperFunction)}.Arn>:*]`,
      'lambda:InvokeFunction on the sweeper function only; the :* suffix (its versions and aliases) is added by the LambdaInvoke target and scopes nothing else.',
    );
    return schedule;
  }

  /** The CloudFormation logical id of a resource's default child, as cdk-nag names it in findings. */
  private logicalIdOf(construct: Construct): string {
    const child = construct.node.defaultChild;
    if (!(child instanceof CfnElement))
      throw new Error(`${construct.node.path} has no CloudFormation resource`);
    return this.getLogicalId(child);
  }
}

/** Fields of one access log line (HTTP API `$context` variables). */
const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  requestTime: '$context.requestTime',
  httpMethod: '$context.httpMethod',
  routeKey: '$context.routeKey',
  path: '$context.path',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
};

/**
 * The console's run-time configuration (lib/http/console-config.ts) the control function serves
 * at /console/config.json, from CONSOLE_CONFIG. The sweeper runs every minute in AWS.
 */
function consoleConfig(oauth: ConsoleOAuthProps | undefined): ConsoleConfigInput {
  const base = { sweep_interval_ms: SWEEP_INTERVAL_MS };
  if (oauth === undefined) {
    return { ...base, auth: { kind: 'token', hint: 'Paste a JWT the API accepts.' } };
  }
  const domain = oauth.domainUrl.replace(/\/+$/, '');
  return {
    ...base,
    auth: {
      kind: 'oauth',
      issuer: oauth.issuer,
      authorization_endpoint: `${domain}/oauth2/authorize`,
      token_endpoint: `${domain}/oauth2/token`,
      end_session_endpoint: `${domain}/logout`,
      client_id: oauth.clientId,
      scopes: [...(oauth.scopes ?? ['openid'])],
      token_use: oauth.tokenUse ?? 'access',
    },
  };
}

function attributeType(type: 'S' | 'N'): AttributeType {
  return type === 'S' ? AttributeType.STRING : AttributeType.NUMBER;
}

function projectionType(projection: 'KEYS_ONLY'): ProjectionType {
  return projection === 'KEYS_ONLY' ? ProjectionType.KEYS_ONLY : ProjectionType.ALL;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
