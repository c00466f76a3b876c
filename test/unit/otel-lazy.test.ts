/**
 * Tracing costs nothing when it is off: with no OTLP endpoint set, loading
 * the runtime (engine, handlers' hooks) and calling a tracing hook resolves no `@opentelemetry/*`
 * module at all. A child process counts the resolutions with a module resolve hook; the same
 * child with an endpoint set proves the hook sees the SDK when it is loaded.
 */
import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tracingBannerLines } from '../../lib/local/banner.ts';
import { TracingConfigError, tracingConfigFromEnv } from '../../lib/telemetry/otel.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const CHILD = `
import { registerHooks } from 'node:module';
import { createServer } from 'node:http';
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith('@opentelemetry/')) seen.add(specifier);
    return next(specifier, context);
  },
});
const [, root, mode] = process.argv;
const server = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
if (mode === 'on') process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = 'http://127.0.0.1:' + server.address().port + '/v1/traces';
await import(new URL('lib/runtime.ts', root));
const otel = await import(new URL('lib/telemetry/otel.ts', root));
const outcome = await otel.traceStep('run-lazy', async () => ({ kind: 'busy' }));
await otel.flushTraces();
await otel.shutdownTraces();
server.close();
console.log(JSON.stringify({ seen: [...seen], outcome }));
`;

async function child(mode: 'off' | 'on'): Promise<{ seen: string[]; outcome: unknown }> {
  const env = { ...process.env };
  delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
  delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', CHILD, `${pathToFileURL(ROOT).href}/`, mode],
    { cwd: ROOT, env, timeout: 60_000 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
}

describe('tracing when no OTLP endpoint is set', () => {
  it('resolves the SDK when an endpoint is set (the check can see it)', async () => {
    const on = await child('on');
    expect(on.outcome).toEqual({ kind: 'busy' });
    expect(on.seen).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace-node']));
  });

  it('loads the runtime and runs a traced step without resolving any @opentelemetry module', async () => {
    const off = await child('off');
    expect(off.outcome).toEqual({ kind: 'busy' });
    expect(off.seen).toEqual([]);
  });
});

describe('tracingConfigFromEnv', () => {
  it('is off without an endpoint, and when the SDK or the traces exporter is disabled', () => {
    expect(tracingConfigFromEnv({})).toBeNull();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingConfigFromEnv({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(tracingConfigFromEnv({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  it('posts to the traces endpoint, else to {OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces', () => {
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      endpoint: 'http://collector:4318/v1/traces',
      captureContent: false,
      serviceName: 'agent-runs',
    });
    expect(
      tracingConfigFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/v1/traces',
        OTEL_SERVICE_NAME: 'my-agents',
        AGENT_RUNS_OTEL_CAPTURE_CONTENT: 'TRUE',
      }),
    ).toEqual({ endpoint: 'http://traces:4318/v1/traces', captureContent: true, serviceName: 'my-agents' });
  });

  it("is named on the local stack's banner only when it is on", () => {
    expect(tracingBannerLines({})).toEqual([]);
    expect(tracingBannerLines({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' })).toEqual([
      '  traces: OTLP/HTTP to http://localhost:4318/v1/traces (no payload text)',
    ]);
  });

  it('refuses a capture setting that is neither true nor false, naming the variable', () => {
    const read = () => tracingConfigFromEnv({ AGENT_RUNS_OTEL_CAPTURE_CONTENT: 'yes' });
    expect(read).toThrow(TracingConfigError);
    expect(read).toThrow(
      expect.objectContaining({
        code: 'tracing_config_invalid',
        variable: 'AGENT_RUNS_OTEL_CAPTURE_CONTENT',
      }),
    );
  });
});
