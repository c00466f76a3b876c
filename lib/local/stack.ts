/**
 * The local stack behind `npm start` / `agent-runs start`: the same handlers as in AWS, on a
 * laptop. It starts DynamoDB Local (in memory, or persisted under a directory) and fauxqs (SQS +
 * S3), creates the table, step queue, DLQ and bucket from the shared definitions, and then:
 * - serves the HTTP API on 127.0.0.1 through the control handler (requests turned into API
 *   Gateway v2 events by lib/local/gateway.ts), authenticated by JWTs of the stack's own issuer,
 *   verified as API Gateway's JWT authorizer would (lib/local/identity.ts; `agent-runs token`);
 * - polls the step queue and invokes the step handler like the SQS event source mapping
 *   (lib/local/poller.ts: batches, visibility timeout, batchItemFailures, DLQ after 5 receives);
 * - invokes the sweeper handler on a timer (one pass every `sweepIntervalMs`);
 * - reads the table's stream and serves the live event WebSocket (lib/local/live.ts), appending
 *   lifecycle notifications to a file.
 * One runtime (engine, store, function registry, tools, models) serves all three, so artifacts
 * registered over HTTP and tools registered in-process are seen by the step worker.
 * docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { readLocalState, removeLocalState, writeLocalState } from '../client/state-file.ts';
import { ConfigError, configFromEnv, ENV } from '../config.ts';
import {
  type CountingMetrics,
  createCountingMetrics,
  engineLog,
  type LogSink,
} from '../handlers/observability.ts';
import type { ConsoleConfigInput } from '../http/console-config.ts';
import { LOCAL_PRINCIPAL } from '../http/index.ts';
import { startProgress } from '../progress.ts';
import type { Runtime, RuntimeConfig } from '../runtime.ts';
import type { SandboxLimits, SandboxReducerHost } from '../sandbox/index.ts';
import { flushTraces } from '../telemetry/otel.ts';
import { bannerLines } from './banner.ts';
import { type Gateway, GatewayError, startGateway } from './gateway.ts';
import {
  agentRunsDirOf,
  type DefaultIdentity,
  defaultIdentity,
  identityOfToken,
  localIssuer,
  withJwtAuthorizer,
} from './identity.ts';
import type { LocalIssuer } from './issuer.ts';
import { type LocalLive, startLocalLive } from './live.ts';
import type { Poller } from './poller.ts';
import { ensureResources, type LocalResources } from './resources.ts';
import { type LocalServices, LocalServicesError, startLocalServices } from './services.ts';
import { consoleSiteOf, controlHandler, runtimeOf, startSweeperTimer, stepPollerOf } from './stack-parts.ts';

/** Where `npm run console:build` writes the web console (served at /console). */
export const CONSOLE_DIST_DIR = fileURLToPath(new URL('../../console/dist/', import.meta.url));

/** The HTTP port when neither the option nor PORT says otherwise. */
export { DEFAULT_PORT } from '../config.ts';
/** The step queue's visibility timeout on the local stack (s): above a step's 45 s deadline. */
export const LOCAL_VISIBILITY_TIMEOUT_SECONDS = 60;

/** The worker slot of a local stack over persisted data (one stack process per data directory). */
export const LOCAL_WORKER_SLOT = 'local-stack';

/**
 * The options with the stack's worker slot: a stack over persisted data fills one slot, so that,
 * restarted, it goes on at once with the runs its killed predecessor held (EngineOptions.workerSlot)
 * instead of waiting their leases out.
 */
function slotted(options: LocalStackOptions): LocalStackOptions {
  const slot = options.workerSlot ?? (options.persistDir !== undefined ? LOCAL_WORKER_SLOT : undefined);
  return slot === undefined ? options : { ...options, workerSlot: slot };
}

/** Takes over, in the background, the runs the previous stack process of the slot held. */
function recoverPredecessorRuns(runtime: Runtime, logger: LogSink): void {
  runtime.engine.recoverPredecessors().then(
    (report) => {
      if (report.taken_over > 0) logger.info('runs of the previous stack process taken over', { ...report });
    },
    (err: unknown) =>
      logger.warn("the previous stack process's runs are left to the sweeper", { error: String(err) }),
  );
}

export interface LocalStackOptions {
  /** HTTP port on 127.0.0.1: this option, else env PORT, else 8787; 0 picks a free port. */
  port?: number;
  /** Keep DynamoDB, SQS and S3 data under this directory; default: in memory. */
  persistDir?: string;
  /**
   * The worker slot of this stack's step poller (EngineOptions.workerSlot): default
   * LOCAL_WORKER_SLOT with `persistDir`, else none. One live stack per slot and table.
   */
  workerSlot?: string;
  /** Registers in-process tools (see RuntimeConfig). */
  registerTools?: RuntimeConfig['registerTools'];
  /** Model-turn functions by path (e.g. a scripted model at the default path). */
  modelFunctions?: RuntimeConfig['modelFunctions'];
  /** What the banner says of each `modelFunctions` path (default: `(given in code)`). */
  modelDescriptions?: Record<string, string>;
  toolPolicy?: RuntimeConfig['toolPolicy'];
  /** Reducer sandbox limits (default 200 ms, 64 MiB, 256 KiB stack, as in AWS). */
  sandboxLimits?: Partial<SandboxLimits>;
  /** Fault injection at the engine's crash points (tests). */
  faults?: RuntimeConfig['faults'];
  /** Wraps the step queue (chaos: duplicated and delayed step messages). */
  wrapQueue?: RuntimeConfig['wrapQueue'];
  /** How long one ReceiveMessage long-polls, in ms (rounded up to whole seconds, 1 000..20 000; default 1 000). */
  pollIntervalMs?: number;
  /** Step batches handled at once (default 4); 0: no step poller here (another process consumes the step queue). */
  pollerConcurrency?: number;
  /** Step queue visibility timeout in seconds (default 60). */
  visibilityTimeoutSeconds?: number;
  /** Time between sweeper passes in ms (default 10 000); 0 turns the timer off. */
  sweepIntervalMs?: number;
  /** Clock-skew allowance of lease takeover (ms; default a third of the lease). */
  clockSkewMs?: number;
  leaseTtlMs?: number;
  heartbeatMs?: number;
  wakeGraceMs?: number;
  /**
   * The directory whose `.agent-runs/local.json` receives `{url, token, pid}` for the CLI
   * (lib/client/state-file.ts); default the working directory; false: write none.
   */
  stateDir?: string | false;
  /** Called once the stack serves, with the start-up time. */
  onReady?: (stack: LocalStack) => void;
  /** Called as each of the START_STEPS start-up steps ends, with what it did. */
  onStep?: (done: string) => void;
  /** Log sink of the handlers and the stack; default a Powertools Logger at POWERTOOLS_LOG_LEVEL (default WARN). */
  logger?: LogSink;
  /** The built web console served at /console (default CONSOLE_DIST_DIR); false: not served. */
  consoleDir?: string | false;
  /** How the console signs in (default: a pasted token; the start link carries it). */
  consoleAuth?: ConsoleConfigInput['auth'];
  /** The live event WebSocket's port on 127.0.0.1 (default: a free one). */
  livePort?: number;
  /**
   * Where run lifecycle notifications (EventBridge in AWS) are appended, one JSON line each
   * (default `.agent-runs/notifications.jsonl` under the state directory, else the OS temp dir).
   */
  notificationsFile?: string;
}

/** A running local stack. */
export interface LocalStack {
  /** `http://127.0.0.1:{port}` */
  url: string;
  port: number;
  /** The default user's bearer token (a JWT of `issuer`, admin rights): every route but /health, /openapi.json and /console needs one. */
  token: string;
  /** The stack's token issuer: `issuer.sign({ sub, groups, system })` makes a token for any caller (`agent-runs token`). */
  issuer: LocalIssuer;
  /** Who the token names and where it is kept (with --persist, kept across restarts). */
  identity: DefaultIdentity;
  /**
   * The web console's address with the token in the URL fragment (`/console/#token=...`: a
   * fragment never reaches a server or its logs); null when the console is not served.
   */
  consoleUrl: string | null;
  /** The directory the console is served from, or null. */
  consoleDir: string | null;
  runtime: Runtime;
  services: LocalServices;
  resources: LocalResources;
  /** The step queue's visibility timeout as set at start (s). */
  visibilityTimeoutSeconds: number;
  /** Milliseconds from the call to ready. */
  startupMs: number;
  /** The state file written, or null. */
  stateFile: string | null;
  poller: Poller;
  /** Totals of the handlers' metrics (Steps, Operations, Takeovers, ...). */
  metrics: CountingMetrics;
  /** `ws://127.0.0.1:{port}`: the live event socket (the WebSocket API's protocol). */
  wsUrl: string;
  /** The file the lifecycle notifications are appended to. */
  notificationsFile: string;
  live: LocalLive;
  /** Stops the gateway, the poller, the sweeper timer and the services; removes the state file. Idempotent. */
  stop(): Promise<void>;
}

/** How many start-up steps report to `onStep`: port, emulators, resources, runtime, live stream. */
export const START_STEPS = 5;

/** Stable codes of {@link LocalStackError}: the LocalServicesError codes plus the gateway's. */
export type LocalStackErrorCode =
  | LocalServicesError['code']
  | GatewayError['code']
  | 'invalid_port'
  | 'resources_failed';

/** Why the local stack did not start, with a message a person can act on. */
export class LocalStackError extends Error {
  override name = 'LocalStackError';
  readonly code: LocalStackErrorCode;
  constructor(code: LocalStackErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** The port to serve on: option, else PORT, else 8787. Throws LocalStackError invalid_port on a bad value. */
export function resolvePort(option: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  if (option === undefined) {
    try {
      return configFromEnv(env).PORT;
    } catch (err) {
      if (err instanceof ConfigError && err.variable === ENV.PORT)
        throw new LocalStackError('invalid_port', `${err.message}: use 0..65535`, { cause: err });
      throw err;
    }
  }
  if (!Number.isInteger(option) || option < 0 || option > 65_535) {
    throw new LocalStackError('invalid_port', `invalid port ${String(option)}: use 0..65535`);
  }
  return option;
}

/**
 * Starts the local stack; resolves once it serves. The HTTP port is bound first, so a taken port
 * fails in milliseconds, before Java starts. Throws LocalStackError: `port_in_use`,
 * `listen_failed`, `invalid_port`, `java_not_found`, `java_unsupported`, `emulator_unavailable`,
 * `service_exited`, `startup_timeout`, `resources_failed` (and rethrows what `registerTools`
 * throws); whatever had started is stopped.
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const started = performance.now();
  const logger =
    options.logger ?? new Logger({ serviceName: 'agent-runs-local', logLevel: defaultLogLevel() });
  const port = resolvePort(options.port);
  const stateDir = options.stateDir === false ? null : resolve(options.stateDir ?? process.cwd());
  // The default user's token, as `npm start` prints it (admin: it may register functions).
  const issuer = await localIssuer(stateDir); // with a data folder, the token is kept there
  const identity = await defaultIdentity(
    issuer,
    LOCAL_PRINCIPAL.id,
    options.persistDir,
    Math.floor(Date.now() / 1000),
  );
  const { token } = identity;
  const step = options.onStep ?? (() => {});
  const visibility = options.visibilityTimeoutSeconds ?? LOCAL_VISIBILITY_TIMEOUT_SECONDS;

  const { gateway, services, resources, config } = await startBackends(options, port, logger, step);
  let reducers: SandboxReducerHost | undefined;
  const abandon = () => Promise.all([gateway.stop(), services.stop(), reducers?.close()]);
  const metrics = createCountingMetrics();
  let runtime: Runtime;
  try {
    ({ runtime, reducers } = await runtimeOf(config, slotted(options), engineLog(logger, metrics)));
  } catch (err) {
    await abandon();
    throw err;
  }
  try {
    await runtime.clients.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: config.queueUrl,
        Attributes: { VisibilityTimeout: String(visibility) },
      }),
    );
  } catch (err) {
    runtime.close();
    await abandon();
    throw new LocalStackError(
      'resources_failed',
      `cannot set the step queue's visibility timeout: ${String(err)}`,
      {
        cause: err,
      },
    );
  }

  const sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
  const consoleDir = options.consoleDir ?? CONSOLE_DIST_DIR;
  const poller = stepPollerOf(runtime, resources, services.region, options, { visibility, logger, metrics });

  const sweeperTimer = startSweeperTimer(runtime, logger, metrics, sweepIntervalMs);
  recoverPredecessorRuns(runtime, logger);
  step('runtime, step poller and sweeper running');

  let live: LocalLive;
  try {
    live = await startLocalLive({
      runtime,
      services,
      tableName: resources.tableName,
      authenticate: (presented) => identityOfToken(issuer, presented),
      notificationsFile: options.notificationsFile ?? join(agentRunsDirOf(stateDir), 'notifications.jsonl'),
      ...(options.livePort !== undefined ? { port: options.livePort } : {}),
      logger,
    });
  } catch (err) {
    await Promise.all([poller.stop(), sweeperTimer.stop()]);
    runtime.close();
    await abandon();
    throw new LocalStackError('resources_failed', `cannot start the live event stream: ${String(err)}`, {
      cause: err,
    });
  }
  // The console's configuration names the live socket, so the API is served once it listens.
  const site = consoleSiteOf(consoleDir, options, sweepIntervalMs, live.wsUrl);
  gateway.setHandler(
    withJwtAuthorizer(issuer, controlHandler(runtime, engineLog(logger, metrics), site, sweepIntervalMs)),
  );
  step('live event stream serving');
  const stateFile =
    stateDir === null
      ? null
      : writeLocalState({ url: gateway.url, token, pid: process.pid, ws_url: live.wsUrl }, stateDir);

  let stopping: Promise<void> | undefined;
  const stack: LocalStack = {
    url: gateway.url,
    port: gateway.port,
    token,
    issuer,
    identity,
    consoleUrl: site === undefined ? null : `${gateway.url}/console/#token=${encodeURIComponent(token)}`,
    consoleDir: site === undefined ? null : site.assetsDir,
    runtime,
    services,
    resources,
    visibilityTimeoutSeconds: visibility,
    startupMs: Math.round(performance.now() - started),
    stateFile,
    poller,
    metrics,
    wsUrl: live.wsUrl,
    notificationsFile: live.notificationsFile,
    live,
    stop() {
      stopping ??= (async () => {
        await gateway.stop();
        await Promise.all([poller.stop(), sweeperTimer.stop(), live.stop()]);
        runtime.close();
        await Promise.all([services.stop(), reducers?.close(), flushTraces()]);
        if (stateDir !== null) removeOwnState(stateDir, process.pid);
      })();
      return stopping;
    },
  };
  options.onReady?.(stack);
  return stack;
}

/**
 * Binds the HTTP port (first, so a taken port fails before Java starts), then starts the
 * emulators and creates the table, queues and bucket. Throws LocalStackError; whatever had
 * started is stopped.
 */
async function startBackends(
  options: LocalStackOptions,
  port: number,
  logger: LogSink,
  step: (done: string) => void,
) {
  let gateway: Gateway;
  try {
    gateway = await startGateway({ handler: null, port, logger });
  } catch (err) {
    if (err instanceof GatewayError) throw new LocalStackError(err.code, err.message, { cause: err });
    throw err;
  }
  step(`HTTP port ${gateway.port} bound`);

  let services: LocalServices;
  try {
    services = await startLocalServices({
      ...(options.persistDir !== undefined ? { persistDir: options.persistDir } : {}),
      startupTimeoutMs: 30_000,
    });
  } catch (err) {
    await gateway.stop();
    if (err instanceof LocalServicesError) throw new LocalStackError(err.code, explain(err), { cause: err });
    throw err;
  }

  step('DynamoDB Local and fauxqs up');
  let resources: LocalResources;
  try {
    resources = await ensureResources(services);
  } catch (err) {
    await Promise.all([gateway.stop(), services.stop()]);
    throw new LocalStackError('resources_failed', `cannot create the local resources: ${String(err)}`, {
      cause: err,
    });
  }
  step('table, step queue and bucket ready');
  // fauxqs names queues http://sqs.{region}.localhost:{port}/..., a host that need not resolve.
  const queueUrl = new URL(new URL(resources.queueUrl).pathname, services.sqsEndpoint).toString();
  resources = { ...resources, queueUrl };
  const config = {
    endpoints: {
      region: services.region,
      credentials: services.credentials,
      dynamoEndpoint: services.dynamoEndpoint,
      sqsEndpoint: services.sqsEndpoint,
      s3Endpoint: services.s3Endpoint,
    },
    tableName: resources.tableName,
    queueUrl,
    bucketName: resources.bucketName,
  };
  return { gateway, services, resources, config };
}

/** A sentence a person can act on, for each start-up failure of the services. */
function explain(err: LocalServicesError): string {
  switch (err.code) {
    case 'java_not_found':
      return `${err.message}\nOn macOS: \`brew install openjdk@17\`; or point JAVA_HOME at a Java 17+ installation.`;
    case 'java_unsupported':
      return `${err.message}\nInstall Java 17 or newer, or point JAVA_HOME at one.`;
    case 'port_in_use':
      return `${err.message}\nAn emulator port is taken; try again (the emulators pick free ports).`;
    default:
      return err.message;
  }
}

function defaultLogLevel(): 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT' {
  const level = (configFromEnv().POWERTOOLS_LOG_LEVEL ?? 'WARN').toUpperCase();
  return level === 'DEBUG' || level === 'INFO' || level === 'ERROR' || level === 'SILENT' ? level : 'WARN';
}

/** Removes the state file if it still names this process (another stack may have replaced it). */
function removeOwnState(dir: string, pid: number): void {
  let state: ReturnType<typeof readLocalState>;
  try {
    state = readLocalState(dir);
  } catch {
    return; // malformed: not one this process wrote
  }
  if (state !== null && state.pid === pid) removeLocalState(dir);
}

export interface RunLocalStackOptions extends LocalStackOptions {
  /** How the user runs the CLI, for the banner's commands (default `npx agent-runs`). */
  cli?: string;
  /** Where the banner and shutdown lines go (default: stdout). */
  print?: (line: string) => void;
  /** Report the start-up steps as they end (lib/progress.ts: a bar on `progressTty`, else lines). */
  progress?: boolean;
  progressTty?: NodeJS.WritableStream;
  /** Exit the process after a signal-triggered stop (default true; exit code 0). */
  exitOnStop?: boolean;
  /**
   * How often to check that the parent process is still there, in ms (default 1 000; 0: no
   * check). Once this process is orphaned (its parent, e.g. npm, was killed: `process.ppid`
   * changes; under an npm script, also once npm itself is gone), the stack stops as on SIGTERM,
   * so that it does not linger without its parent.
   */
  parentCheckMs?: number;
}

/**
 * The foreground form for `npm start` and `agent-runs start`: starts the stack, prints its URL,
 * token, state file and start-up time, and stops it cleanly on SIGINT or SIGTERM (poller,
 * gateway, sweeper timer, services), then exits 0. A second signal during the stop exits 1 at
 * once. It stops the same way when its parent process dies (see `parentCheckMs`). Throws LocalStackError when the stack cannot start (print `error.message` and exit 1).
 */
export async function runLocalStack(options: RunLocalStackOptions = {}): Promise<LocalStack> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  let stack: LocalStack | undefined;
  let signalled: NodeJS.Signals | undefined;
  const finish = (running: LocalStack) => {
    running.stop().then(
      () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        clearInterval(parentCheck);
        print('stopped');
        if (options.exitOnStop ?? true) process.exit(0);
      },
      (err: unknown) => {
        print(`stop failed: ${String(err)}`);
        process.exit(1);
      },
    );
  };
  // Installed before the start, so that Ctrl-C while Java starts still stops it cleanly
  // (a signal's default action would exit without the 'exit' hooks that kill DynamoDB Local).
  function onSignal(signal: NodeJS.Signals): void {
    if (signalled !== undefined) {
      print(`${signal} again: exiting without a clean stop`);
      process.exit(1); // runs the 'exit' hooks: DynamoDB Local is killed
    }
    signalled = signal;
    print(`${signal}: stopping the local stack...`);
    if (stack !== undefined) finish(stack);
  }
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const parentCheck = watchParent(options.parentCheckMs ?? 1_000, () => {
    if (signalled !== undefined) return;
    signalled = 'SIGHUP';
    print(`parent process gone: stopping the local stack...`);
    if (stack !== undefined) finish(stack);
  });
  const progress = options.progress
    ? startProgress({
        label: 'start',
        total: START_STEPS,
        unit: 'steps',
        out: print,
        tty: options.progressTty,
        pace: false,
      })
    : null;
  try {
    stack = await startLocalStack({
      ...options,
      onStep: (done) => {
        progress?.tick(1, done);
        options.onStep?.(done);
      },
    });
  } catch (err) {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    clearInterval(parentCheck);
    throw err;
  } finally {
    progress?.stop();
  }
  if (signalled !== undefined) {
    finish(stack);
    return stack;
  }
  for (const line of await bannerLines(stack, options)) print(line);
  return stack;
}

/**
 * Calls `onOrphaned` once when `process.ppid` is no longer the parent this process started
 * with (the parent died and the process was re-parented to init or a subreaper). Under an npm
 * script (env npm_lifecycle_event) the parent may be the script's `sh -c`, which outlives a
 * killed npm: then npm, the grandparent, is watched too (gone: kill(pid, 0) fails ESRCH).
 * Checks every `everyMs` on an unref'd timer; returns the timer (undefined when `everyMs` is 0).
 */
function watchParent(everyMs: number, onOrphaned: () => void): NodeJS.Timeout | undefined {
  if (everyMs <= 0) return undefined;
  const parent = process.ppid;
  const npm = process.env.npm_lifecycle_event ? parentOf(parent) : undefined;
  const timer = setInterval(() => {
    if (process.ppid === parent && (npm === undefined || exists(npm))) return;
    clearInterval(timer);
    onOrphaned();
  }, everyMs);
  timer.unref();
  return timer;
}

/** The parent pid of `pid` (Linux /proc, else `ps`); undefined when unknown or init. */
function parentOf(pid: number): number | undefined {
  let ppid: number;
  try {
    if (process.platform === 'linux') {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } else if (process.platform !== 'win32') {
      ppid = Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
    } else return undefined;
  } catch {
    return undefined;
  }
  return Number.isInteger(ppid) && ppid > 1 ? ppid : undefined;
}

/** Whether `pid` is a live process (on Linux, a zombie not yet reaped counts as gone). */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH'; // EPERM: there, another user's
  }
  if (process.platform !== 'linux') return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false; // gone between the two looks
  }
}
