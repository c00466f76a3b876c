/**
 * Cold starts of the synthesized Lambda bundles (issue 24, point 7). Synthesizes the CDK stack
 * into cdk.out (reused when newer than cdk/, lib/, functions/ and package-lock.json), then, for
 * each function's asset (index.mjs), N times: a fresh Node process imports the bundle (init time)
 * and calls its handler once with a minimal event of its kind (first-call time) against the local
 * services (DynamoDB Local + fauxqs, started here). Beside it, `node -e 0` in the same run.
 * Also printed: the JS the import loads (index.mjs and the chunks it imports statically; the
 * chunks of dynamic imports load on the call that needs them) and the import's CPU time (user +
 * system, less sensitive than wall time to a loaded machine). Prints medians and the targets: import <= 100 ms over `node -e 0`; a function that runs no
 * reducer carries no reducer runtime (QuickJS wasm, Starlark). Asserts nothing.
 * Run: `npm run bench:cold [-- N]` (N = 5 default).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureResources } from '../lib/local/resources.ts';
import { LOCAL_CREDENTIALS, startLocalServices } from '../lib/local/services.ts';

const N = Number(process.argv[2] ?? 5);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = join(ROOT, 'cdk.out');
const TARGET_MS = 100;
const REDUCER_FILES = ['emscripten-module.wasm', 'starlark-runtime.wasm', 'wasm_exec.js'];

const newest = (path: string): number => {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((f) => newest(join(path, f))));
};
const template = join(OUT, 'AgentRuns.template.json');
const sources = ['cdk', 'lib', 'functions', 'console', 'package-lock.json'].map((p) => join(ROOT, p));
if (!existsSync(template) || statSync(template).mtimeMs < Math.max(...sources.map(newest))) {
  console.log('synthesizing the stack (npx cdk synth --quiet -c model=none) ...');
  execFileSync('npx', ['cdk', 'synth', '--quiet', '-c', 'model=none'], { cwd: ROOT, stdio: 'inherit' });
} else console.log('reusing cdk.out (newer than its sources)');

interface Resource {
  Type: string;
  Metadata?: Record<string, string>;
}
const resources: Record<string, Resource> = JSON.parse(readFileSync(template, 'utf8')).Resources;
const functions = Object.entries(resources)
  .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path'] !== undefined)
  .map(([id, r]) => ({
    name: id.replace(/Function[0-9A-F]{8}$/, '').toLowerCase(),
    dir: join(OUT, r.Metadata?.['aws:asset:path'] ?? ''),
  }))
  .filter((f) => existsSync(join(f.dir, 'index.mjs')));

/** A minimal valid event per function kind: the point is first-call time, not behaviour. */
const EVENTS: Record<string, unknown> = {
  control: {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/health',
    rawQueryString: '',
    headers: { host: 'localhost' },
    requestContext: { http: { method: 'GET', path: '/health', sourceIp: '127.0.0.1' }, stage: '$default' },
    isBase64Encoded: false,
  },
  step: { Records: [] },
  sweeper: {},
  live: { requestContext: { routeKey: '$disconnect', connectionId: 'bench', eventType: 'DISCONNECT' } },
  stream: { Records: [] },
};

const dirSize = (path: string): number => {
  const s = statSync(path);
  return s.isDirectory() ? readdirSync(path).reduce((n, f) => n + dirSize(join(path, f)), 0) : s.size;
};
/** Bytes of `index.mjs` and the chunks it imports statically (`import ... from "./x.mjs"`), transitively. */
const loadedAtImport = (dir: string): number => {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(dir, file), 'utf8');
    for (const m of text.matchAll(/(?:\bfrom|\bimport)\s*["']\.\/([^"']+\.mjs)["']/g)) if (m[1]) visit(m[1]);
  };
  visit('index.mjs');
  return [...seen].reduce((n, f) => n + statSync(join(dir, f)).size, 0);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;

/** Child: import the bundle, call its handler once, print both times (ms) as JSON. */
const CHILD = `
const c0 = process.cpuUsage();
const t0 = performance.now();
const m = await import(process.env.BENCH_MODULE);
const t1 = performance.now();
const cpu = process.cpuUsage(c0);
let error = null;
try { await m.handler(JSON.parse(process.env.BENCH_EVENT), { functionName: 'bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 60000 }); }
catch (e) { error = String(e?.message ?? e).slice(0, 120); }
const t2 = performance.now();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, importCpuMs: (cpu.user + cpu.system) / 1000, callMs: t2 - t1, error }) + '\\n');
process.exit(0);
`;

const wall = (args: string[], env?: NodeJS.ProcessEnv) => {
  const t = performance.now();
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  return { ms: performance.now() - t, r };
};

const services = await startLocalServices();
try {
  const res = await ensureResources(services);
  const baseEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    AWS_REGION: services.region,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: services.dynamoEndpoint,
    AWS_ENDPOINT_URL_SQS: services.sqsEndpoint,
    AWS_ENDPOINT_URL_S3: services.s3Endpoint,
    TABLE_NAME: res.tableName,
    STEP_QUEUE_URL: res.queueUrl,
    PAYLOAD_BUCKET: res.bucketName,
    POWERTOOLS_METRICS_NAMESPACE: 'bench',
    POWERTOOLS_DEV: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    SWEEP_PASS_GAP_MS: '0',
    LIVE_CALLBACK_URL: 'http://127.0.0.1:1',
    JWT_ISSUER: 'http://127.0.0.1:1/issuer',
    JWT_AUDIENCES: 'bench',
    EVENT_BUS_NAME: 'bench',
    CONSOLE_CONFIG: '{}',
  };
  const baseline = median(Array.from({ length: N }, () => wall(['-e', '0']).ms));
  console.log(`\nnode ${process.version}, N=${N}, \`node -e 0\` median ${baseline.toFixed(1)} ms (wall)\n`);
  console.log(
    'function  asset      loaded JS  reducer-rt           import(ms)  cpu(ms)  over -e 0 (target<=100)  first call(ms)  note',
  );
  for (const f of functions) {
    const module = join(f.dir, 'index.mjs');
    const env = { ...baseEnv, BENCH_MODULE: module, BENCH_EVENT: JSON.stringify(EVENTS[f.name] ?? {}) };
    const runs = Array.from({ length: N }, () => {
      const { ms, r } = wall(['--input-type=module', '-e', CHILD], env);
      const line = r.stdout.trim().split('\n').at(-1) ?? '';
      try {
        return {
          wallMs: ms,
          ...(JSON.parse(line) as {
            importMs: number;
            importCpuMs: number;
            callMs: number;
            error: string | null;
          }),
        };
      } catch {
        const error = r.stderr.trim().slice(-120);
        return { wallMs: ms, importMs: Number.NaN, importCpuMs: Number.NaN, callMs: Number.NaN, error };
      }
    });
    const importMs = median(runs.map((r) => r.importMs));
    // Start-up of the process with the import, over a bare `node -e 0` (both wall clock).
    const importWall = median(runs.map((r) => r.wallMs - r.callMs));
    const over = importWall - baseline;
    const reducer = REDUCER_FILES.some((x) => existsSync(join(f.dir, x)));
    const reducerTarget = ['step', 'sweeper', 'control'].includes(f.name)
      ? 'yes (runs reducers)'
      : reducer
        ? 'NOT MET'
        : 'no (met)';
    console.log(
      [
        f.name.padEnd(9),
        mb(dirSize(f.dir)).padEnd(10),
        mb(loadedAtImport(f.dir)).padEnd(10),
        reducerTarget.padEnd(20),
        importMs.toFixed(1).padEnd(11),
        median(runs.map((r) => r.importCpuMs))
          .toFixed(1)
          .padEnd(8),
        `${over.toFixed(1)} ${over <= TARGET_MS ? 'met' : 'NOT MET'}`.padEnd(24),
        median(runs.map((r) => r.callMs))
          .toFixed(1)
          .padEnd(15),
        runs.find((r) => r.error)?.error ?? '',
      ].join(' '),
    );
  }
} finally {
  await services.stop();
}
