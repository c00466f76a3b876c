/**
 * A stop is honoured up to the last moment, through the HTTP API on DynamoDB
 * Local and fauxqs: a stop that commits after a non-interruptible operation's start commit and
 * before its dispatch (a latch at the `before_dispatch` fault point posts it) cancels the
 * operation instead of running it. The tool is never called, the run ends stopped, the log says
 * the operation was cancelled before dispatch, and no tool call is counted. Bob, who may not
 * see alice's run, cannot stop it. docs/contracts/run-lifecycle.md, "Controls" (stop).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, RunRecord } from '../../lib/contracts/index.ts';
import { anyOf, bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime } from '../support/local-runtime.ts';
import { respond, unchanged } from '../support/reducers.ts';

let runtime: Runtime;
let app: HttpApp;
/** Calls of the `charge` tool that reached its handler, by run id. */
const calls = new Map<string, number>();
/** Runs whose latch posts a stop (as `who`) at before_dispatch, and the answers it got. */
const stopAt = new Map<string, { who: 'alice' | 'bob'; answers: number[] }>();
/** Runs that reached the before_dispatch point. */
const reached = new Set<string>();

/** Calls the non-interruptible, mutating `charge` once, then completes. */
function chargeOnce(raw: Record<string, unknown>) {
  const req = raw as { state: { seen: number } | null; state_rev: number; event: RunEvent };
  const seen = req.state?.seen ?? 0;
  if (req.event.seq <= seen) return unchanged(req);
  const next = { seen: req.event.seq };
  if (req.event.kind === 'run_started') {
    const call = {
      kind: 'call_tool',
      tool: 'charge',
      args: {},
      mutating: true,
      replay_safe: false,
      interruptible: false,
    };
    return respond(req, next, [call]);
  }
  if (req.event.kind === 'tool_result')
    return respond(req, next, [{ kind: 'complete', outcome: 'succeeded', summary: 'charged' }]);
  return respond(req, next, []);
}

async function send(who: 'alice' | 'bob', method: string, path: string, body?: unknown) {
  return app.request(path, {
    method,
    headers: { authorization: `Bearer tok-${who}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

beforeAll(async () => {
  ({ runtime } = await localRuntime('stop-before-dispatch', {
    heartbeatMs: 60_000,
    reducers: inProcessReducers({ '/r/charge': chargeOnce }),
    async faults(point, runId) {
      if (point !== 'before_dispatch') return;
      reached.add(runId);
      const latch = stopAt.get(runId);
      if (latch === undefined) return;
      const ack = await send(latch.who, 'POST', `/runs/${runId}/controls`, {
        control_id: `halt-${latch.who}`,
        command: 'stop',
      });
      latch.answers.push(ack.status);
    },
    registerTools(registry) {
      registry.register({
        name: 'charge',
        version: '1.0.0',
        input_schema: { type: 'object' },
        handler: {
          kind: 'module',
          fn: async (_args, ctx) => {
            calls.set(ctx.run_id, (calls.get(ctx.run_id) ?? 0) + 1);
            return { charged: true };
          },
        },
        metadata: { mutating: true, replay_safe: false },
      });
    },
  }));
  const auth = (['alice', 'bob'] as const).map((who) =>
    bearerTokenAuth(`tok-${who}`, { kind: 'user', id: who }),
  );
  app = createHttpApp({ ...runtime, auth: anyOf(...auth), pollIntervalMs: 50, log: () => {} });
});

afterAll(() => runtime.close());

async function aliceRun(): Promise<RunRecord> {
  const response = await send('alice', 'POST', '/runs', {
    subject: uniqueSubject(),
    reducer: { function_path: '/r/charge' },
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { run: RunRecord }).run;
}

async function logOf(runId: string): Promise<RunEvent[]> {
  const response = await send('alice', 'GET', `/runs/${runId}/events`);
  return ((await response.json()) as { events: RunEvent[] }).events;
}

describe('a stop between the start commit and the dispatch', () => {
  it('cancels a non-interruptible operation not yet dispatched: the tool is never called and the run ends stopped', async () => {
    // Prepare: the latch posts alice's stop once the operation's start is committed.
    const run = await aliceRun();
    stopAt.set(run.run_id, { who: 'alice', answers: [] });

    // Act
    await runtime.engine.stepRun(run.run_id);

    // Assess
    expect(reached.has(run.run_id)).toBe(true);
    expect(stopAt.get(run.run_id)?.answers).toEqual([200]);
    expect(calls.get(run.run_id) ?? 0).toBe(0);
    const stored = (await (await send('alice', 'GET', `/runs/${run.run_id}`)).json()) as RunRecord;
    expect(stored.status).toBe('stopped');
    expect(stored.usage.tool_calls).toBe(0);
    const log = await logOf(run.run_id);
    const kinds = log.map((e) => e.kind);
    const started = kinds.indexOf('operation_started');
    const cancelled = kinds.indexOf('operation_cancelled');
    expect(started).toBeGreaterThan(0);
    expect(cancelled).toBeGreaterThan(started);
    expect(kinds.indexOf('stopped')).toBeGreaterThan(cancelled);
    expect(kinds).not.toContain('tool_result');
    expect(log[cancelled]?.data).toEqual({ acknowledged: true, before_dispatch: true });
  });

  it('runs the operation when no stop came, and when the stop was bob’s, who may not see the run', async () => {
    // Prepare
    const plain = await aliceRun();
    const probed = await aliceRun();
    stopAt.set(probed.run_id, { who: 'bob', answers: [] });

    // Act
    await runtime.engine.stepRun(plain.run_id);
    await runtime.engine.stepRun(probed.run_id);

    // Assess: both reached the look before dispatch, and both ran their call once.
    expect([reached.has(plain.run_id), reached.has(probed.run_id)]).toEqual([true, true]);
    expect(stopAt.get(probed.run_id)?.answers).toEqual([404]);
    for (const run of [plain, probed]) {
      expect(calls.get(run.run_id)).toBe(1);
      expect((await runtime.store.getRun(run.run_id))?.status).toBe('completed');
      expect((await logOf(run.run_id)).map((e) => e.kind)).not.toContain('operation_cancelled');
    }
  });
});
