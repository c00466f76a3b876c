/**
 * A stop through the HTTP API reaches an operation in flight: an
 * interruptible one is aborted by the stop watch's status read, long before the lease heartbeat
 * (set to a minute here, so that only the watch can see the stop in time); a non-interruptible
 * one runs to its end, its result is recorded, and the run stops before the next operation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime, until } from '../support/local-runtime.ts';
import { respond, unchanged } from '../support/reducers.ts';

const TOKEN = 'stop-token';
let runtime: Runtime;
let app: HttpApp;
/** Calls of the `steady` tool that ran to their end. */
let steadyFinished = 0;
let releaseSteady: () => void = () => {};

/** Calls `tool` twice, one after the other (`interruptible` as given), then completes. */
function twoCalls(tool: string, interruptible: boolean) {
  return (raw: Record<string, unknown>) => {
    const req = raw as { state: { seen: number; n: number } | null; state_rev: number; event: RunEvent };
    const st = req.state ?? { seen: 0, n: 0 };
    if (req.event.seq <= st.seen) return unchanged(req);
    const call = { kind: 'call_tool', tool, args: {}, mutating: false, replay_safe: true, interruptible };
    const next = { seen: req.event.seq, n: st.n + 1 };
    if (req.event.kind === 'run_started') return respond(req, next, [call]);
    if (req.event.kind === 'tool_result' && st.n < 2) return respond(req, next, [call]);
    if (req.event.kind === 'tool_result')
      return respond(req, next, [{ kind: 'complete', outcome: 'succeeded', summary: 'two' }]);
    return respond(req, { ...st, seen: req.event.seq }, []);
  };
}

beforeAll(async () => {
  ({ runtime } = await localRuntime('stop-latency', {
    heartbeatMs: 60_000,
    stopPollMs: 100,
    reducers: inProcessReducers({
      '/r/slow': twoCalls('slow', true),
      '/r/steady': twoCalls('steady', false),
    }),
    registerTools(registry) {
      registry.register({
        name: 'slow',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: (_args, ctx) =>
            new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve({ aborted: true }))),
        },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 120_000 },
      });
      registry.register({
        name: 'steady',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          // Ignores the signal: finishes when the test lets it.
          fn: () =>
            new Promise((resolve) => {
              releaseSteady = () => {
                steadyFinished += 1;
                resolve({ finished: true });
              };
            }),
        },
        metadata: { mutating: false, replay_safe: true, timeout_ms: 120_000 },
      });
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'sol' }),
    pollIntervalMs: 50,
    log: () => {},
  });
});

afterAll(() => runtime.close());

function send(method: string, path: string, body?: unknown) {
  return app.request(path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}
async function start(reducer: string): Promise<{ run: RunRecord; step: Promise<unknown> }> {
  const response = await send('POST', '/runs', {
    subject: uniqueSubject('sol'),
    reducer: { function_path: reducer },
  });
  const { run } = (await response.json()) as { run: RunRecord };
  const step = runtime.engine.stepRun(run.run_id);
  await until(
    () => runtime.store.getRun(run.run_id),
    (r) => r?.operation?.started_at != null,
    10_000,
    20,
  );
  return { run, step };
}
async function events(runId: string): Promise<RunEvent[]> {
  return ((await (await send('GET', `/runs/${runId}/events`)).json()) as { events: RunEvent[] }).events;
}

describe('stop reaches an operation in flight', () => {
  it('aborts an interruptible operation through its status watch, without waiting for the lease heartbeat', async () => {
    const { run, step } = await start('/r/slow');
    const ack = await send('POST', `/runs/${run.run_id}/controls`, { control_id: 'halt', command: 'stop' });
    expect(await ack.json()).toMatchObject({ ack: 'applied' });
    // The heartbeat is a minute away: only the watch can end the operation within this wait.
    const stopped = await until(
      async () => (await (await send('GET', `/runs/${run.run_id}`)).json()) as RunRecord,
      (r) => r.status === 'stopped',
      10_000,
    );
    expect(stopped.status).toBe('stopped');
    await step;
    const kinds = (await events(run.run_id)).map((e) => e.kind);
    expect(kinds).toContain('operation_cancelled');
    expect(kinds.filter((k) => k === 'operation_started')).toHaveLength(1);
  });

  it('lets a non-interruptible operation run to its end, records its result, and stops before the next', async () => {
    const { run, step } = await start('/r/steady');
    const ack = await send('POST', `/runs/${run.run_id}/controls`, { control_id: 'halt', command: 'stop' });
    expect(await ack.json()).toMatchObject({ ack: 'applied' });
    // Several watch periods pass: the operation is not interrupted.
    await new Promise((r) => setTimeout(r, 500));
    expect((await runtime.store.getRun(run.run_id))?.status).toBe('cancelling');
    releaseSteady();
    await step;
    const stopped = (await (await send('GET', `/runs/${run.run_id}`)).json()) as RunRecord;
    expect(stopped.status).toBe('stopped');
    expect(steadyFinished).toBe(1);
    const log = await events(run.run_id);
    const result = log.find((e) => e.kind === 'tool_result');
    expect(result?.data.envelope).toMatchObject({ status: 'succeeded', payload: { finished: true } });
    expect(log.filter((e) => e.kind === 'operation_started')).toHaveLength(1);
    expect(log.some((e) => e.kind === 'operation_cancelled')).toBe(false);
  });
});
