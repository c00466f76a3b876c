/**
 * The local stack (`npm start`, lib/local/stack.ts) as a whole: its own DynamoDB Local and
 * fauxqs, the HTTP API behind the local gateway with a bearer token, runs driven to completion
 * by the SQS poller, a clean stop, and a clear error when the port is taken.
 * DESIGN section 10; issue 5 ("lib/local: npm start").
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_TURN_FUNCTION } from '../../lib/contracts/index.ts';
import { SILENT_LOG } from '../../lib/handlers/observability.ts';
import { type LocalStack, LocalStackError, startLocalStack } from '../../lib/local/stack.ts';
import { AGENT_LOOP_PATH } from '../../lib/reducers/index.ts';
import { until } from '../support/local-runtime.ts';

let stack: LocalStack;
let modelCalls = 0;

beforeAll(async () => {
  stack = await startLocalStack({
    port: 0,
    stateDir: false,
    logger: SILENT_LOG,
    sweepIntervalMs: 500,
    // The machine running the suite may be busy: do not let the 200 ms reducer limit flake this test.
    sandboxLimits: { timeoutMs: 5_000 },
    modelFunctions: {
      [DEFAULT_MODEL_TURN_FUNCTION]: async () => {
        modelCalls += 1;
        return {
          message: { text: 'all done' },
          tool_calls: [],
          finish_reason: 'stop',
          usage: { input_tokens: 12, output_tokens: 3 },
        };
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json', ...init.headers },
  });

describe('local stack', () => {
  it('is ready in under 20 s and serves /health and /openapi.json without a token', async () => {
    expect(stack.startupMs).toBeLessThan(20_000);
    expect(stack.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.visibilityTimeoutSeconds).toBe(60);

    const health = await fetch(`${stack.url}/health`);
    expect(health.status).toBe(200);
    const openapi = await fetch(`${stack.url}/openapi.json`);
    expect(openapi.status).toBe(200);
    expect(await openapi.json()).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
  });

  it('rejects a request without the token or with a wrong one', async () => {
    expect((await fetch(`${stack.url}/runs`)).status).toBe(401);
    const wrong = await fetch(`${stack.url}/runs`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ code: 'unauthenticated' });
  });

  it('completes a run created over HTTP through the step poller', async () => {
    // Act: create a task run on the default agent reducer; the scripted model answers once.
    const created = await api('/runs', {
      method: 'POST',
      body: JSON.stringify({
        subject: { workspace: 'local-stack', path: `/runs/${crypto.randomUUID()}` },
        reducer: { function_path: AGENT_LOOP_PATH },
        input: 'say done',
        context: { mode: 'task' },
      }),
    });
    expect(created.status).toBe(201);
    const { run } = (await created.json()) as { run: { run_id: string } };

    // Assess: the poller steps it to completion with the model's answer as the summary.
    const done = await until(
      async () => (await (await api(`/runs/${run.run_id}`)).json()) as { status: string; summary?: string },
      (r) => r.status === 'completed',
      20_000,
    );
    expect(done.summary).toBe('all done');
    expect(modelCalls).toBeGreaterThanOrEqual(1);
    // The handler returns after the commit; the poller then deletes the message it processed.
    await until(
      async () => stack.poller.stats.deleted,
      (n) => n >= 1,
      5_000,
    );
    expect(stack.metrics.totals.Steps).toBeGreaterThanOrEqual(1);
  });

  it('fails fast with port_in_use when the HTTP port is taken, before starting any service', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const started = performance.now();
      const error = await startLocalStack({ port, stateDir: false, logger: SILENT_LOG }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LocalStackError);
      expect(error).toMatchObject({ code: 'port_in_use' });
      expect((error as Error).message).toContain(`port ${port} is already in use`);
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});

describe('local stack shutdown', () => {
  it('stops cleanly: the port is closed and a second stop is a no-op', async () => {
    const own = await startLocalStack({ port: 0, stateDir: false, logger: SILENT_LOG });
    expect((await fetch(`${own.url}/health`)).status).toBe(200);

    await own.stop();
    await own.stop();

    await expect(fetch(`${own.url}/health`)).rejects.toThrow();
  });
});
