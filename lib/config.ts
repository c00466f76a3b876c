/**
 * The one configuration source: every environment variable the runtime, the Lambda handlers,
 * the local stack, the CLI and the CDK stack read, with its type (a zod schema), default and
 * meaning. `configFromEnv(env)` parses them all at once (once per process for `process.env`)
 * and throws ConfigError (`config_invalid`, naming the variable) on a bad value; `ENV` holds the
 * names, so no other file spells a variable as a string. docs/reference/configuration.md is
 * rendered from this table (lib/checker/config-reference.ts).
 *
 * A variable set to the empty string counts as unset. The model, tool and tracing variables are
 * strings here: lib/models/configured.ts, lib/tools/configured.ts and lib/telemetry/otel.ts parse
 * their contents (and throw their own errors naming the variable).
 */
import { z } from 'zod';
import { CLI_ENV } from './contracts/env-names.ts';
import { RiskTier } from './contracts/index.ts';
import {
  defaultClockSkewMs,
  HEARTBEAT_MS,
  LEASE_TTL_MS,
  STOP_POLL_MS,
  SWEEP_INTERVAL_MS,
  SWEEP_PASS_GAP_MS,
} from './contracts/timings.ts';
import type { AdmissionConfig } from './core/admission.ts';

/** Which part of the system reads a variable (the generated reference groups by it). */
export type ReadBy = 'runtime' | 'handlers' | 'models' | 'tracing' | 'local' | 'cli' | 'aws';

/** One variable: its schema (with its default, if any) and what the reference says of it. */
export interface Variable {
  /** Parses the text of the variable when set; a ZodDefault gives the value when unset. */
  schema: z.ZodType;
  /** The type in words: `positive integer`, `URL`, `JSON`, ... */
  type: string;
  /** What it sets, one sentence fragment. */
  meaning: string;
  readBy: ReadBy;
  /** The default in words when the schema has none of its own (it depends on something else). */
  defaultText?: string;
  /** Where the docs explain it (a link relative to docs/reference/). */
  docs?: string;
}

/** The local stack's HTTP port when neither `--port` nor PORT says (lib/local/stack.ts). */
export const DEFAULT_PORT = 8787;

const text = z.string();
const int = z.coerce.number().int();
const positive = int.positive({ error: 'expected a positive integer' });
const nonNegative = int.nonnegative({ error: 'expected a non-negative integer' });
const url = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const bool = z.enum(['true', 'false']);

const GUIDE = {
  local: '../guides/local-stack.md',
  deploy: '../guides/deploy.md',
  who: '../guides/who-may-do-what.md',
  tracing: '../guides/tracing.md',
  models: '#models',
  cost: '../guides/cost-per-run.md',
  lease: '../concepts.md#lease-and-fence',
} as const;

const by =
  (readBy: ReadBy) =>
  <S extends z.ZodType>(schema: S, type: string, meaning: string, extra: Partial<Variable> = {}) => ({
    ...extra,
    schema,
    type,
    meaning,
    readBy,
  });
const runtime = by('runtime');
const handlers = by('handlers');
const models = by('models');
const tracing = by('tracing');
const local = by('local');
const cli = by('cli');
const aws = by('aws');

/** Every variable, by name. The order is the reference's order within each group. */
export const VARIABLES = {
  TABLE_NAME: runtime(
    text,
    'string',
    'the DynamoDB table of runs, events and registries (required in Lambda)',
  ),
  STEP_QUEUE_URL: runtime(text, 'URL', 'the SQS step queue (required in Lambda)'),
  PAYLOAD_BUCKET: runtime(
    text,
    'string',
    'the S3 bucket of large payloads and artifacts (required in Lambda)',
  ),
  AWS_ENDPOINT_URL_DYNAMODB: runtime(url, 'URL', 'a DynamoDB endpoint override (tests: DynamoDB Local)'),
  AWS_ENDPOINT_URL_SQS: runtime(url, 'URL', 'an SQS endpoint override (tests: fauxqs)'),
  AWS_ENDPOINT_URL_S3: runtime(url, 'URL', 'an S3 endpoint override, addressed path-style'),
  AWS_ENDPOINT_URL_LAMBDA: runtime(url, 'URL', 'a Lambda endpoint override (Lambda tools)'),
  AGENT_RUNS_ENVIRONMENT: runtime(text, 'string', 'the environment policy rules match on', {
    docs: '../guides/tools-and-policy.md',
  }),
  AGENT_RUNS_TOOLS: runtime(text, 'JSON', 'a JSON list of HTTP and Lambda tools to register', {
    docs: '../guides/local-stack.md#sample-tools',
  }),
  AGENT_RUNS_MAX_LIVE_RUNS: runtime(positive, 'positive integer', 'live runs per principal (admission)', {
    defaultText: 'none (the CDK stack sets 100)',
    docs: GUIDE.who,
  }),
  AGENT_RUNS_MAX_CREATES_PER_MINUTE: runtime(
    positive,
    'positive integer',
    'run creates per principal per minute',
    {
      defaultText: 'none (the CDK stack sets 120)',
      docs: GUIDE.who,
    },
  ),
  AGENT_RUNS_RISK_TIER_FLOOR: runtime(
    RiskTier,
    '`low`, `standard` or `high`',
    'the lowest risk tier a run gets',
    {
      defaultText: '`standard`',
      docs: GUIDE.who,
    },
  ),
  AGENT_RUNS_WORKSPACES: runtime(
    z.enum(['owned', 'open']),
    '`owned` or `open`',
    'who may use a workspace nobody was granted: nobody but admins (`owned`) or everyone (`open`, for a migration)',
    {
      defaultText: '`owned`',
      docs: GUIDE.who,
    },
  ),
  AGENT_RUNS_MAX_CHILDREN_PER_RUN: runtime(
    positive,
    'positive integer',
    'children one run may start (delegation)',
    {
      defaultText: '16',
      docs: GUIDE.who,
    },
  ),
  AGENT_RUNS_MAX_TREE_DEPTH: runtime(positive, 'positive integer', 'deepest a delegation tree may grow', {
    defaultText: '4',
    docs: GUIDE.who,
  }),
  AGENT_RUNS_MAX_QUEUED_STEERS: runtime(
    positive,
    'positive integer',
    'queued steers one run may hold; one more is rejected `steer_queue_full`',
    { defaultText: '32', docs: GUIDE.who },
  ),
  AGENT_RUNS_REQUIRE_REDUCER_CHECK: runtime(
    bool.default('false'),
    '`true` or `false`',
    'a resume accepting a reducer change needs a passing `reducers check` of the run (`reducer_check_failed`)',
    { docs: '../guides/upgrading-a-reducer.md' },
  ),
  AGENT_RUNS_LEASE_TTL_MS: runtime(positive.default(LEASE_TTL_MS), 'milliseconds', 'lease length', {
    docs: GUIDE.lease,
  }),
  AGENT_RUNS_HEARTBEAT_MS: runtime(
    positive.default(HEARTBEAT_MS),
    'milliseconds',
    'how often a worker renews its lease',
    {
      docs: GUIDE.lease,
    },
  ),
  AGENT_RUNS_CLOCK_SKEW_MS: runtime(
    nonNegative,
    'milliseconds',
    'how long past expiry the sweeper waits to take a lease over',
    {
      defaultText: `a third of the lease (${defaultClockSkewMs(LEASE_TTL_MS)})`,
      docs: GUIDE.lease,
    },
  ),
  AGENT_RUNS_STOP_POLL_MS: runtime(
    positive.default(STOP_POLL_MS),
    'milliseconds',
    'how often an interruptible operation reads its run to see a stop',
    { docs: '../concepts.md#operation' },
  ),
  AGENT_RUNS_SWEEP_INTERVAL_MS: runtime(
    positive.default(SWEEP_INTERVAL_MS),
    'milliseconds',
    "the sweeper's schedule, as `GET /config` reports it (the CDK stack sets its schedule's)",
    { docs: GUIDE.lease },
  ),
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: runtime(positive, 'MB', "the memory a step's GB-seconds are priced at", {
    defaultText: '1024',
    docs: GUIDE.cost,
  }),
  AGENT_RUNS_MAX_OPEN_WAITS: handlers(
    positive.default(32),
    'positive integer',
    'long polls and event streams one caller may hold open at once, per process',
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LIVE_MAX_CONNECTIONS: handlers(
    positive.default(8),
    'positive integer',
    'live sockets one principal may hold open at once (one more is refused 429 `too_many_connections`)',
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LIVE_MAX_SUBSCRIPTIONS: handlers(
    positive.default(16),
    'positive integer',
    'runs one live socket may be subscribed to at once (one more is refused `too_many_subscriptions`)',
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LIVE_SUBSCRIBES_PER_MINUTE: handlers(
    positive.default(60),
    'positive integer',
    'subscribe messages one live socket may send per minute (one more is refused `subscribe_rate_exceeded`)',
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LIVE_REPLAY_BYTES: handlers(
    positive.default(4 * 1024 * 1024),
    'bytes',
    "catch-up replay one principal's live subscribes may cause per replay window, in bytes of the event frames sent (past it a subscribe is refused `replay_budget_exceeded` with `retry_after_ms`)",
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LIVE_REPLAY_WINDOW_MS: handlers(
    positive.default(10_000),
    'milliseconds',
    'the window AGENT_RUNS_LIVE_REPLAY_BYTES is counted in',
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LOCAL_TOKEN: handlers(
    text,
    'string',
    'a bearer token the control function accepts (the local stack)',
  ),
  AGENT_RUNS_LOCAL_PRINCIPAL: handlers(text, 'string', 'the user that token authenticates', {
    defaultText: '`local-user`',
  }),
  CONSOLE_CONFIG: handlers(text, 'JSON', "the web console's configuration (lib/http/console-config.ts)", {
    defaultText: 'sign in with a pasted token',
    docs: '../guides/web-console.md',
  }),
  SWEEP_PASS_GAP_MS: handlers(
    nonNegative.default(SWEEP_PASS_GAP_MS),
    'milliseconds',
    'the gap between the two sweeper passes of one scheduled invocation',
  ),
  LIVE_CALLBACK_URL: handlers(url, 'URL', "the WebSocket API stage's management endpoint (live functions)"),
  EVENT_BUS_NAME: handlers(text, 'string', "the lifecycle notifications' EventBridge bus (stream function)"),
  JWT_ISSUER: handlers(text, 'URL', 'the issuer of the tokens a live connection must carry'),
  JWT_AUDIENCES: handlers(text, 'comma-separated list', 'the audiences a live connection may carry'),
  POWERTOOLS_SERVICE_NAME: handlers(
    text,
    'string',
    "the function's Powertools service name (read by Powertools)",
  ),
  POWERTOOLS_METRICS_NAMESPACE: handlers(
    text,
    'string',
    'the CloudWatch metrics namespace (read by Powertools)',
  ),
  POWERTOOLS_LOG_LEVEL: handlers(
    text,
    'string',
    'the log level (`DEBUG`, `INFO`, `WARN`, `ERROR`, `SILENT`)',
    {
      defaultText: '`WARN` in the local stack',
    },
  ),
  BEDROCK_MODEL_ID: models(text, 'comma-separated list', 'Bedrock model ids served as model-turn functions', {
    docs: GUIDE.models,
  }),
  BEDROCK_REGION: models(text, 'string', 'the region Bedrock is called in', {
    defaultText: "the function's",
  }),
  OPENAI_BASE_URL: models(text, 'URL', 'an OpenAI-compatible chat-completions endpoint', {
    docs: GUIDE.models,
  }),
  OPENAI_MODEL: models(text, 'string', 'the model of that endpoint', { docs: GUIDE.models }),
  OPENAI_API_KEY: models(text, 'string', 'its API key', { docs: GUIDE.models }),
  OPENAI_API_KEY_SECRET: models(text, 'string', 'a Secrets Manager secret holding its API key', {
    docs: GUIDE.models,
  }),
  OPENAI_API_KEY_MAX_AGE_SECONDS: models(text, 'seconds', 'how long a key read from the secret is cached', {
    defaultText: '300',
  }),
  AGENT_RUNS_MODELS: models(text, 'JSON', 'AI SDK models as data', { docs: GUIDE.models }),
  ANTHROPIC_API_KEY: models(text, 'string', "an `anthropic` AI SDK model's key when its entry names none", {
    docs: GUIDE.models,
  }),
  GOOGLE_GENERATIVE_AI_API_KEY: models(
    text,
    'string',
    "a `google` AI SDK model's key when its entry names none",
    { docs: GUIDE.models },
  ),
  AGENT_RUNS_DEFAULT_MODEL: models(text, '`bedrock`, `openai` or a path', 'the default model-turn function', {
    docs: GUIDE.models,
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: tracing(text, 'URL', 'where OpenTelemetry traces of runs go (OTLP/HTTP)', {
    defaultText: 'tracing off',
    docs: GUIDE.tracing,
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: tracing(
    text,
    'URL',
    'the traces endpoint itself (wins over the one above)',
    {
      docs: GUIDE.tracing,
    },
  ),
  OTEL_SDK_DISABLED: tracing(text, '`true` or `false`', 'turns tracing off', { docs: GUIDE.tracing }),
  OTEL_SERVICE_NAME: tracing(text, 'string', "the spans' service name", { docs: GUIDE.tracing }),
  OTEL_TRACES_EXPORTER: tracing(text, 'string', '`none` turns tracing off', { docs: GUIDE.tracing }),
  AGENT_RUNS_OTEL_CAPTURE_CONTENT: tracing(
    bool.default('false'),
    '`true` or `false`',
    'payload text (messages, tool arguments and results) in spans',
    { docs: '../guides/tracing.md#no-payload-text-unless-you-ask' },
  ),
  PORT: local(
    int.min(0).max(65_535, { error: 'expected a port, 0..65535' }).default(DEFAULT_PORT),
    'port',
    "the local stack's HTTP port (or `npm start --port`)",
    {
      docs: GUIDE.local,
    },
  ),
  AGENT_RUNS_LIVE_IDLE_MS: local(
    positive.default(600_000),
    'milliseconds',
    "how long the local live socket stays open without a client frame (API Gateway's idle timeout: 10 min)",
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_LIVE_MAX_CONNECTION_MS: local(
    positive.default(7_200_000),
    'milliseconds',
    "how long a local live socket may stay open at most (API Gateway's limit: 2 h)",
    { docs: GUIDE.who },
  ),
  AGENT_RUNS_DYNAMODB_JAVA_OPTS: local(text, 'whitespace-separated flags', "DynamoDB Local's JVM flags", {
    defaultText: 'C1 only and the serial GC',
  }),
  JAVA_HOME: local(text, 'path', 'the Java that runs DynamoDB Local', { defaultText: '`java` on the PATH' }),
  CHROMIUM_PATH: local(text, 'path', "the browser of the console's tests", {
    defaultText: '`/usr/bin/chromium`',
    docs: '../guides/web-console.md',
  }),
  [CLI_ENV.AGENT_RUNS_URL]: cli(text, 'URL', "the CLI's API URL", {
    defaultText: '`.agent-runs/local.json`',
    docs: GUIDE.local,
  }),
  [CLI_ENV.AGENT_RUNS_TOKEN]: cli(text, 'string', "the CLI's bearer token", {
    defaultText: '`.agent-runs/local.json`',
    docs: GUIDE.deploy,
  }),
  [CLI_ENV.AGENT_RUNS_WS_URL]: cli(
    text,
    'URL',
    'the live WebSocket URL for `events --follow` (or `--ws-url`)',
    {
      docs: '../guides/client-driven.md',
    },
  ),
  AWS_REGION: aws(text, 'string', "the function's region (set by Lambda)"),
  AWS_DEFAULT_REGION: aws(text, 'string', 'the region when AWS_REGION is unset'),
  AWS_LAMBDA_FUNCTION_NAME: aws(
    text,
    'string',
    "the function's name, a span resource attribute (set by Lambda)",
  ),
} as const satisfies Record<string, Variable>;

export type VariableName = keyof typeof VARIABLES;

/** The variable names, each its own value: `ENV.TABLE_NAME === 'TABLE_NAME'`. */
export const ENV = Object.fromEntries(Object.keys(VARIABLES).map((name) => [name, name])) as {
  readonly [K in VariableName]: K;
};

/** Every variable name, in the table's order. */
export const NAMES = Object.keys(VARIABLES) as VariableName[];

type ValueOf<S> =
  S extends z.ZodDefault<z.ZodType> ? z.output<S> : S extends z.ZodType ? z.output<S> | undefined : never;
/** The parsed configuration: each variable's value, its default when unset, else undefined. */
export type Config = { readonly [K in VariableName]: ValueOf<(typeof VARIABLES)[K]['schema']> };

/** A variable set to something its schema refuses, or missing where it is required. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  readonly code = 'config_invalid';
  readonly variable: VariableName;
  constructor(variable: VariableName, message: string, options?: ErrorOptions) {
    super(message, options);
    this.variable = variable;
  }
}

/** The last parse of each env object, with the values it was parsed from (a test may change them). */
const parsedOnce = new WeakMap<object, { fingerprint: string; config: Config }>();

/**
 * Parses every variable of `env` (empty counts as unset) into a Config, defaults applied; the
 * answer for one env object is kept while its values stay the same, so `process.env` is parsed
 * once per process. Throws ConfigError naming the first variable set to a value its schema refuses.
 */
export function configFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): Config {
  const fingerprint = JSON.stringify(NAMES.map((name) => env[name] ?? null));
  const kept = parsedOnce.get(env);
  if (kept !== undefined && kept.fingerprint === fingerprint) return kept.config;
  const out: Record<string, unknown> = {};
  for (const [name, variable] of Object.entries(VARIABLES) as [VariableName, Variable][]) {
    const raw = env[name];
    const given = raw === undefined || raw.trim() === '' ? undefined : raw;
    if (given === undefined && !(variable.schema instanceof z.ZodDefault)) {
      out[name] = undefined;
      continue;
    }
    const parsed = variable.schema.safeParse(given);
    if (!parsed.success) {
      const why = parsed.error.issues[0]?.message ?? 'invalid';
      throw new ConfigError(
        name,
        `invalid ${name}: expected ${variable.type}, got ${JSON.stringify(raw)} (${why})`,
      );
    }
    out[name] = parsed.data;
  }
  const config = out as Config;
  parsedOnce.set(env, { fingerprint, config });
  return config;
}

/** The value of a variable a part cannot run without. Throws ConfigError naming it when unset. */
export function required<K extends VariableName>(config: Config, name: K): NonNullable<Config[K]> {
  const value = config[name];
  if (value === undefined || value === null)
    throw new ConfigError(name, `missing environment variable ${name}`);
  return value as NonNullable<Config[K]>;
}

/**
 * A deployment's admission settings (core/admission.ts AdmissionConfig) from its environment:
 * the AGENT_RUNS_MAX_* limits and AGENT_RUNS_RISK_TIER_FLOOR, AGENT_RUNS_WORKSPACES; unset means
 * unlimited / standard / owned (the two tree bounds: 16 and 4). Throws ConfigError.
 */
export function admissionFromEnv(env: Readonly<Record<string, string | undefined>>): AdmissionConfig {
  const c = configFromEnv(env);
  const pairs = [
    ['max_live_runs', c.AGENT_RUNS_MAX_LIVE_RUNS],
    ['max_creates_per_minute', c.AGENT_RUNS_MAX_CREATES_PER_MINUTE],
    ['risk_tier_floor', c.AGENT_RUNS_RISK_TIER_FLOOR],
    ['workspaces', c.AGENT_RUNS_WORKSPACES],
    ['max_children_per_run', c.AGENT_RUNS_MAX_CHILDREN_PER_RUN],
    ['max_tree_depth', c.AGENT_RUNS_MAX_TREE_DEPTH],
    ['max_queued_steers', c.AGENT_RUNS_MAX_QUEUED_STEERS],
  ] as const;
  return Object.fromEntries(pairs.filter(([, v]) => v !== undefined)) as AdmissionConfig;
}
