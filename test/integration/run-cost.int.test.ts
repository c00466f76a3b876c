/**
 * Cost per run through the HTTP API on DynamoDB Local and fauxqs: a run's
 * view (GET /runs/{id}) carries usage.cost, its model tokens priced at its model and the AWS
 * requests the runtime made for it (metered in its own commits), and that cost grows with the
 * run's work. docs/guides/cost-per-run.md.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../lib/contracts/index.ts';
import { DEFAULT_PRICES } from '../../lib/core/prices.ts';
import { bearerTokenAuth, createHttpApp, type HttpApp } from '../../lib/http/index.ts';
import type { ModelTurnFunction } from '../../lib/models/types.ts';
import type { Runtime } from '../../lib/runtime.ts';
import { inProcessReducers, uniqueSubject } from '../support/engine.ts';
import { localRuntime, until } from '../support/local-runtime.ts';
import { modelOnce, toolLoop } from '../support/reducers.ts';

const TOKEN = 'cost-token';
let runtime: Runtime;
let app: HttpApp;

/** A model answering at once, reporting 1 000 tokens in and 200 out. */
const answering: ModelTurnFunction = async () => ({
  message: { text: 'done' },
  tool_calls: [],
  finish_reason: 'stop',
  usage: { input_tokens: 1_000, output_tokens: 200 },
});

beforeAll(async () => {
  ({ runtime } = await localRuntime('run-cost', {
    reducers: inProcessReducers({
      '/r/tools-1': toolLoop(1),
      '/r/tools-6': toolLoop(6),
      '/r/model': modelOnce(),
    }),
    // Served at the recorded model's path, which the default price tables price as GPT-4o.
    modelFunctions: { '/lib/models/recorded': answering },
    registerTools(registry) {
      registry.register({
        name: 'lookup',
        version: '1.0.0',
        input_schema: { type: 'object' },
        metadata: { mutating: false, replay_safe: true },
        handler: { kind: 'module', fn: async (args) => ({ found: args }) },
      });
    },
  }));
  app = createHttpApp({
    ...runtime,
    auth: bearerTokenAuth(TOKEN, { kind: 'user', id: 'cora' }),
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

async function view(runId: string): Promise<RunRecord> {
  const response = await send('GET', `/runs/${runId}`);
  expect(response.status).toBe(200);
  return (await response.json()) as RunRecord;
}

async function create(reducer: string, extra: Record<string, unknown> = {}): Promise<RunRecord> {
  const response = await send('POST', '/runs', {
    subject: uniqueSubject('cora'),
    reducer: { function_path: reducer },
    input: 'go',
    ...extra,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { run: RunRecord }).run;
}

/** Plays the step queue for the run until it ends, and reads its view. */
function finish(runId: string): Promise<RunRecord> {
  return until(
    async () => {
      await runtime.engine.stepRun(runId);
      return view(runId);
    },
    (r) => r.status === 'completed' || r.status === 'failed',
    20_000,
  );
}

const cost = (r: RunRecord) => r.usage.cost?.total_usd ?? -1;

describe('cost per run in the run view', () => {
  it('shows a cost from the first commit, which grows with the work the run does', async () => {
    const run = await create('/r/tools-6');
    const created = await view(run.run_id);
    expect(created.usage.cost).toMatchObject({
      currency: 'USD',
      region: 'us-east-1',
      prices_as_of: DEFAULT_PRICES.as_of,
    });
    expect(created.metered?.dynamodb_write_units).toBeGreaterThan(0);
    expect(cost(created)).toBeGreaterThan(0);

    const done = await finish(run.run_id);
    expect(done.usage.tool_calls).toBe(6);
    expect(cost(done)).toBeGreaterThan(cost(created));
    expect(done.metered?.dynamodb_write_units).toBeGreaterThan(created.metered?.dynamodb_write_units ?? 0);
    // What the runtime did for it, metered: commits, reads, the step message, the steps' work.
    expect(done.metered).toMatchObject({ sqs_requests: expect.any(Number) });
    expect(done.metered?.sqs_requests).toBeGreaterThanOrEqual(1);
    expect(done.metered?.dynamodb_read_units).toBeGreaterThan(0);
    expect(done.metered?.lambda_invocations).toBeGreaterThanOrEqual(1);
    expect(done.metered?.lambda_gb_seconds).toBeGreaterThan(0);
    expect(done.usage.cost?.aws_usd).toBe(done.usage.cost?.total_usd);
  });

  it('costs a run of six tool calls more AWS than a run of one', async () => {
    const short = await finish((await create('/r/tools-1')).run_id);
    const long = await finish((await create('/r/tools-6')).run_id);
    expect(long.metered?.dynamodb_write_units).toBeGreaterThan(short.metered?.dynamodb_write_units ?? 0);
    expect(long.usage.cost?.lines.dynamodb_write_usd).toBeGreaterThan(
      short.usage.cost?.lines.dynamodb_write_usd ?? 0,
    );
  });

  it('prices the model tokens of a run at its model: 1 000 in and 200 out at GPT-4o', async () => {
    const run = await create('/r/model', {
      executor_config: { model_turn_function: '/lib/models/recorded' },
    });
    const done = await finish(run.run_id);
    expect(done.usage).toMatchObject({ input_tokens: 1_000, output_tokens: 200 });
    expect(done.usage.cost).toMatchObject({
      model: 'gpt-4o',
      model_usd: 0.0045,
      lines: { model_input_usd: 0.0025, model_output_usd: 0.002 },
    });
    expect(done.usage.cost?.total_usd).toBeCloseTo(0.0045 + (done.usage.cost?.aws_usd ?? 0), 10);
  });
});
